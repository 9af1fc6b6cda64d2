#pragma once
// The discrete-event engine (design.md "The simulation model"). Events are plain data ordered by
// (time, sequence), so runs are byte-identical; handlers schedule the events they cause. The engine
// knows SMs, streams, copy engines, counters and the fabric; it knows nothing of schemes.
//
// Inside, two sides meet through a narrow interface (ASTRA-sim's system layer / network backend
// split, style.md): the GPU side (gpu_side.hpp: SM pools, CTA dispatch, copy engines, its kernels'
// HBM traffic) and the network side (network_api.hpp, implemented by network_side.cpp: fabric
// routes, max-min flows, collectives), which both load one pool of link and HBM bandwidth
// (shared_bandwidth.hpp). The core (engine.cpp) owns the clock, the event loop, dependencies,
// streams and counters. The node (node_config.hpp) and its fabric are not part of this header, so
// schemes, which include it, never see the fabric.
#include <functional>
#include <optional>
#include <stdexcept>
#include <vector>

#include "cost_model/units.hpp"
#include "sim/task_graph.hpp"
#include "sim/timeline.hpp"

namespace overlap::sim {

struct NodeConfig;  // node_config.hpp: the GPUs and the fabric a graph runs on

struct EngineOptions {
  bool record_ctas = false;  // keep every CTA's interval (SM lanes in traces); costs memory
  bool zero_comm = false;    // compute-only re-run: every `comm` op completes at once, holding nothing
  // With zero_comm: only the communication ops of this communicator complete at once (a step's
  // exposed time per communicator); nullopt = every communication op.
  std::optional<Communicator> zero_communicator;
  // Communication-alone re-run: every op that is not `comm` takes no time (its CTAs, bytes of a
  // memory kernel and delays are zero; launches and dependencies stay).
  bool zero_compute = false;
  // The graph was already checked for cycles and its CTA count (a re-run of the same graph): skip both.
  bool graph_checked = false;
  // Called when a CTA finishes a tile (tile index in dispatch order), before its counters move.
  std::function<void(OpId op, std::int64_t tile, Ps end_ps)> on_tile_end;
  // Fold ranks like rank 0 (a re-run read for its op records, makespan and rank ends: the compute-only
  // run). When no resource couples two ranks (no counter across ranks, no copy or communication kernel
  // that moves bytes, each rank on its own GPU and HBM) and a rank's ops, streams and GPU are rank 0's in
  // the same order (with dependencies across ranks: every rank's), that rank is not simulated, and its
  // op records, rank end and busy times are copied from rank 0's. Every op record, rank end, busy time
  // and the makespan are then those of the full run; `events`, `transfers` and `link_bytes` count the
  // simulated ranks only. Without the conditions the run is a full one.
  bool fold_like_ranks = false;
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
