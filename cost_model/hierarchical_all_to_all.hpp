#pragma once
// The hierarchical all-to-all across nodes: a node's tokens for another node are gathered over NVLink
// on one GPU of the node, exchanged between the two nodes as one message over that GPU's NIC, and
// scattered over NVLink to their GPUs on arrival (DeepSpeed-MoE, Rajbhandari et al., ICML 2022,
// Sec. 5.3 "hierarchical all-to-all": an intra-node step then an inter-node step, so a GPU sends
// O(nodes) network messages instead of O(GPUs); Tutel's 2DH all-to-all, Hwang et al. 2023 Sec. 3.3, the
// same idea). Three phases, one after the other (each a grouped send/recv that needs the previous
// one's data):
//   gather    GPU i of node n sends, for every other node m, what it holds for m's GPUs to GPU
//             m mod g of its node (the node's exchanger for m); the node's own traffic (to its other
//             GPUs) goes straight to its GPU in this phase;
//   exchange  node n's exchanger for m sends node n's whole block for m to node m's exchanger for n
//             (GPU n mod g of node m), over its NIC;
//   scatter   each exchanger sends what it received to the GPUs of its node it is for.
// A phase takes its busiest GPU's busier direction over its port's rate plus the phase's fixed cost
// (a grouped NCCL send/recv: transports.nccl_p2p.latency_us, and the network link's latency for the
// exchange); a phase with nothing to move costs nothing. With fewer other nodes than GPUs in a node
// only nodes - 1 NICs carry the exchange: the price of sending one message per node pair.
#include <vector>

#include "cost_model/all_to_allv.hpp"
#include "cost_model/hardware_profile.hpp"
#include "cost_model/units.hpp"

namespace overlap {

struct HierarchicalRates {
  double nvlink_gbps = 0;      // one GPU's NVLink port, one way
  double nic_gbps = 0;         // one GPU's NIC (its share of the node's NICs)
  double nvlink_phase_us = 0;  // fixed cost of a gather or scatter
  double network_phase_us = 0; // fixed cost of the exchange
};

// One phase's busiest GPU: the larger of what it sends and receives, in bytes, per GPU of the group.
struct HierarchicalPhaseBytes {
  std::vector<Bytes> send, recv;
};

struct HierarchicalAllToAll {
  HierarchicalPhaseBytes gather, exchange, scatter;
  Ps gather_ps = 0, exchange_ps = 0, scatter_ps = 0;
  Ps time_ps = 0;  // the three phases in turn
};

// pairs[src][dst] over nodes x gpus_per_node GPUs, node by node. Throws std::invalid_argument when the
// group is not a whole number of nodes (at least two) or the matrix is not square with entries >= 0.
HierarchicalAllToAll hierarchical_all_to_all(const PairBytes& pairs, int gpus_per_node, const HierarchicalRates& rates);

// The rates of a multi_node profile: NVLink as deepep_rates takes it (fabric.links.nvlink x
// comm.bandwidth_efficiency), the NIC share (fabric.links.network x fabric.nic_efficiency x nics_per_node
// / gpus_per_node), the fixed costs above. Throws std::invalid_argument for a profile without both.
HierarchicalRates hierarchical_rates(const HardwareProfile& hw);

}  // namespace overlap
