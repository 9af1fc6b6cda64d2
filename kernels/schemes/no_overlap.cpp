// no_overlap: the GEMM, then its collective (all-gather: the collective, then the GEMM), one after
// the other: the baseline of every source (flashoverlap-paper Sec. 6, commfuse-paper Sec. 5).
#include "kernels/schemes/gemm_run.hpp"

namespace overlap::cuda {

void setup_no_overlap(GemmRun& run) {
  const int T = run.T;
  const std::int64_t m = run.m, n = run.n, k = run.k, shard = m / T;
  const std::string prim = run.cfg.primitive;
  for (int r : run.node.local_ranks()) {
    run.layout[static_cast<std::size_t>(r)] = {prim == "reduce_scatter" ? rows_piece(r * shard, shard, n) : rows_piece(0, m, n)};
  }
  run.what = "GEMM then " + prim + " (" + std::string(run.node.is_virtual() ? "copy-engine direct collective" : "NCCL") + ")";
  run.enqueue = [&run, T, m, n, k, prim](bool skip) {
    Node& nd = run.node;
    auto compute = stream_ptrs(run, [&](int r) { return nd.streams(r).compute[0]; });
    if (prim == "all_gather") {
      if (!skip) {
        nd.collective(Node::Collective::all_gather, const_ptrs(run, [&](int r) { return run.a_shard[r].get(); }),
                      ptrs(run, [&](int r) { return run.a[r].get(); }), m * k,
                      stream_ptrs(run, [&](int r) { return nd.streams(r).comm; }));
      }
      for (int r : nd.local_ranks()) {
        nd.order(compute[r], r, nd.streams(r).comm);
        gemm_rows(run, r, compute[r], run.a[r].get(), run.out[r].get(), m);
      }
      return;
    }
    for (int r : nd.local_ranks()) gemm_rows(run, r, compute[r], run.a[r].get(), run.c[r].get(), m);
    if (skip) return;
    nd.collective(prim == "all_reduce" ? Node::Collective::all_reduce : Node::Collective::reduce_scatter,
                  const_ptrs(run, [&](int r) { return run.c[r].get(); }), ptrs(run, [&](int r) { return run.out[r].get(); }),
                  m * n, compute);
    (void)T;
  };
}

}  // namespace overlap::cuda
