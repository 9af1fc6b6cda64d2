// async_tp: PyTorch's asynchronous tensor parallelism (async-tp-illustrated, "Looped
// CollectiveEinsum"): the collective decomposed into T steps of copy-engine pulls (no SMs) on two
// alternating copy streams, each step's sub-matmul overlapping the next step's transfer, on 1 or 2
// compute streams (2: consecutive sub-matmuls fill each other's partial waves).
//   all_gather + matmul: at step s rank r multiplies shard (r + s) mod T while pulling the next one.
//   matmul + reduce_scatter: accumulators rotate around the ring (the blog's steps 1-5): at step s
//   rank r computes its partial of chunk (r - s - 1) mod T and adds it to the accumulator that
//   arrives from rank r - 1; after T steps the accumulator on rank r holds chunk r of the sum.
#include <stdexcept>
#include <string>

#include "kernels/ops/ops.hpp"
#include "kernels/schemes/gemm_run.hpp"
#include "kernels/schemes/step_pairs.hpp"

namespace overlap::cuda {

void setup_async_tp(GemmRun& run, int streams) {
  const int T = run.T;
  const std::int64_t m = run.m, n = run.n, k = run.k, mc = m / T;
  const std::string prim = run.cfg.primitive;
  if (streams != 1 && streams != 2) throw std::invalid_argument("async_tp: streams must be 1 or 2");
  if (prim == "all_reduce") throw std::invalid_argument("async_tp decomposes all_gather or reduce_scatter");
  for (int r : run.node.local_ranks()) {
    run.layout[static_cast<std::size_t>(r)] = {prim == "reduce_scatter" ? rows_piece(r * mc, mc, n) : rows_piece(0, m, n)};
    if (prim == "reduce_scatter") {
      for (int s = 0; s < T; ++s) {
        run.scratch(r, "partial" + std::to_string(s), mc * n);
        run.scratch(r, "acc" + std::to_string(s), mc * n);
        run.scratch(r, "recv" + std::to_string(s), mc * n);
      }
    }
  }
  run.what = std::string(prim == "all_gather" ? "all-gather" : "reduce-scatter (accumulator passing)") +
             ", copy-engine pulls on 2 alternating streams, " + std::to_string(streams) + " compute stream(s)";
  run.enqueue = [&run, T, m, n, k, mc, prim, streams](bool skip) {
    Node& nd = run.node;
    if (prim == "all_gather") {
      const std::size_t shard_bytes = static_cast<std::size_t>(mc * k) * sizeof(__nv_bfloat16);
      for (int s = 0; s < T; ++s) {
        // Step s's pulls that touch this process's ranks: rank r pulls shard (r + s) mod T.
        std::vector<Transfer> xs;
        const auto local = [&](int q) { return run.is_local(q); };
        for (const StepPair& pr : skip ? std::vector<StepPair>{} : touching(async_tp_pairs(true, T, s), local)) {
          const int j = pr.src, r = pr.dst;
          Transfer x;
          x.src = j;
          x.dst = r;
          x.src_ptr = run.on_rank(j, shard_bytes, [&](int q) { return run.a_shard[q].get(); });
          x.dst_ptr = run.is_local(r) ? run.a[r].get() + j * mc * k : nullptr;
          x.bytes = shard_bytes;
          x.src_ready = run.is_local(j) ? nd.streams(j).comm : nullptr;
          xs.push_back(x);
        }
        if (!skip && s > 0) nd.transfer(xs, s & 1);
        for (int r : nd.local_ranks()) {
          const int j = (r + s) % T;
          cudaStream_t cs = nd.streams(r).compute[s % streams];
          if (s > 0 && !skip) nd.order(cs, r, nd.done_on(r, s & 1));
          const __nv_bfloat16* a_rows = s == 0 ? run.a_shard[r].get() : run.a[r].get() + j * mc * k;
          gemm_rows(run, r, cs, a_rows, run.out[r].get() + j * mc * n, mc);
        }
      }
      return;
    }
    // reduce_scatter: where each rank's accumulator of step s was produced.
    std::vector<cudaStream_t> produced(static_cast<std::size_t>(T), nullptr);
    const std::size_t acc_bytes = static_cast<std::size_t>(mc * n) * sizeof(__nv_bfloat16);
    for (int s = 0; s < T; ++s) {
      if (s > 0 && !skip) {
        // Rank r pulls the accumulator of step s - 1 from rank r - 1 (the transfers touching this
        // process's ranks).
        std::vector<Transfer> xs;
        for (const StepPair& pr : touching(async_tp_pairs(false, T, s), [&](int q) { return run.is_local(q); })) {
          const int prev = pr.src, r = pr.dst;
          Transfer x;
          x.src = prev;
          x.dst = r;
          x.src_ptr = run.on_rank(prev, acc_bytes, [&](int q) { return run.scratch(q, "acc" + std::to_string(s - 1), mc * n); });
          x.dst_ptr = run.is_local(r) ? run.scratch(r, "recv" + std::to_string(s), mc * n) : nullptr;
          x.bytes = acc_bytes;
          x.src_ready = run.is_local(prev) ? produced[static_cast<std::size_t>(prev)] : nullptr;
          xs.push_back(x);
        }
        nd.transfer(xs, s & 1);
      }
      std::vector<cudaStream_t> now(static_cast<std::size_t>(T), nullptr);
      for (int r : nd.local_ranks()) {
        const int chunk = ((r - s - 1) % T + T) % T;
        cudaStream_t cs = nd.streams(r).compute[s % streams];
        __nv_bfloat16* partial = run.scratch(r, "partial" + std::to_string(s), mc * n);
        __nv_bfloat16* acc = s == T - 1 ? run.out[r].get() : run.scratch(r, "acc" + std::to_string(s), mc * n);
        if (s == 0) {
          gemm_rows(run, r, cs, run.a[r].get() + chunk * mc * k, acc, mc);
        } else {
          gemm_rows(run, r, cs, run.a[r].get() + chunk * mc * k, partial, mc);
          if (!skip) nd.order(cs, r, nd.done_on(r, s & 1));
          PtrList in;
          in.add(partial);
          in.add(run.scratch(r, "recv" + std::to_string(s), mc * n));
          nd.activate(r);
          sum_bf16(acc, in, static_cast<std::size_t>(mc * n), cs);
        }
        now[static_cast<std::size_t>(r)] = cs;
      }
      produced = now;
    }
  };
}

}  // namespace overlap::cuda
