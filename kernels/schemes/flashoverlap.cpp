// flashoverlap: FlashOverlap (flashoverlap-paper Sec. 4; facts.md "FlashOverlap's published
// implementation"). The signalling GEMM writes its tiles in the reordered layout (tile-major in
// launch order; reduce-scatter: each group slice cut into T row-stripe parts) and bumps its wave
// group's counter; on each rank's high-priority stream a one-thread wait kernel per group spins
// until the group's tiles are all stored, then that group's contiguous slice is communicated
// (all-reduce, or reduce-scatter handing rank r its stripes). Groups are in waves of `wave_sms` x ctas_per_sm
// tiles (on virtual ranks the rank's whole partition: copies take no SMs).
#include <stdexcept>
#include <string>

#include "kernels/common/check.hpp"
#include "kernels/gemm/signal_gemm.hpp"
#include "kernels/ops/ops.hpp"
#include "kernels/schemes/gemm_run.hpp"

namespace overlap::cuda {
namespace {

struct FoState {
  std::vector<int> ends;                           // host copy of the group ends (launch slots)
  DeviceBuffer<int> ends_dev;
  std::vector<DeviceBuffer<unsigned int>> counters;  // per rank, one per group
  DeviceBuffer<int> slot_of_tile;                    // for the reorder-aware RMSNorm
};

}  // namespace

void setup_flashoverlap(GemmRun& run, const std::vector<int>& groups, int wave_sms, int ctas_per_sm) {
  if (ctas_per_sm != kRunnerGemmCtasPerSm) {
    throw std::invalid_argument("flashoverlap: params.ctas_per_sm " + std::to_string(ctas_per_sm) + " is not the runner's " +
                                std::to_string(kRunnerGemmCtasPerSm) + " (the virtual profile's gemm_ctas_per_sm)");
  }
  const int wave_tiles = wave_sms * ctas_per_sm;
  const int T = run.T;
  const std::int64_t m = run.m, n = run.n;
  const std::string prim = run.cfg.primitive;
  if (prim == "all_gather") throw std::invalid_argument("flashoverlap communicates after the GEMM (all_reduce, reduce_scatter)");
  const TileOrder order{static_cast<int>(m / kSignalTile), static_cast<int>(n / kSignalTile), 1};
  auto st = std::make_shared<FoState>();
  st->ends = group_ends(groups, wave_tiles, order.tiles());
  st->ends_dev = DeviceBuffer<int>(st->ends.size());
  CUDA_CHECK(cudaMemcpy(st->ends_dev.get(), st->ends.data(), st->ends.size() * sizeof(int), cudaMemcpyHostToDevice));
  st->counters.resize(static_cast<std::size_t>(T));
  const bool rs = prim == "reduce_scatter";
  const int sub = kSignalTile / T;
  if (rs && kSignalTile % T != 0) throw std::invalid_argument("flashoverlap reduce-scatter: ranks must divide 128");
  for (int r : run.node.local_ranks()) {
    auto& c = st->counters[static_cast<std::size_t>(r)];
    c = DeviceBuffer<unsigned int>(groups.size());
    CUDA_CHECK(cudaMemset(c.get(), 0, c.bytes()));
    auto& L = run.layout[static_cast<std::size_t>(r)];
    for (int s = 0; s < order.tiles(); ++s) {
      int tm = 0, tn = 0;
      order.tile_of(s, &tm, &tn);
      if (rs) {
        L.push_back({tm * kSignalTile + r * sub, tn * kSignalTile, sub, kSignalTile});
      } else {
        L.push_back({tm * kSignalTile, tn * kSignalTile, kSignalTile, kSignalTile});
      }
    }
  }
  if (!rs) {
    // The RMSNorm after the all-reduce reads the reordered output through the tile map (paper Sec.
    // 4.3): checked against the row-major RMSNorm of the reference.
    const auto map = order.slot_of_tile();
    st->slot_of_tile = DeviceBuffer<int>(map.size());
    CUDA_CHECK(cudaMemcpy(st->slot_of_tile.get(), map.data(), map.size() * sizeof(int), cudaMemcpyHostToDevice));
    run.extra_check = [&run, st, m, n]() {
      cudaStream_t s = run.root();
      const int r = run.node.local_ranks().front();
      const std::size_t elems = static_cast<std::size_t>(m * n);
      DeviceBuffer<__nv_bfloat16> weight(n), ref_bf16(elems), ref_norm(elems), norm(elems);
      DeviceBuffer<float> ref_norm_f32(elems);
      fill_random_bf16(weight.get(), weight.size(), 999, 1.0f, s);
      f32_to_bf16(ref_bf16.get(), run.reference(r), elems, s);
      rmsnorm_rowmajor(ref_norm.get(), ref_bf16.get(), weight.get(), m, n, 1e-6f, s);
      bf16_to_f32(ref_norm_f32.get(), ref_norm.get(), elems, s);
      rmsnorm_reordered(norm.get(), run.out[static_cast<std::size_t>(r)].get(), st->slot_of_tile.get(), weight.get(), m, n, 1e-6f, s);
      return relative_error(norm.get(), ref_norm_f32.get(), elems, s);
    };
  }
  std::string g;
  for (int x : groups) g += (g.empty() ? "" : ",") + std::to_string(x);
  run.what = "signalling GEMM, wave groups [" + g + "] of " + std::to_string(wave_tiles) + " tiles per wave, per-group " + prim;
  run.enqueue = [&run, st, T, m, n, rs, order](bool skip) {
    Node& nd = run.node;
    const int G = static_cast<int>(st->ends.size());
    for (int r : nd.local_ranks()) {
      SignalGemmArgs a;
      a.a = run.a[r].get();
      a.b = run.b[r].get();
      a.d = run.c[r].get();
      a.m = static_cast<int>(m);
      a.n = static_cast<int>(n);
      a.k = static_cast<int>(run.k);
      a.layout = rs ? GemmLayout::tile_major_rs : GemmLayout::tile_major;
      a.group_end = st->ends_dev.get();
      a.groups = G;
      a.rs_parts = T;
      a.counters = st->counters[static_cast<std::size_t>(r)].get();
      a.ctas_per_sm = kRunnerGemmCtasPerSm;
      nd.activate(r);
      signal_gemm(a, nd.streams(r).compute[0]);
    }
    for (int g = 0; g < G; ++g) {
      const int first = g == 0 ? 0 : st->ends[static_cast<std::size_t>(g - 1)];
      const int tiles = st->ends[static_cast<std::size_t>(g)] - first;
      for (int r : nd.local_ranks()) {
        nd.activate(r);
        wait_counter(st->counters[static_cast<std::size_t>(r)].get() + g, static_cast<unsigned int>(tiles), nd.streams(r).comm);
      }
      if (skip) continue;
      const std::size_t base = static_cast<std::size_t>(first) * kSignalTile * kSignalTile;
      const std::size_t elems = static_cast<std::size_t>(tiles) * kSignalTile * kSignalTile;
      nd.collective(rs ? Node::Collective::reduce_scatter : Node::Collective::all_reduce,
                    const_ptrs(run, [&](int r) { return run.c[r].get() + base; }),
                    ptrs(run, [&](int r) { return run.out[r].get() + (rs ? base / T : base); }), elems,
                    stream_ptrs(run, [&](int r) { return nd.streams(r).comm; }));
    }
    (void)order;
  };
}

}  // namespace overlap::cuda
