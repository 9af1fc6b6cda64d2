#pragma once
// Collectives as NCCL runs them (design.md "Collectives"). The public API of the collective
// cost model; the NCCL tuning model behind it is cost_model/nccl_tuning.hpp, the algorithms' steps
// cost_model/nccl_algorithms.hpp.
//
//   plan_collective()   what NCCL would run for one call: algorithm, protocol, channels (= SMs), and
//                       the time it takes on an idle node (the `curve` fidelity's duration). A
//                       calibrated curve in the profile replaces the model's time (see below).
//   collective_steps()  that plan as the algorithm's steps per rank (peer, bytes) with the protocol's
//                       per-step latency and bandwidth (the `steps` fidelity). On an idle fabric the
//                       steps take the plan's time: CollectiveSchedule::idle_time_ps() equals
//                       plan.time_ps up to a picosecond of rounding per step.
//
// Sizes follow nccl-tests: S is the full array (all_reduce in/out S per rank; reduce_scatter in S,
// out S/n; all_gather in S/n, out S; all_to_all S in and out, S/n to each peer).
//
// Calibrated curves (profile.curves, time vs S as nccl-tests measures it) win over the model:
//   "<primitive>.n<N>.<PROTO>", "<primitive>.<PROTO>"  one protocol's measured time (an nccl-tests run
//                       with NCCL_PROTO=<PROTO>): the candidate of that protocol takes the curve's
//                       time, and the choice is still the minimum over candidates;
//   "<primitive>.n<N>", "<primitive>"  the primitive's measured time, whatever NCCL chose: the plan
//                       keeps the model's algorithm, protocol and channels and takes the curve's time.
#include <optional>
#include <string>
#include <vector>

#include "cost_model/collective_primitive.hpp"
#include "cost_model/hardware_profile.hpp"
#include "cost_model/nccl_constants.hpp"

namespace overlap {

// One call's choice, as NCCL_ALGO / NCCL_PROTO would force it. Unset fields fall back to the
// profile's comm.algorithm / comm.protocol, then to NCCL's automatic choice.
struct CollectiveOverrides {
  std::optional<NcclAlgorithm> algorithm;
  std::optional<NcclProtocol> protocol;
};

// Where a group's ranks sit across nodes: ranks_per_node of its members share a node, consecutive
// members together (0: the group packed onto nodes in rank order, fabric.gpus_per_node to a node, as a
// TP or EP group of consecutive GPUs; a network-class group no larger than a node then has one rank per
// node). Only a multi_node profile reads it.
struct GroupPlacement {
  int ranks_per_node = 0;
};

// The placement of a group whose members are `stride` GPUs apart in a job laid out node by node
// (Megatron's rank order puts TP innermost, so a data-parallel group's members are GPUs r + j x tp):
// gpus_per_node / stride members to a node while the stride is below a node's GPUs, else one. {0} on a
// profile of one node.
GroupPlacement strided_group_placement(const HardwareProfile& hw, int stride);

// What NCCL would run for one call.
struct CollectivePlan {
  CollectivePrimitive primitive = CollectivePrimitive::all_reduce;
  NcclAlgorithm algorithm = NcclAlgorithm::Ring;
  NcclProtocol protocol = NcclProtocol::Simple;
  int channels = 0;      // CTAs = SMs the kernel holds (NCCL's channel count for this size)
  Ps time_ps = 0;        // predicted time on an idle node (the curve fidelity's duration)
  Ps latency_ps = 0;     // the part of time_ps that does not scale with the bytes
  bool from_curve = false;  // a calibrated / imported curve gave time_ps
  // The bandwidth the bytes move at: S / (time - latency) = NCCL's algorithm bandwidth (GB/s).
  double algbw_gbps = 0;
  GroupPlacement placement;  // the group's placement it was planned for; collective_steps() follows it
};

// Throws InputError (key comm.algorithm / comm.protocol, naming the profile file) when a forced
// algorithm or protocol cannot run this collective on this profile (NCCL fails such a call too), and
// std::invalid_argument for an unknown link class. n_ranks <= 1 or bytes <= 0: a plan of time 0 and
// no channels. placement: where the group's ranks sit (default: packed onto nodes in rank order).
CollectivePlan plan_collective(const HardwareProfile& hw, CollectivePrimitive primitive, Bytes bytes, int n_ranks,
                               const std::string& link_class, const CollectiveOverrides& overrides = {},
                               const GroupPlacement& placement = {});

// Every (algorithm, protocol) NCCL would consider for this call with its model time (curves
// ignored), in NCCL's order; what `overlap-sim collective --all` prints and the tests compare.
struct CollectiveCandidate {
  NcclAlgorithm algorithm = NcclAlgorithm::Ring;
  NcclProtocol protocol = NcclProtocol::Simple;
  bool enabled_by_default = true;  // false: NCCL runs it only when forced (e.g. LL128 over PCIe)
  Ps time_ps = 0;
  Ps latency_ps = 0;
  int channels = 0;
};
std::vector<CollectiveCandidate> collective_candidates(const HardwareProfile& hw, CollectivePrimitive primitive,
                                                       Bytes bytes, int n_ranks, const std::string& link_class);

// A transfer of one step. peer: a member index (0 .. n_ranks-1), or kSwitchPeer: the NVSwitch's (or a
// network switch's) reduction / multicast engine. A send to kSwitchPeer crosses the rank's
// GPU->switch link, a receive from it the switch->GPU link.
inline constexpr int kSwitchPeer = -2;
struct CollectiveTransfer {
  int peer = -1;
  Bytes bytes = 0;
};

// One step of one rank: sends and receives run concurrently, then the received data is reduced.
struct CollectiveStep {
  std::vector<CollectiveTransfer> sends;
  std::vector<CollectiveTransfer> recvs;
  Ps latency_ps = 0;      // per-step latency (NCCL's per-step "hardware" latency of the link crossed)
  Bytes reduce_bytes = 0; // bytes this rank reduces into its buffer after the step (0: copy only)
};

struct CollectiveSchedule {
  CollectivePrimitive primitive = CollectivePrimitive::all_reduce;
  NcclAlgorithm algorithm = NcclAlgorithm::Ring;
  NcclProtocol protocol = NcclProtocol::Simple;
  int n_ranks = 0;
  Bytes bytes_total = 0;
  Ps base_latency_ps = 0;     // paid once (launch + set-up: NCCL's base latency)
  double bandwidth_gbps = 0;  // per-port bandwidth each step's bytes move at (the protocol's)
  // Ranks per node when the collective spans nodes (ranks r / ranks_per_node share a node), else 0.
  // Across nodes a rank has two ports: its node's NIC, which the transfers between nodes (and to a
  // switch) cross, shared by ranks_per_nic consecutive ranks of the node; and its NVLink port, which
  // the transfers inside the node cross, counted at intra_scale (NIC line rate / NVLink line rate) so
  // that both are in NIC-time bytes.
  int ranks_per_node = 0;
  int ranks_per_nic = 1;
  double intra_scale = 0;
  std::vector<std::vector<CollectiveStep>> ranks;  // ranks[r][s]; every rank has the same step count

  std::size_t num_steps() const { return ranks.empty() ? 0 : ranks.front().size(); }
  Bytes bytes_sent(int rank) const;      // to other ranks and to the switch
  Bytes bytes_received(int rank) const;
  Bytes bytes_to_switch(int rank) const;    // sends to kSwitchPeer
  Bytes bytes_from_switch(int rank) const;  // receives from kSwitchPeer
  bool uses_switch() const;
  // The bytes rank r's port moves in step s: the larger of its sends and receives (across nodes: the
  // larger of its NIC's, summed over the ranks sharing it, and its NVLink port's scaled bytes; see
  // ranks_per_node).
  Bytes port_bytes(int rank, std::size_t step) const;
  // base + sum over steps of (latency + the busiest port's bytes in that step / bandwidth).
  Ps idle_time_ps() const;
};

// The plan's algorithm as steps (see the header comment). Throws std::invalid_argument if the plan's
// algorithm cannot run the primitive (a plan from plan_collective always can).
CollectiveSchedule collective_steps(const HardwareProfile& hw, const CollectivePlan& plan, Bytes bytes, int n_ranks,
                                    const std::string& link_class);

// ---- Shorthands over plan_collective, for callers that need only the time ----

// plan_collective(...).time_ps with an optional forced algorithm (nullopt: the profile's, else NCCL's
// choice). n_ranks <= 1 or bytes <= 0 -> 0.
Ps collective_time_ps(const HardwareProfile& hw, CollectivePrimitive primitive, Bytes bytes, int n_ranks,
                      const std::string& link_class, std::optional<NcclAlgorithm> algorithm = std::nullopt);
// The NCCL model alone (calibrated curves ignored).
Ps collective_model_time_ps(const HardwareProfile& hw, CollectivePrimitive primitive, Bytes bytes, int n_ranks,
                            const std::string& link_class, std::optional<NcclAlgorithm> algorithm = std::nullopt);
// collective_steps(plan_collective(...)).
CollectiveSchedule collective_steps(const HardwareProfile& hw, CollectivePrimitive primitive, Bytes bytes,
                                    int n_ranks, const std::string& link_class,
                                    std::optional<NcclAlgorithm> algorithm = std::nullopt);

// NCCL's bus bandwidth of its ring graph on `link_class` (link bandwidth x comm.bandwidth_efficiency,
// on a full mesh only the share of the links to the collective's other n_ranks-1 members; n_ranks = 0:
// all GPUs). Throws std::invalid_argument for an unknown class.
double collective_bandwidth_gbps(const HardwareProfile& hw, const std::string& link_class, int n_ranks = 0);

// The line rate of one collective port on `link_class` (GB/s per direction; on a full mesh the share of
// the links to the other n_ranks-1 members): what the steps' bandwidth is a fraction of.
double collective_port_gbps(const HardwareProfile& hw, const std::string& link_class, int n_ranks);

// Size of chunk c when S bytes are cut into n chunks (the first S % n chunks get one byte more).
Bytes chunk_bytes(Bytes total, int n, int c);

// Curve keys of profile.curves, most specific first: "<prim>.n<N>.<PROTO>", "<prim>.<PROTO>" (when a
// protocol is given), else "<prim>.n<N>", "<prim>".
std::vector<std::string> collective_curve_keys(CollectivePrimitive primitive, int n_ranks,
                                               std::optional<NcclProtocol> protocol);

}  // namespace overlap
