#pragma once
// A replay as a Chrome / Perfetto trace (the Trace Event Format's complete events, "ph": "X", times
// in microseconds), beside the original: process 2r is rank r as measured, 2r + 1 rank r as
// replayed, one thread per stream, so ui.perfetto.dev shows the two one above the other.
#include <string>
#include <vector>

#include "calibrate/traces/trace_replay.hpp"

namespace overlap::traces {

// The document's text. `ranks[i]` is the trace of the graph's rank i (for kernel names).
std::string replay_chrome_trace(const ReplayGraph& g, const ReplayResult& r, const std::vector<const RankTrace*>& ranks);

}  // namespace overlap::traces
