#pragma once
// Runs a replay graph (calibrate/traces/replay_graph.hpp): the kernels of a trace again, each for
// its (possibly changed) duration, under the graph's constraints.
//
// A small event-driven replayer of its own rather than sim/engine: the engine schedules CTAs on an
// SM pool, flows on links and copy engines, which a trace's kernels already include in their
// measured durations; a replay needs only "start when every predecessor has ended and the release
// has passed, run for d". Events are ordered by (time, sequence) (as sim/event_queue.hpp orders
// the engine's), so a run is deterministic. The CPU is not replayed: launches keep their measured
// times, so a what-if that makes kernels faster cannot launch the next kernel earlier than the
// trace's CPU did (a CPU-bound step stays CPU-bound).
#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/traces/replay_graph.hpp"

namespace overlap::traces {

inline constexpr std::int64_t kNeverRan = INT64_MIN;

struct ReplayResult {
  std::vector<std::int64_t> start_ns, end_ns;  // per node; kNeverRan: never ran (see stuck)
  std::int64_t stuck = 0;  // nodes that never ran: the graph has a cycle (members matched in an order the streams contradict)
  std::int64_t events = 0;  // events handled
};

// `duration_ns`: each node's duration (ReplayNode::duration_ns for the identity).
ReplayResult replay(const ReplayGraph& g, const std::vector<std::int64_t>& duration_ns);

// The span from the first start to the last end over the nodes of `rank` (-1: every rank), measured
// or replayed; 0 when there are none.
std::int64_t measured_span_ns(const ReplayGraph& g, std::int32_t rank = -1);
std::int64_t replayed_span_ns(const ReplayGraph& g, const ReplayResult& r, std::int32_t rank = -1);

}  // namespace overlap::traces
