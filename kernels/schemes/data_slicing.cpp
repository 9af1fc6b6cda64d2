// data_slicing: the GEMM cut into `chunks` slices along M, each slice's collective overlapping the
// next slice's GEMM (Megatron / MindSpeed CoC, commfuse-paper Sec. 2); all-gather: slice i gathered,
// then its GEMM. Reduce-scatter leaves rank r, per slice, that slice's r-th row block.
#include <stdexcept>

#include "kernels/schemes/gemm_run.hpp"

namespace overlap::cuda {

void setup_data_slicing(GemmRun& run, int chunks) {
  const int T = run.T;
  const std::int64_t m = run.m, n = run.n, k = run.k;
  if (chunks < 1 || m % (static_cast<std::int64_t>(chunks) * 128) != 0) throw std::invalid_argument("data_slicing: m must split into chunks x 128 rows");
  const std::int64_t ms = m / chunks, sub = ms / T;
  const std::string prim = run.cfg.primitive;
  if (prim != "all_reduce" && ms % (static_cast<std::int64_t>(T) * 128) != 0 && prim == "all_gather") {
    throw std::invalid_argument("data_slicing: all-gather slices must split into ranks x 128 rows");
  }
  for (int r : run.node.local_ranks()) {
    auto& L = run.layout[static_cast<std::size_t>(r)];
    for (int i = 0; i < chunks; ++i) {
      if (prim == "all_reduce") L.push_back(rows_piece(i * ms, ms, n));
      if (prim == "reduce_scatter") L.push_back(rows_piece(i * ms + r * sub, sub, n));
      if (prim == "all_gather") {
        for (int j = 0; j < T; ++j) L.push_back(rows_piece(j * (m / T) + i * sub, sub, n));
      }
    }
    if (prim == "all_gather") run.scratch(r, "gathered", m * k);
  }
  run.what = std::to_string(chunks) + " slices of " + std::to_string(ms) + " rows";
  run.enqueue = [&run, T, m, n, k, chunks, ms, sub, prim](bool skip) {
    Node& nd = run.node;
    auto compute = stream_ptrs(run, [&](int r) { return nd.streams(r).compute[0]; });
    auto comm = stream_ptrs(run, [&](int r) { return nd.streams(r).comm; });
    for (int i = 0; i < chunks; ++i) {
      if (prim == "all_gather") {
        auto g = ptrs(run, [&](int r) { return run.scratch(r, "gathered", m * k) + i * ms * k; });
        if (!skip) {
          nd.collective(Node::Collective::all_gather, const_ptrs(run, [&](int r) { return run.a_shard[r].get() + i * sub * k; }), g,
                        ms * k, comm);
        }
        for (int r : nd.local_ranks()) {
          nd.order(compute[r], r, comm[r]);
          gemm_rows(run, r, compute[r], g[r], run.out[r].get() + i * ms * n, ms);
        }
        continue;
      }
      for (int r : nd.local_ranks()) gemm_rows(run, r, compute[r], run.a[r].get() + i * ms * k, run.c[r].get() + i * ms * n, ms);
      if (skip) continue;
      const bool ar = prim == "all_reduce";
      nd.collective(ar ? Node::Collective::all_reduce : Node::Collective::reduce_scatter,
                    const_ptrs(run, [&](int r) { return run.c[r].get() + i * ms * n; }),
                    ptrs(run, [&](int r) { return run.out[r].get() + (ar ? i * ms : i * sub) * n; }), ms * n, compute);
    }
    (void)T;
  };
}

}  // namespace overlap::cuda
