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

// What every enqueue of one configuration shares: the shapes, the step order of every rank and the
// number of rounds.
struct FusePlan {
  int T = 0;
  std::int64_t n = 0, k = 0, mc = 0, sub = 0;  // mc = m / T rows per rank, sub = mc / msl
  int msl = 1;                                  // sub-slices per slice (params.m)
  bool relay = false;                           // ring: accumulators relayed
  std::vector<std::vector<FuseStep>> order;     // [rank]
  int rounds = 0;
  const FuseStep* step(int rank, int round) const {
    return step_in_round(order[static_cast<std::size_t>(rank)], round);
  }
};

// FuseRS, round i of sub-slice q: every rank computes the partial of its step's slice (ring: added
// to what arrived last round), then the round's sends that touch this process's ranks go out.
void enqueue_rs_round(GemmRun& run, const FusePlan& f, int q, int i, bool skip) {
  Node& nd = run.node;
  const std::int64_t sub = f.sub, n = f.n;
  std::vector<cudaStream_t> ready(static_cast<std::size_t>(f.T), nullptr);
  for (int r : nd.local_ranks()) {
    const FuseStep* st = f.step(r, i);
    if (!st) continue;
    cudaStream_t cs = nd.streams(r).compute[0];
    __nv_bfloat16* p = run.scratch(r, key("p", q, i), sub * n);
    gemm_rows(run, r, cs, run.a[r].get() + (st->slice * f.mc + q * sub) * f.k, p, sub);
    if (f.relay && i > 0) {
      if (!skip) nd.order(cs, r, nd.done_on(r, (i - 1) & 1));
      PtrList in;
      in.add(p);
      in.add(run.scratch(r, key("recv", q, i - 1), sub * n));
      nd.activate(r);
      sum_bf16(run.scratch(r, key("acc", q, i), sub * n), in, static_cast<std::size_t>(sub * n), cs);
    }
    ready[static_cast<std::size_t>(r)] = cs;
  }
  if (skip) return;
  // Rank r sends its partial (ring: its accumulator) to send_to. Direct schedules: the receiver
  // keeps each sender's partial apart (slot = the round).
  const std::size_t bytes = static_cast<std::size_t>(sub * n) * sizeof(__nv_bfloat16);
  const auto local = [&run](int r) { return run.is_local(r); };
  std::vector<Transfer> xs;
  for (const StepPair& pr : touching(commfuse_pairs(f.order, i), local)) {
    const int r = pr.src;
    Transfer x;
    x.src = r;
    x.dst = pr.dst;
    x.src_ptr = run.on_rank(r, bytes, [&](int o) { return run.scratch(o, key(f.relay && i > 0 ? "acc" : "p", q, i), sub * n); });
    x.dst_ptr = run.is_local(pr.dst) ? run.scratch(pr.dst, key("recv", q, i), sub * n) : nullptr;
    x.bytes = bytes;
    x.src_ready = ready[static_cast<std::size_t>(r)];
    xs.push_back(x);
  }
  nd.transfer(xs, i & 1);
}

// FuseRS, end of sub-slice q: the rank's own slice last, plus what arrived.
void enqueue_rs_own_slice(GemmRun& run, const FusePlan& f, int q, bool skip) {
  Node& nd = run.node;
  const std::int64_t sub = f.sub, n = f.n;
  for (int r : nd.local_ranks()) {
    cudaStream_t cs = nd.streams(r).compute[0];
    __nv_bfloat16* own = run.scratch(r, key("own", q, 0), sub * n);
    gemm_rows(run, r, cs, run.a[r].get() + (r * f.mc + q * sub) * f.k, own, sub);
    if (!skip) {
      nd.order(cs, r, nd.streams(r).copy[0]);
      nd.order(cs, r, nd.streams(r).copy[1]);
    }
    PtrList in;
    in.add(own);
    if (f.relay) {
      in.add(run.scratch(r, key("recv", q, f.rounds - 1), sub * n));
    } else {
      for (int i = 0; i < f.rounds; ++i) {
        if (f.step(r, i)) in.add(run.scratch(r, key("recv", q, i), sub * n));
      }
    }
    nd.activate(r);
    sum_bf16(run.out[r].get() + q * sub * n, in, static_cast<std::size_t>(sub * n), cs);
  }
}

// FuseAG, sub-slice q: the local shard first, then per round the exchanges that touch this process's
// ranks and the GEMM on what arrived. What r sends: ring forwards last round's arrival, direct its
// own shard; it lands where the receiver's step of this round computes.
void enqueue_ag(GemmRun& run, const FusePlan& f, int q, bool skip) {
  Node& nd = run.node;
  const std::int64_t sub = f.sub, n = f.n, k = f.k, mc = f.mc;
  const std::size_t bytes = static_cast<std::size_t>(sub * k) * sizeof(__nv_bfloat16);
  const auto local = [&run](int r) { return run.is_local(r); };
  for (int r : nd.local_ranks()) {
    gemm_rows(run, r, nd.streams(r).compute[0], run.a_shard[r].get() + q * sub * k, run.out[r].get() + (r * mc + q * sub) * n, sub);
  }
  for (int i = 0; i < f.rounds; ++i) {
    std::vector<Transfer> xs;
    for (const StepPair& pr : skip ? std::vector<StepPair>{} : touching(commfuse_pairs(f.order, i), local)) {
      const int r = pr.src;
      const FuseStep* prev = f.relay && i > 0 ? f.step(r, i - 1) : nullptr;
      const FuseStep* g = f.step(pr.dst, i);
      Transfer x;
      x.src = r;
      x.dst = pr.dst;
      x.src_ptr = run.on_rank(r, bytes, [&](int o) -> const void* {
        return prev ? run.a[o].get() + (prev->slice * mc + q * sub) * k : run.a_shard[o].get() + q * sub * k;
      });
      x.dst_ptr = run.is_local(pr.dst) ? run.a[pr.dst].get() + (g->slice * mc + q * sub) * k : nullptr;
      x.src_ready = !run.is_local(r) ? nullptr : prev ? nd.done_on(r, (i - 1) & 1) : nd.streams(r).comm;
      x.bytes = bytes;
      xs.push_back(x);
    }
    if (!skip) nd.transfer(xs, i & 1);
    for (int r : nd.local_ranks()) {
      const FuseStep* st = f.step(r, i);
      if (!st) continue;
      cudaStream_t cs = nd.streams(r).compute[0];
      if (!skip) nd.order(cs, r, nd.done_on(r, i & 1));
      gemm_rows(run, r, cs, run.a[r].get() + (st->slice * mc + q * sub) * k, run.out[r].get() + (st->slice * mc + q * sub) * n, sub);
    }
  }
}

}  // namespace

void setup_commfuse(GemmRun& run, int msl, const std::string& schedule_name) {
  const int T = run.T;
  const std::int64_t m = run.m, n = run.n, mc = m / T;
  const std::string prim = run.cfg.primitive;
  const auto sched = sim::parse_commfuse_schedule(schedule_name);
  if (!sched) throw std::invalid_argument("commfuse: unknown schedule '" + schedule_name + "'");
  if (prim == "all_reduce") throw std::invalid_argument("commfuse fuses all_gather or reduce_scatter");
  if (msl < 1 || mc % (static_cast<std::int64_t>(msl) * 128) != 0) throw std::invalid_argument("commfuse: m/T must split into m x 128 rows");
  const bool rs = prim == "reduce_scatter";
  FusePlan f;
  f.T = T;
  f.n = n;
  f.k = run.k;
  f.mc = mc;
  f.msl = msl;
  f.sub = mc / msl;
  f.relay = *sched == sim::CommFuseSchedule::ring;
  f.order.resize(static_cast<std::size_t>(T));
  for (int r = 0; r < T; ++r) {
    f.order[static_cast<std::size_t>(r)] = rs ? sim::fuse_rs_order(r, T, *sched) : sim::fuse_ag_order(r, T, *sched);
    for (const auto& st : f.order[static_cast<std::size_t>(r)]) f.rounds = std::max(f.rounds, st.round + 1);
  }
  for (int r : run.node.local_ranks()) {
    run.layout[static_cast<std::size_t>(r)] = {rs ? rows_piece(r * mc, mc, n) : rows_piece(0, m, n)};
    if (!rs) continue;
    for (int q = 0; q < msl; ++q) {
      run.scratch(r, key("own", q, 0), f.sub * n);
      for (int i = 0; i < f.rounds; ++i) {
        run.scratch(r, key("p", q, i), f.sub * n);
        run.scratch(r, key("acc", q, i), f.sub * n);
        run.scratch(r, key("recv", q, i), f.sub * n);
      }
    }
  }
  run.what = std::string(rs ? "FuseRS" : "FuseAG") + ", " + schedule_name + " schedule, m = " + std::to_string(msl);
  run.enqueue = [&run, f, rs](bool skip) {
    for (int q = 0; q < f.msl; ++q) {
      if (!rs) {
        enqueue_ag(run, f, q, skip);
        continue;
      }
      for (int i = 0; i < f.rounds; ++i) enqueue_rs_round(run, f, q, i, skip);
      enqueue_rs_own_slice(run, f, q, skip);
    }
  };
}

}  // namespace overlap::cuda
