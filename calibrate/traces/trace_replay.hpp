#pragma once
// Runs a replay graph (calibrate/traces/replay_graph.hpp): the kernels of a trace again, each for
// its (possibly changed) duration, under the graph's constraints.
//
// A small event-driven replayer of its own rather than sim/engine: the engine schedules CTAs on an
// SM pool, flows on links and copy engines, which a trace's kernels already include in their
// measured durations; a replay needs only "start when every predecessor has ended and the release
// has passed, run for d". Events are ordered by (time, sequence) (as sim/event_queue.hpp orders
// the engine's), so a run is deterministic. The CPU is replayed as the graph's CPU nodes say: a
// launching thread's calls keep their measured gaps, and a synchronisation returns when the kernels
// it waits for end, so a what-if that makes kernels faster launches the kernels after a
// synchronisation earlier, but never closes the CPU's own gaps (a CPU-bound step stays CPU-bound).
#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/traces/replay_graph.hpp"

namespace overlap::traces {

inline constexpr std::int64_t kNeverRan = INT64_MIN;

struct ReplayResult {
  // Per node id (kernels, then CPU calls: ReplayGraph::cpu_id); kNeverRan: never ran (see stuck).
  std::vector<std::int64_t> start_ns, end_ns;
  std::int64_t stuck = 0;  // kernels that never ran: the graph has a cycle (members matched in an order the streams contradict)
  std::int64_t events = 0;  // events handled
};

// `duration_ns`: each kernel's duration (ReplayNode::duration_ns for the identity); CPU calls run
// for CpuNode::duration_ns.
ReplayResult replay(const ReplayGraph& g, const std::vector<std::int64_t>& duration_ns);

// The span from the first start to the last end over the nodes of `rank` (-1: every rank), measured
// or replayed; 0 when there are none.
std::int64_t measured_span_ns(const ReplayGraph& g, std::int32_t rank = -1);
std::int64_t replayed_span_ns(const ReplayGraph& g, const ReplayResult& r, std::int32_t rank = -1);

}  // namespace overlap::traces
