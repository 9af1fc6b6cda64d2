#pragma once
// What-ifs on a replay (`trace --replay --what-if KEY=VALUE`): each changes the durations the
// replay runs its kernels for, never the graph.
//   kind.<kind>.speed=F   kernels of that kind (kernel_kind.hpp's kind_name: gemm, grouped_gemm,
//                         attention, memory_bound, collective, compute, copy, unknown) run F times
//                         as fast: duration / F
//   comm.speed=F          communication kernels (every library's, peer copies included) F times as
//                         fast; of a collective matched across ranks only the transfer changes
//                         (the wait for the last member is the replay's to work out)
// F a finite number in 0.001..1000 (so no replayed time leaves int64). Later keys multiply with earlier ones that cover the same kernel.
#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/traces/replay_graph.hpp"

namespace overlap::traces {

struct WhatIf {
  bool comm = false;                       // comm.speed
  KernelKind kind = KernelKind::unknown;   // kind.<kind>.speed when !comm
  double speed = 1.0;
  std::string text;                        // as given
};

// Throws std::invalid_argument saying what is wrong with `text` (unknown key, not KEY=VALUE, a
// factor that is not a finite number in 0.001..1000).
WhatIf parse_what_if(const std::string& text);

// Each node's duration with the what-ifs applied (rounded to the nanosecond, at least 0).
std::vector<std::int64_t> what_if_durations(const ReplayGraph& g, const std::vector<const RankTrace*>& ranks,
                                            const std::vector<WhatIf>& what_ifs);

}  // namespace overlap::traces
