#pragma once
// A replay as a Chrome / Perfetto trace (the Trace Event Format's complete events, "ph": "X", times
// in microseconds), beside the original: process 2r is rank r as measured, 2r + 1 rank r as
// replayed, one thread per stream, so ui.perfetto.dev shows the two one above the other. Each
// launching thread's synchronisations (replay_graph.hpp's CPU nodes) are a track of their own,
// "CPU thread k" (tid kCpuTrackTid + k), measured call to return and replayed: where the CPU waited.
#include <string>
#include <vector>

#include "calibrate/traces/trace_replay.hpp"

namespace overlap::traces {

// Above any CUDA stream id a profiler writes (small integers), so CPU tracks never share a stream's row.
inline constexpr std::int64_t kCpuTrackTid = 1000000000;

// The document's text. `ranks[i]` is the trace of the graph's rank i (for kernel names).
std::string replay_chrome_trace(const ReplayGraph& g, const ReplayResult& r, const std::vector<const RankTrace*>& ranks);

}  // namespace overlap::traces
