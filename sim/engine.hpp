#pragma once
// The discrete-event engine (design.md "The simulation model"). Events are plain data ordered by
// (time, sequence), so runs are byte-identical; handlers schedule the events they cause. The engine
// knows SMs, streams, copy engines, counters and the fabric; it knows nothing of schemes.
//
// Inside, two sides meet through a narrow interface (ASTRA-sim's system layer / network backend
// split, style.md): the GPU side (gpu_side.hpp: SM pools, CTA dispatch, copy engines, launch) and
// the network side (network_api.hpp, implemented by network_side.cpp: fabric routes, max-min flows,
// HBM, collectives). The core (engine.cpp) owns the clock, the event loop, dependencies, streams and
// counters.
#include <functional>
#include <optional>
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
  // The physical GPU this rank runs on (-1: its own). Virtual ranks of one physical GPU (green-context
  // partitions) share its copy engines, its HBM and the interference of its communication kernels.
  int physical = -1;
  // A GEMM tile takes (1 + comm_interference * comm SMs / SMs) times longer while communication
  // kernels hold that many of the physical GPU's SMs (GpuSpec::gemm_comm_interference).
  double comm_interference = 0;
  // GpuSpec::gemm_full_rate_sms (0 = not modelled): with more SMs of the physical GPU running tiles
  // of compute kernels than this, each tile slows (gemm_saturation_factor, Op::reference_sms).
  double full_rate_sms = 0;
  // GpuSpec::hbm_latency_us: a memory kernel's fixed time before its bytes stream (no HBM used).
  Ps hbm_latency_ps = 0;
  // GpuSpec::hbm_sm_gbps in bytes per ps: a memory kernel streams at most its SMs (Op::channels, else
  // sm_count) times this. 0 = no cap.
  double hbm_sm_bytes_per_ps = 0;
};

struct NodeConfig {
  std::vector<GpuConfig> gpus;  // one per rank
  Fabric fabric;
  // Launch model (LaunchSpec): each rank's host thread issues its kernels and copies ahead, in
  // program (op id) order, launch_host_ps apiece; a kernel starts no earlier than its issue and no
  // earlier than launch_gap_ps after its dependencies are met.
  Ps launch_gap_ps = 0;
  Ps launch_host_ps = 0;
  // One host thread per physical GPU instead of per rank (LaunchSpec::shared_host): virtual ranks
  // then issue, in op id order, from one timeline. Op::host_ps adds to an op's issue cost.
  bool shared_host = false;
  // Host time of each dependency on an op of another stream (an event record + wait), charged to
  // the dependent op's issue (LaunchSpec::sync_host_us); not to collective members, whose
  // host_ps covers their own.
  Ps sync_host_ps = 0;
};

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
