#pragma once
// Collective cost at the two fidelities of design.md "Collectives":
//  - curve: one duration for the whole collective. A calibrated curve from the profile when it has
//    one (profile.curves["<primitive>.n<N>"] or ["<primitive>"]: time vs the full array size S,
//    nccl-tests style), else NCCL's alpha-beta model (facts.md "NCCL on 8xH100 NVSwitch"):
//        t = base_latency + nsteps * step_latency + S * busbw_factor / bandwidth
//    with bandwidth = link bandwidth * comm.bandwidth_efficiency * comm.protocol_efficiency.
//  - steps: the algorithm's steps per rank (peer, bytes) with a per-step latency, for the simulator
//    to run as transfers. On an idle fabric the steps take exactly the alpha-beta time (up to one
//    picosecond of rounding per step): CollectiveSchedule::idle_time_ps() is that sum.
// Sizes follow nccl-tests: S is the full array (all_reduce in/out S per rank; reduce_scatter in S,
// out S/n; all_gather in S/n, out S; all_to_all S in and out, S/n to each peer).
#include <optional>
#include <string>
#include <vector>

#include "cost_model/collective_primitive.hpp"
#include "cost_model/hardware_profile.hpp"

namespace overlap {

enum class CollectiveAlgorithm {
  ring,      // NCCL ring: n-1 steps per phase, chunk S/n to the next rank
  tree,      // NCCL double binary tree (all_reduce only): reduce up both trees, broadcast down
  pairwise,  // step i: send to rank+i, receive from rank-i (CommFuse-style decomposition)
  direct,    // one step: every peer at once (all_to_all / scatter-gather over a switch)
};
const char* collective_algorithm_name(CollectiveAlgorithm a);
std::optional<CollectiveAlgorithm> parse_collective_algorithm(const std::string& s);

struct CollectiveTransfer {
  int peer = -1;
  Bytes bytes = 0;
};

// One step of one rank: sends and receives run concurrently, then the received data is reduced.
struct CollectiveStep {
  std::vector<CollectiveTransfer> sends;
  std::vector<CollectiveTransfer> recvs;
  Ps latency_ps = 0;      // per-step synchronisation latency (NCCL's step latency)
  Bytes reduce_bytes = 0; // bytes this rank reduces into its buffer after the step (0: copy only)
};

struct CollectiveSchedule {
  CollectivePrimitive primitive = CollectivePrimitive::all_reduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;
  int n_ranks = 0;
  Bytes bytes_total = 0;
  Ps base_latency_ps = 0;     // paid once (launch + setup: NCCL's base latency)
  double bandwidth_gbps = 0;  // effective per-port bandwidth each step's bytes move at
  std::vector<std::vector<CollectiveStep>> ranks;  // ranks[r][s]; every rank has the same step count

  std::size_t num_steps() const { return ranks.empty() ? 0 : ranks.front().size(); }
  Bytes bytes_sent(int rank) const;
  Bytes bytes_received(int rank) const;
  // base + sum over steps of (latency + the busiest port's bytes in that step / bandwidth).
  Ps idle_time_ps() const;
};

// Effective bandwidth of one collective port on `link_class`: link bandwidth times the comm
// library's bandwidth and protocol efficiencies; on a full mesh, only the share of the port's links
// that lead to the collective's other n_ranks-1 members (n_ranks = 0: all GPUs). Throws
// std::invalid_argument for an unknown class.
double collective_bandwidth_gbps(const HardwareProfile& profile, const std::string& link_class, int n_ranks = 0);

// Curve fidelity: calibrated curve if the profile has one for this primitive, else the alpha-beta
// model of `algorithm`. n_ranks <= 1 or bytes_total <= 0 -> 0.
Ps collective_time_ps(const HardwareProfile& profile, CollectivePrimitive primitive, Bytes bytes_total,
                      int n_ranks, const std::string& link_class,
                      CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring);
// The alpha-beta model alone (ignores calibrated curves).
Ps collective_model_time_ps(const HardwareProfile& profile, CollectivePrimitive primitive, Bytes bytes_total,
                            int n_ranks, const std::string& link_class,
                            CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring);

// Steps fidelity. Supported: ring (all_reduce, reduce_scatter, all_gather, all_to_all), pairwise
// (same four), direct (same four), tree (all_reduce). Throws std::invalid_argument otherwise.
CollectiveSchedule collective_steps(const HardwareProfile& profile, CollectivePrimitive primitive,
                                    Bytes bytes_total, int n_ranks, const std::string& link_class,
                                    CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring);

// Size of chunk c when S bytes are cut into n chunks (the first S % n chunks get one byte more).
Bytes chunk_bytes(Bytes total, int n, int c);

}  // namespace overlap
