#pragma once
// Who sends to whom in one step of the point-to-point schemes, as plain data (no CUDA), so the
// pattern the kernels run is tested where no GPU is (tests/calibrate/test_peer_registry.cpp): on a
// real node every process lists the transfers touching its rank, and the pulls' ready signals
// count on both ends agreeing (kernels/comm/peer_registry.hpp).
#include <vector>

#include "sim/schemes/commfuse_schedule.hpp"

namespace overlap::cuda {

struct StepPair {
  int src = -1, dst = -1;
};

// async TP (async-tp-illustrated, "Looped CollectiveEinsum"), step s >= 1 of T. All-gather: rank r
// pulls shard (r + s) mod T. Reduce-scatter: rank r pulls the accumulator of rank r - 1.
inline std::vector<StepPair> async_tp_pairs(bool all_gather, int ranks, int step) {
  std::vector<StepPair> v;
  if (step < 1 || step >= ranks) return v;
  for (int r = 0; r < ranks; ++r) v.push_back({all_gather ? (r + step) % ranks : (r - 1 + ranks) % ranks, r});
  return v;
}

// The step of `order` (one rank's CommFuse steps) in round `round`, or nullptr.
inline const sim::FuseStep* fuse_step_in_round(const std::vector<sim::FuseStep>& order, int round) {
  for (const auto& f : order) {
    if (f.round == round) return &f;
  }
  return nullptr;
}

// CommFuse (commfuse-paper Alg. 1-2, App. A.3-A.4) round `round`: every rank with an exchange in it
// sends to its step's send_to. `orders[r]` is rank r's step order (sim::fuse_rs_order /
// fuse_ag_order).
inline std::vector<StepPair> commfuse_pairs(const std::vector<std::vector<sim::FuseStep>>& orders, int round) {
  std::vector<StepPair> v;
  for (int r = 0; r < static_cast<int>(orders.size()); ++r) {
    const sim::FuseStep* f = fuse_step_in_round(orders[static_cast<std::size_t>(r)], round);
    if (f && f->send_to >= 0) v.push_back({r, f->send_to});
  }
  return v;
}

// The pairs a process lists: those whose sender or receiver it drives, in the step's order.
template <class IsLocal>
std::vector<StepPair> touching(const std::vector<StepPair>& pairs, IsLocal is_local) {
  std::vector<StepPair> v;
  for (const StepPair& p : pairs) {
    if (is_local(p.src) || is_local(p.dst)) v.push_back(p);
  }
  return v;
}

}  // namespace overlap::cuda
