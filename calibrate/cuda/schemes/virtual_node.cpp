#include "calibrate/cuda/schemes/bench_schemes.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <set>
#include <tuple>

#include "calibrate/core/calibration_plan.hpp"
#include "calibrate/core/statistics.hpp"
#include "kernels/common/check.hpp"
#include "kernels/common/host_profile.hpp"
#include "kernels/common/timing.hpp"
#include "kernels/gemm/signal_gemm.hpp"
#include "kernels/ops/ops.hpp"
#include "kernels/schemes/run_spec.hpp"

namespace overlap::calibrate {
namespace {

using nlohmann::json;
using Bf16Buffers = std::vector<cuda::DeviceBuffer<__nv_bfloat16>>;

// The per-rank GEMM shapes a run computes (full and sliced), for the virtual profile's gemm_profiles.
std::vector<std::int64_t> gemm_rows_of(const SchemeRunConfig& c) {
  const std::int64_t T = c.ranks;
  std::set<std::int64_t> rows = {c.m};
  if (c.scheme == "data_slicing") rows.insert(c.m / run_param(c, sim::knobs::kDataSlicingChunks));
  if (c.scheme == "async_tp") rows.insert(c.m / T);
  if (c.scheme == "commfuse") rows.insert(c.m / T / run_param(c, sim::knobs::kCommFuseM));
  return {rows.begin(), rows.end()};
}

// GEMMs on rank 0's partition and on every partition at once.
void measure_gemms(Driver& d, cuda::Node& node, const std::vector<SchemeRunConfig>& runs, cudaStream_t root, int reps) {
  const int T = node.ranks();
  auto& r0 = node.streams(0);
  // GEMMs on rank 0's partition, with the kernel every scheme uses (cuda::kRunnerGemmCtasPerSm CTAs per
  // SM, 128x128 tiles).
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t>> shapes;
  for (const auto& c : runs) {
    if (c.kind != sim::WorkloadKind::gemm_collective) continue;
    for (auto rows : gemm_rows_of(c)) shapes.insert({rows, c.n, c.k});
  }
  // The largest GEMM on every partition at once, each rank with its own A, B and C as in the
  // schemes: what the ranks' GEMMs cost one another on the GPU they share (validated, not fitted).
  // With one shared A and B the four 32-SM GEMMs took 1.06x alone; the schemes' compute-only runs,
  // with operands per rank, 1.35x: the L2 capacity, not its bandwidth, is what they share. The same
  // GEMM with a quarter of the columns puts each rank's B within its share of the L2 (4 ranks:
  // 8 MB of 12.5 MB), the case the L2 model says costs nothing extra (timed alone too, below).
  std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> concurrent;
  if (!shapes.empty()) {
    const auto [m, n, k] = *std::max_element(shapes.begin(), shapes.end(), [](const auto& x, const auto& y) {
      return std::get<0>(x) * std::get<1>(x) * std::get<2>(x) < std::get<0>(y) * std::get<1>(y) * std::get<2>(y);
    });
    concurrent.push_back({m, n, k});
    if (n % (4 * cuda::kSignalTile) == 0) {
      concurrent.push_back({m, n / 4, k});
      shapes.insert({m, n / 4, k});
    }
  }
  const GemmConfig tile = gemm_tile_shape(node.rank_sms(), 8192);
  std::size_t amax = tile.m * tile.k, bmax = tile.k * tile.n, cmax = tile.m * tile.n;
  for (auto [m, n, k] : shapes) {
    amax = std::max<std::size_t>(amax, m * k);
    bmax = std::max<std::size_t>(bmax, k * n);
    cmax = std::max<std::size_t>(cmax, m * n);
  }
  cuda::DeviceBuffer<__nv_bfloat16> a(amax), b(bmax), c(cmax);
  cuda::fill_random_bf16(a.get(), a.size(), 5, 1.0f, root);
  cuda::fill_random_bf16(b.get(), b.size(), 6, 1.0f, root);
  CUDA_CHECK(cudaStreamSynchronize(root));
  auto time_gemm = [&](const char* benchmark, std::int64_t m, std::int64_t n, std::int64_t k) {
    cuda::SignalGemmArgs g;
    g.a = a.get();
    g.b = b.get();
    g.d = c.get();
    g.m = static_cast<int>(m);
    g.n = static_cast<int>(n);
    g.k = static_cast<int>(k);
    g.ctas_per_sm = cuda::kRunnerGemmCtasPerSm;
    node.activate(0);
    auto v = cuda::time_on_stream_us(r0.compute[0], 3, reps, [&] { cuda::signal_gemm(g, r0.compute[0]); });
    make_primary_current();
    d.record(benchmark, {{"m", m}, {"n", n}, {"k", k}, {"dtype", "bf16"}}, v,
             {{"tile_m", cuda::kSignalTile}, {"tile_n", cuda::kSignalTile}, {"kernel", "signal_gemm"},
              {"ctas_per_sm", cuda::kRunnerGemmCtasPerSm}});
  };
  for (auto [m, n, k] : shapes) time_gemm(bench::gemm, m, n, k);
  time_gemm(bench::gemm_tile, tile.m, tile.n, tile.k);
  for (const auto& [m, n, k] : concurrent) {
    std::vector<cuda::DeviceBuffer<__nv_bfloat16>> as, bs, cs;
    for (int r = 0; r < T; ++r) {
      as.emplace_back(static_cast<std::size_t>(m * k));
      bs.emplace_back(static_cast<std::size_t>(k * n));
      cs.emplace_back(static_cast<std::size_t>(m * n));
      cuda::fill_random_bf16(as.back().get(), as.back().size(), 50 + r, 1.0f, root);
      cuda::fill_random_bf16(bs.back().get(), bs.back().size(), 70 + r, 1.0f, root);
    }
    CUDA_CHECK(cudaStreamSynchronize(root));
    auto v = time_on_node(node, root, 3, reps, [&] {
      for (int r = 0; r < T; ++r) {
        cuda::SignalGemmArgs g;
        g.a = as[static_cast<std::size_t>(r)].get();
        g.b = bs[static_cast<std::size_t>(r)].get();
        g.d = cs[static_cast<std::size_t>(r)].get();
        g.m = static_cast<int>(m);
        g.n = static_cast<int>(n);
        g.k = static_cast<int>(k);
        g.ctas_per_sm = cuda::kRunnerGemmCtasPerSm;
        node.activate(r);
        cuda::signal_gemm(g, node.streams(r).compute[0]);
      }
    });
    d.record(bench::gemm_concurrent, {{"m", m}, {"n", n}, {"k", k}, {"dtype", "bf16"}, {"ranks", T}}, v,
             {{"tile_m", cuda::kSignalTile}, {"tile_n", cuda::kSignalTile}, {"kernel", "signal_gemm"},
              {"ctas_per_sm", cuda::kRunnerGemmCtasPerSm}, {"operands", "one A, B, C per rank"}});
  }
}

void measure_transfers(Driver& d, cuda::Node& node, const std::string& link, cudaStream_t root, int reps) {
  // Rank-to-rank pulls (rank 1 -> rank 0) over the transfer sizes up to 256 MiB.
  cuda::DeviceBuffer<unsigned char> src(256u << 20), dst(256u << 20);
  CUDA_CHECK(cudaMemsetAsync(src.get(), 7, src.bytes(), root));
  for (std::int64_t s : transfer_sizes()) {
    if (s > (256LL << 20)) break;
    cuda::Transfer x;
    x.src = 1;
    x.dst = 0;
    x.src_ptr = src.get();
    x.dst_ptr = dst.get();
    x.bytes = static_cast<std::size_t>(s);
    x.src_ready = node.streams(1).comm;
    // Queued behind a sleep, like the collectives: the GPU's time alone. Timed with the host in the
    // loop, a small pull takes the node's fork and join over every rank's streams: 13 us on two
    // ranks, 50 us on four, where the copy takes 7.
    QueuedTiming t = time_queued(node, root, reps, [&] { node.transfer({x}, 0); });
    t.derived["gbps"] = s / median_of(t.samples) / 1e3;
    d.record(bench::transfer, {{"path", "copy_engine." + link}, {"bytes", s}}, t.samples, t.derived);
  }
}

void measure_collectives(Driver& d, cuda::Node& node, Bf16Buffers& in, Bf16Buffers& out, cudaStream_t root, int reps) {
  const int T = node.ranks();
  // The node's own collectives (what no_overlap, data slicing and FlashOverlap call).
  for (auto kind : {cuda::Node::Collective::all_reduce, cuda::Node::Collective::reduce_scatter, cuda::Node::Collective::all_gather}) {
    const char* name = kind == cuda::Node::Collective::all_reduce ? "all_reduce" : kind == cuda::Node::Collective::reduce_scatter ? "reduce_scatter" : "all_gather";
    for (std::int64_t s : transfer_sizes()) {
      if (s < (64 << 10) || s > (256LL << 20) || (s / 2) % T != 0) continue;
      std::vector<const __nv_bfloat16*> ip;
      std::vector<__nv_bfloat16*> op;
      std::vector<cudaStream_t> ready;
      for (int r = 0; r < T; ++r) {
        ip.push_back(in[r].get());
        op.push_back(out[r].get());
        ready.push_back(node.streams(r).comm);
      }
      // Timed with the host enqueue and the GPU together, then queued behind a sleep (the GPU's
      // time alone: the curve) with the host's enqueue time per call (launch.collective_host_us).
      const QueuedTiming t = time_queued(node, root, reps, [&] { node.collective(kind, ip, op, static_cast<std::size_t>(s / 2), ready); },
                                         [] { cuda::host_profile::reset(); });
      if (cuda::host_profile::enabled_in_env()) {
        std::fprintf(stderr, "  %s %lld B queued: host %.1f us per call: %s\n", name, static_cast<long long>(s),
                     t.derived["host_enqueue_us"].get<double>(), cuda::host_profile::report_and_reset(2 + reps).c_str());
      }
      d.record(bench::collective, {{"primitive", name}, {"bytes", s}, {"ranks", T}, {"implementation", "virtual direct, copy engine"}},
               t.samples, t.derived);
    }
  }
}

void measure_launch_in_stream(Driver& d, cuda::Node& node, Bf16Buffers& in, Bf16Buffers& out, int reps) {
  const int T = node.ranks();
  // Host cost inside a stream of work, the way a decode step pays it: kIter iterations back to back,
  // the GPU running what came before, of [every rank launches a small kernel with arguments (the
  // sum of two 64 KiB vectors)], alone and then each followed by one collective of 64 KiB. The
  // per-launch cost is what launch.host_us means for the kernels schemes launch (an empty kernel
  // issued in a tight loop, host_launch below, costs the host less); the difference with the
  // collective is its per-call cost (launch.collective_host_us_by_primitive).
  {
    constexpr int kIter = 16;
    constexpr std::size_t kElems = 32768;
    std::vector<cuda::DeviceBuffer<__nv_bfloat16>> small;
    std::vector<const __nv_bfloat16*> ip;
    std::vector<__nv_bfloat16*> op;
    std::vector<cudaStream_t> ready;
    for (int r = 0; r < T; ++r) {
      small.emplace_back(kElems);
      ip.push_back(in[r].get());
      op.push_back(out[r].get());
      ready.push_back(node.streams(r).compute[0]);
    }
    auto sync_all = [&] {
      for (int r = 0; r < T; ++r) {
        for (cudaStream_t x : node.streams(r).all()) CUDA_CHECK(cudaStreamSynchronize(x));
      }
    };
    // Host us per iteration, one sample per repetition.
    auto sequence = [&](const std::function<void()>& after) {
      std::vector<double> us;
      for (int rep = 0; rep < 2 + reps; ++rep) {
        sync_all();
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < kIter; ++i) {
          for (int r = 0; r < T; ++r) {
            node.activate(r);
            cuda::PtrList two;
            two.add(in[r].get());
            two.add(in[r].get() + kElems);
            cuda::sum_bf16(small[r].get(), two, kElems, ready[r]);
          }
          if (after) after();
        }
        const auto t1 = std::chrono::steady_clock::now();
        if (rep >= 2) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kIter);
      }
      sync_all();
      make_primary_current();
      return us;
    };
    const auto launches = sequence(nullptr);
    const double launches_us = median_of(launches);
    std::vector<double> per_launch;
    for (double v : launches) per_launch.push_back(v / T);
    d.record(bench::launch, {{"what", "launch_in_stream"}, {"iterations", kIter}, {"round_robin_ranks", T}},
             per_launch, {{"kernel", "sum of two bf16 vectors, 64 KiB"}});
    for (auto kind : {cuda::Node::Collective::all_reduce, cuda::Node::Collective::reduce_scatter, cuda::Node::Collective::all_gather}) {
      const char* name = kind == cuda::Node::Collective::all_reduce ? "all_reduce" : kind == cuda::Node::Collective::reduce_scatter ? "reduce_scatter" : "all_gather";
      auto v = sequence([&] { node.collective(kind, ip, op, kElems, ready); });
      for (double& x : v) x -= launches_us;
      d.record(bench::launch,
               {{"what", "collective_in_stream"}, {"primitive", name}, {"ranks", T}, {"bytes", 2 * kElems}, {"iterations", kIter}},
               v, {{"per_iteration_without_us", launches_us}});
    }
  }
}

void measure_launch_gaps(Driver& d, cuda::Node& node) {
  const int T = node.ranks();
  auto& r0 = node.streams(0);
  // Launch gaps on one partition.
  {
    node.activate(0);
    cudaStream_t s = r0.compute[0];
    constexpr int kChain = 500;
    d.record(bench::launch, {{"what", "host_launch_one_context"}, {"calls", kChain}},
             cuda::time_host_calls_us(s, 50, 10, kChain, [&] { cuda::empty_kernel(s); }));
    // The profile's launch.host_us: launches round-robin over the ranks, each behind the switch to
    // its rank's green context, as the runner issues every scheme (one thread, rank after rank).
    int next = 0;
    d.record(bench::launch, {{"what", "host_launch"}, {"calls", kChain}, {"round_robin_ranks", T}},
             cuda::time_host_calls_us(s, 50, 10, kChain, [&] {
               const int r = next++ % T;
               node.activate(r);
               cuda::empty_kernel(node.streams(r).compute[0]);
             }));
    for (int r = 0; r < T; ++r) CUDA_CHECK(cudaStreamSynchronize(node.streams(r).compute[0]));
    // The profile's launch.sync_host_us: one dependency between two of a rank's streams (an event
    // recorded on its comm stream, waited on by its compute stream), round-robin over the ranks.
    std::vector<cudaEvent_t> ev(static_cast<std::size_t>(T));
    for (int r = 0; r < T; ++r) {
      node.activate(r);
      CUDA_CHECK(cudaEventCreateWithFlags(&ev[static_cast<std::size_t>(r)], cudaEventDisableTiming));
    }
    next = 0;
    d.record(bench::launch, {{"what", "stream_dependency"}, {"calls", kChain}, {"round_robin_ranks", T}},
             cuda::time_host_calls_us(s, 50, 10, kChain, [&] {
               const int r = next++ % T;
               node.activate(r);
               CUDA_CHECK(cudaEventRecord(ev[static_cast<std::size_t>(r)], node.streams(r).comm));
               CUDA_CHECK(cudaStreamWaitEvent(node.streams(r).compute[0], ev[static_cast<std::size_t>(r)], 0));
             }));
    for (int r = 0; r < T; ++r) CUDA_CHECK(cudaStreamSynchronize(node.streams(r).compute[0]));
    for (cudaEvent_t e : ev) CUDA_CHECK(cudaEventDestroy(e));
    node.activate(0);
    constexpr int kQueued = 256;
    d.record(bench::launch,
             {{"what", "dependent_gap"}, {"kernels", kQueued}, {"queued_behind_sleep", true}},
             cuda::time_queued_gap_us(s, kQueued, 2, 10));
    make_primary_current();
  }
}

void measure_hbm(Driver& d, cuda::Node& node, cudaStream_t root, int reps) {
  const int T = node.ranks();
  // HBM streaming with every rank reading its own weights at once (the one HBM they share).
  {
    const std::int64_t cols = 8192, rows = (256LL << 20) / 2 / cols;
    std::vector<cuda::DeviceBuffer<__nv_bfloat16>> w, x, y;
    for (int r = 0; r < T; ++r) {
      w.emplace_back(rows * cols);
      x.emplace_back(cols);
      y.emplace_back(rows);
      cuda::fill_random_bf16(w.back().get(), w.back().size(), 30 + r, 1.0f, root);
      cuda::fill_random_bf16(x.back().get(), cols, 40, 1.0f, root);
    }
    CUDA_CHECK(cudaStreamSynchronize(root));
    auto v = time_on_node(node, root, 3, reps, [&] {
      for (int r = 0; r < T; ++r) {
        node.activate(r);
        cuda::gemv_bf16(y[r].get(), w[r].get(), x[r].get(), rows, cols, node.streams(r).compute[0]);
      }
    });
    const std::int64_t bytes = static_cast<std::int64_t>(T) * rows * cols * 2;
    d.record(bench::hbm_stream, {{"bytes", bytes}, {"ranks_streaming", T}}, v,
             {{"gbps", bytes / median_of(v) / 1e3}});
  }
}

}  // namespace

json measure_virtual_node(Driver& d, cuda::Node& node, const std::string& link, const std::vector<SchemeRunConfig>& runs) {
  json env = d.environment();
  env["sm_count"] = node.rank_sms();
  env["gemm_ctas_per_sm"] = cuda::kRunnerGemmCtasPerSm;
  env["virtual_ranks"] = node.ranks();
  env["virtual_link"] = link;
  env["gpu_name"] = d.environment().value("gpu_name", std::string("gpu")) + " / " + std::to_string(node.ranks()) + " virtual ranks";
  const cudaStream_t root = d.stream();
  const int reps = d.options().reps;
  measure_gemms(d, node, runs, root, reps);
  measure_transfers(d, node, link, root, reps);
  // The node's own collectives (what no_overlap, data slicing and FlashOverlap call), and the
  // same buffers for the launch costs inside a stream of work.
  const int T = node.ranks();
  std::vector<cuda::DeviceBuffer<__nv_bfloat16>> in, out;
  const std::size_t max_elems = (256u << 20) / 2;
  for (int r = 0; r < T; ++r) {
    in.emplace_back(max_elems);
    out.emplace_back(max_elems);
    cuda::fill_random_bf16(in.back().get(), max_elems, 9 + r, 1.0f, root);
  }
  CUDA_CHECK(cudaStreamSynchronize(root));
  measure_collectives(d, node, in, out, root, reps);
  measure_launch_in_stream(d, node, in, out, reps);
  measure_launch_gaps(d, node);
  measure_hbm(d, node, root, reps);
  return env;
}

}  // namespace overlap::calibrate
