#pragma once
// The discrete-event engine (design.md "The simulation model"). Events are plain data ordered by
// (time, sequence), so runs are byte-identical; handlers schedule the events they cause. The engine
// knows SMs, streams, copy engines, counters and the fabric; it knows nothing of schemes.
#include <functional>
#include <stdexcept>
#include <vector>

#include "cost_model/units.hpp"
#include "sim/fabric.hpp"
#include "sim/task_graph.hpp"
#include "sim/timeline.hpp"

namespace overlap::sim {

struct GpuConfig {
  int sm_count = 0;
  int copy_engines = 0;
};

struct NodeConfig {
  std::vector<GpuConfig> gpus;  // one per rank
  Fabric fabric;
  Ps kernel_launch_ps = 0;      // each kernel waits this long after it is ready before it may run
};

struct EngineOptions {
  bool record_ctas = false;  // keep every CTA's interval (SM lanes in traces); costs memory
  bool zero_comm = false;    // compute-only re-run: every `comm` op completes at once, holding nothing
  // Called when a CTA finishes a tile (tile index in dispatch order), before its counters move.
  std::function<void(OpId op, std::int64_t tile, Ps end_ps)> on_tile_end;
};

class SimError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The graph asks for resources the node does not have (more SMs than the GPU, a copy with no copy
// engine) or for more CTAs than the engine simulates in reasonable time: a property of the scenario,
// not a bug, so tools report it as an input error.
class ResourceError : public SimError {
 public:
  using SimError::SimError;
};

// Runs the graph to completion. Throws GraphError for cycles, ResourceError for resources an op can
// never get, and SimError for a deadlock (ops that can never run, named with what they wait for).
Timeline run(const TaskGraph& graph, const NodeConfig& node, const EngineOptions& options = {});

}  // namespace overlap::sim
