#pragma once
// What-ifs on a replay (`trace --replay --what-if KEY=VALUE`): each changes the durations the
// replay runs its kernels for, never the graph.
//   kind.<kind>.speed=F   kernels of that kind (kernel_kind.hpp's kind_name: gemm, grouped_gemm,
//                         attention, memory_bound, collective, compute, copy, unknown) run F times
//                         as fast: duration / F
//   comm.speed=F          communication kernels (every library's, peer copies included) F times as
//                         fast; of a collective matched across ranks only the transfer changes
//                         (the wait for the last member is the replay's to work out)
//   link.<class>.gbps=B   communication kernels whose transfer runs over the link class <class> of
//                         the hardware profile (`--hardware`: the trace's machine; its
//                         fabric.links names, `nic` for `network`) with the link at B GB/s: the
//                         transfer's time scaled by profile_gbps / B. A kernel's class: its
//                         group's (sim/schemes/graph_builder.hpp collective_link_class, as the
//                         model picks it); a peer copy's nvlink; a kernel whose group the trace
//                         does not give is left as measured (counted). Latency scales with it: a
//                         latency-bound message's change is overstated.
//   comm.sms=N            communication kernels hold N SMs each instead of their grid's (a NCCL
//                         kernel's channels): the compute kernels beside them re-timed on the SMs
//                         left (calibrate/traces/sm_share.hpp; needs `--hardware` for the SM count,
//                         N an integer in 1..sm_count - 1). Applied before the other keys.
//   swap.all_gather=S     an all-gather and the GEMM reading its output replaced by scheme S's time
//                         for the pair (tools/trace_swap.hpp; needs `--hardware`). Applied after
//                         comm.sms, before the other keys.
// F a finite number in 0.001..1000 and B in 0.001..1e6 (so no replayed time leaves int64). Later
// keys multiply with earlier ones that cover the same kernel.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "calibrate/traces/replay_graph.hpp"

namespace overlap::traces {

struct WhatIf {
  bool comm = false;                       // comm.speed
  KernelKind kind = KernelKind::unknown;   // kind.<kind>.speed when !comm and link is ""
  double speed = 1.0;
  std::string link;                        // link.<class>.gbps: the class ("nic" read as "network")
  double gbps = 0;                         // its bandwidth
  int comm_sms = 0;                        // comm.sms=N (what_if_durations leaves it to sm_share.hpp)
  std::string swap_all_gather;             // swap.all_gather=SCHEME (what_if_durations leaves it to the tools)
  std::string text;                        // as given
};

// Throws std::invalid_argument saying what is wrong with `text` (unknown key, not KEY=VALUE, a
// factor that is not a finite number in 0.001..1000).
WhatIf parse_what_if(const std::string& text);

// Each node's duration with the what-ifs applied (rounded to the nanosecond, at least 0).
std::vector<std::int64_t> what_if_durations(const ReplayGraph& g, const std::vector<const RankTrace*>& ranks,
                                            const std::vector<WhatIf>& what_ifs);

// The link what-ifs' inputs: per node the link class its transfer runs over ("" none or unknown),
// and the profile's bandwidth per class.
struct LinkContext {
  std::vector<std::string> node_link;
  std::map<std::string, double> profile_gbps;
};
// The same from `base` durations (the measured ones, or the model's); `links` required when a
// link what-if is given. `unscaled_comm`, when given, counts the communication kernels a link
// what-if left as they were (no link class known).
std::vector<std::int64_t> what_if_durations(const ReplayGraph& g, const std::vector<const RankTrace*>& ranks,
                                            const std::vector<WhatIf>& what_ifs, const std::vector<std::int64_t>& base,
                                            const LinkContext* links, std::int64_t* unscaled_comm = nullptr);

}  // namespace overlap::traces
