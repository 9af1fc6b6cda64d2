#pragma once
// The scheme-swap what-if of the replay (`trace --replay --hardware PROFILE --what-if
// swap.all_gather=SCHEME`): an all-gather whose output is the next GEMM's input, replaced with the
// pair run as SCHEME (async_tp, ...) by the simulator.
//
// Matching, exact only: on one rank and GPU, an all-gather kernel (its collective named all_gather
// by record_param_comms or the kernel's name, with its output elements and group size) and the
// first GEMM kernel that starts after it ends there, linked to an op whose shape the trace gives,
// batch 1, with M x K equal to the all-gather's output elements (the gathered [M, K] is the GEMM's
// first operand). Any other next kernel, a GEMM of another size, or a shape or size the trace does
// not give: no match, counted. A trace does not record which tensor a GEMM reads, so equal sizes
// are the evidence, and the output lists every pair it matched.
//
// Replacement: the all-gather runs for 0 (its transfer is inside the scheme's time) and the GEMM
// for SCHEME's latency on PROFILE for the workload gemm_collective {m, n, k, dtype, all_gather}
// with tp = the all-gather's group (sim/metrics.hpp evaluate_all, step fidelity).
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "calibrate/traces/replay_graph.hpp"
#include "cost_model/hardware_profile.hpp"

namespace overlap {

struct SwapPair {
  int rank = 0;                   // index into the replay's ranks
  std::size_t all_gather = 0;     // node
  std::size_t gemm = 0;           // node
  std::int64_t m = 0, n = 0, k = 0;
  int group = 0;
  std::string dtype;
  std::int64_t measured_ns = 0;   // the two kernels' durations before the swap
  std::int64_t scheme_ns = 0;     // SCHEME's latency for the pair
};

struct SwapResult {
  std::string scheme;
  std::int64_t all_gathers = 0;   // all-gather kernels seen
  std::vector<SwapPair> pairs;    // matched, in node order
};

// Applies the swap to `durations` (the node durations so far). Throws std::invalid_argument for a
// scheme name the simulator does not know or one that does not run an all-gather before a GEMM.
SwapResult swap_all_gathers(const traces::ReplayGraph& g, const std::vector<const traces::RankTrace*>& ranks,
                            const HardwareProfile& hw, const std::string& scheme, std::vector<std::int64_t>& durations);

}  // namespace overlap
