// commfuse: CommFuse's fused steps (commfuse-paper Sec. 3.2, Alg. 1-2, App. A.3-A.4), in the
// simulator's own step orders (sim/schemes/commfuse_schedule.cpp, compiled into these kernels):
//   FuseRS (matmul + reduce-scatter): each step computes the partial output of one rank's slice and
//     sends it on; ring relays accumulators (a received partial is added before it is forwarded),
//     pairwise / circular send every partial straight to its owner, who sums them at the end. The
//     rank's own slice is computed last, with no communication after it.
//   FuseAG (all-gather + matmul): the local shard is computed first; each later step exchanges a
//     shard (ring: forwards the one that arrived; direct: sends its own) and computes on it.
// `m` > 1 cuts every slice into m sub-slices, each going through the whole schedule in turn.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/ops/ops.hpp"
#include "kernels/schemes/gemm_run.hpp"
#include "kernels/schemes/step_pairs.hpp"
#include "sim/schemes/commfuse_schedule.hpp"

namespace overlap::cuda {
namespace {

using sim::FuseStep;

const FuseStep* step_in_round(const std::vector<FuseStep>& order, int round) { return fuse_step_in_round(order, round); }

std::string key(const char* what, int q, int i) { return std::string(what) + std::to_string(q) + "_" + std::to_string(i); }

}  // namespace

void setup_commfuse(GemmRun& run, int msl, const std::string& schedule_name) {
  const int T = run.T;
  const std::int64_t m = run.m, n = run.n, k = run.k, mc = m / T;
  const std::string prim = run.cfg.primitive;
  const auto sched = sim::parse_commfuse_schedule(schedule_name);
  if (!sched) throw std::invalid_argument("commfuse: unknown schedule '" + schedule_name + "'");
  if (prim == "all_reduce") throw std::invalid_argument("commfuse fuses all_gather or reduce_scatter");
  if (msl < 1 || mc % (static_cast<std::int64_t>(msl) * 128) != 0) throw std::invalid_argument("commfuse: m/T must split into m x 128 rows");
  const std::int64_t sub = mc / msl;
  const bool relay = *sched == sim::CommFuseSchedule::ring;
  const bool rs = prim == "reduce_scatter";
  std::vector<std::vector<FuseStep>> order(static_cast<std::size_t>(T));
  int rounds = 0;
  for (int r = 0; r < T; ++r) {
    order[static_cast<std::size_t>(r)] = rs ? sim::fuse_rs_order(r, T, *sched) : sim::fuse_ag_order(r, T, *sched);
    for (const auto& f : order[static_cast<std::size_t>(r)]) rounds = std::max(rounds, f.round + 1);
  }
  for (int r : run.node.local_ranks()) {
    run.layout[static_cast<std::size_t>(r)] = {rs ? rows_piece(r * mc, mc, n) : rows_piece(0, m, n)};
    if (!rs) continue;
    for (int q = 0; q < msl; ++q) {
      run.scratch(r, key("own", q, 0), sub * n);
      for (int i = 0; i < rounds; ++i) {
        run.scratch(r, key("p", q, i), sub * n);
        run.scratch(r, key("acc", q, i), sub * n);
        run.scratch(r, key("recv", q, i), sub * n);
      }
    }
  }
  run.what = std::string(rs ? "FuseRS" : "FuseAG") + ", " + schedule_name + " schedule, m = " + std::to_string(msl);
  run.enqueue = [&run, T, m, n, k, mc, msl, sub, relay, rs, order, rounds](bool skip) {
    Node& nd = run.node;
    const auto local = [&run](int r) { return run.is_local(r); };
    const std::size_t sub_bytes_rs = static_cast<std::size_t>(sub * n) * sizeof(__nv_bfloat16);
    const std::size_t sub_bytes_ag = static_cast<std::size_t>(sub * k) * sizeof(__nv_bfloat16);
    for (int q = 0; q < msl; ++q) {
      if (rs) {
        for (int i = 0; i < rounds; ++i) {
          std::vector<cudaStream_t> ready(static_cast<std::size_t>(T), nullptr);
          for (int r : nd.local_ranks()) {
            const FuseStep* f = step_in_round(order[static_cast<std::size_t>(r)], i);
            if (!f) continue;
            cudaStream_t cs = nd.streams(r).compute[0];
            __nv_bfloat16* p = run.scratch(r, key("p", q, i), sub * n);
            gemm_rows(run, r, cs, run.a[r].get() + (f->slice * mc + q * sub) * k, p, sub);
            if (relay && i > 0) {
              if (!skip) nd.order(cs, r, nd.done_on(r, (i - 1) & 1));
              PtrList in;
              in.add(p);
              in.add(run.scratch(r, key("recv", q, i - 1), sub * n));
              nd.activate(r);
              sum_bf16(run.scratch(r, key("acc", q, i), sub * n), in, static_cast<std::size_t>(sub * n), cs);
            }
            ready[static_cast<std::size_t>(r)] = cs;
          }
          // This round's sends that touch this process's ranks: rank r sends its partial (ring: its
          // accumulator) to send_to. Direct schedules: the receiver keeps each sender's partial
          // apart (slot = the round).
          std::vector<Transfer> xs;
          for (const StepPair& pr : skip ? std::vector<StepPair>{} : touching(commfuse_pairs(order, i), local)) {
            const int r = pr.src;
            Transfer x;
            x.src = r;
            x.dst = pr.dst;
            x.src_ptr = run.on_rank(r, sub_bytes_rs, [&](int o) { return run.scratch(o, key(relay && i > 0 ? "acc" : "p", q, i), sub * n); });
            x.dst_ptr = run.is_local(pr.dst) ? run.scratch(pr.dst, key("recv", q, i), sub * n) : nullptr;
            x.bytes = sub_bytes_rs;
            x.src_ready = ready[static_cast<std::size_t>(r)];
            xs.push_back(x);
          }
          if (!skip) nd.transfer(xs, i & 1);
        }
        // The own slice last, plus what arrived.
        for (int r : nd.local_ranks()) {
          cudaStream_t cs = nd.streams(r).compute[0];
          __nv_bfloat16* own = run.scratch(r, key("own", q, 0), sub * n);
          gemm_rows(run, r, cs, run.a[r].get() + (r * mc + q * sub) * k, own, sub);
          if (!skip) {
            nd.order(cs, r, nd.streams(r).copy[0]);
            nd.order(cs, r, nd.streams(r).copy[1]);
          }
          PtrList in;
          in.add(own);
          if (relay) {
            in.add(run.scratch(r, key("recv", q, rounds - 1), sub * n));
          } else {
            for (int i = 0; i < rounds; ++i) {
              if (step_in_round(order[static_cast<std::size_t>(r)], i)) in.add(run.scratch(r, key("recv", q, i), sub * n));
            }
          }
          nd.activate(r);
          sum_bf16(run.out[r].get() + q * sub * n, in, static_cast<std::size_t>(sub * n), cs);
        }
        continue;
      }
      // FuseAG: the local shard first.
      for (int r : nd.local_ranks()) {
        gemm_rows(run, r, nd.streams(r).compute[0], run.a_shard[r].get() + q * sub * k, run.out[r].get() + (r * mc + q * sub) * n, sub);
      }
      for (int i = 0; i < rounds; ++i) {
        // This round's exchanges that touch this process's ranks. What r sends: ring forwards last
        // round's arrival, direct its own shard; it lands where the receiver's step of this round
        // computes.
        std::vector<Transfer> xs;
        for (const StepPair& pr : skip ? std::vector<StepPair>{} : touching(commfuse_pairs(order, i), local)) {
          const int r = pr.src;
          const FuseStep* prev = relay && i > 0 ? step_in_round(order[static_cast<std::size_t>(r)], i - 1) : nullptr;
          const FuseStep* g = step_in_round(order[static_cast<std::size_t>(pr.dst)], i);
          Transfer x;
          x.src = r;
          x.dst = pr.dst;
          x.src_ptr = run.on_rank(r, sub_bytes_ag, [&](int o) -> const void* {
            return prev ? run.a[o].get() + (prev->slice * mc + q * sub) * k : run.a_shard[o].get() + q * sub * k;
          });
          x.dst_ptr = run.is_local(pr.dst) ? run.a[pr.dst].get() + (g->slice * mc + q * sub) * k : nullptr;
          x.src_ready = !run.is_local(r) ? nullptr : prev ? nd.done_on(r, (i - 1) & 1) : nd.streams(r).comm;
          x.bytes = sub_bytes_ag;
          xs.push_back(x);
        }
        if (!skip) nd.transfer(xs, i & 1);
        for (int r : nd.local_ranks()) {
          const FuseStep* f = step_in_round(order[static_cast<std::size_t>(r)], i);
          if (!f) continue;
          cudaStream_t cs = nd.streams(r).compute[0];
          if (!skip) nd.order(cs, r, nd.done_on(r, i & 1));
          gemm_rows(run, r, cs, run.a[r].get() + (f->slice * mc + q * sub) * k, run.out[r].get() + (f->slice * mc + q * sub) * n, sub);
        }
      }
    }
    (void)m;
  };
}

}  // namespace overlap::cuda
