#pragma once
// Chrome trace (JSON `traceEvents`, loads in Perfetto / chrome://tracing) of one run, at one of two
// levels of detail (a CTA-level trace of a whole Llama-3-70B step measured 689 MB):
//  - kernel (the default): a process per rank with one track per stream and one slice per op
//    (kernel, copy, collective member, wait, delay), flow arrows (ph "s" -> "f") from each send of a
//    collective to its receive on the peer rank, and a "fabric" process with a counter per link of
//    the transfers in flight;
//  - cta: the kernel level plus one track per copy engine (its copies), one per SM (every CTA on its
//    SM, communication kernels on the SMs they held), an "SMs busy" counter per rank, and every
//    transfer as an async slice on each link it crossed (needs EngineOptions::record_ctas).
// Filters: only some ranks (their processes; a flow needs both ends kept; link tracks are kept when
// the link touches a kept rank's GPU or no GPU at all), and only events overlapping a time window.
// Timestamps in microseconds with picosecond decimals.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine.hpp"

namespace overlap::sim {

enum class TraceLevel { kernel, cta };

struct TraceOptions {
  TraceLevel level = TraceLevel::kernel;
  std::vector<int> ranks;   // ranks to keep, ascending; empty = every rank
  Ps window_start_ps = 0;   // keep events that overlap [window_start_ps, window_end_ps]
  Ps window_end_ps = -1;    // -1 = no end
};

nlohmann::json chrome_trace(const TaskGraph& graph, const Timeline& timeline, const NodeConfig& node,
                            const TraceOptions& options = {});

}  // namespace overlap::sim
