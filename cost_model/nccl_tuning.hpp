#pragma once
// NCCL's tuning model (src/graph/tuning.cc and src/enqueue.cc of https://github.com/NVIDIA/nccl; read
// to learn the model, no code copied), over a HardwareProfile instead of a probed topology:
//
//  - per (collective, algorithm, protocol): a latency (base + steps x per-step latency of the link
//    kind each step crosses) and a bandwidth: the bus bandwidth of NCCL's ring graph (here the link
//    class's bandwidth x comm.bandwidth_efficiency), refined per protocol (LL carries 4 data bytes in
//    8, LL128 120 in 128, capped per channel), converted to algorithm bandwidth (ring: nRanks/nsteps,
//    tree: 1/2);
//  - predicted time t = latency + S / bandwidth (S: nccl-tests' size, the full array), with NCCL's
//    size-dependent correction for trees;
//  - the choice: minimum predicted time among what the profile enables (NCCL_ALGO / NCCL_PROTO-like
//    overrides, NVLS only with NVLink SHARP, LL128 by default only over NVLink);
//  - channels: NCCL's maximum, reduced for small messages until each channel's threads have their
//    minimum work (NVLS always uses comm.nvls_channels).
//
// What NCCL learns from probing (the graph's channel count and per-channel bandwidth, the node count)
// comes from the profile: fabric link classes, comm.channels / nvls_channels, gpus_per_node.
#include <optional>
#include <string>

#include "cost_model/collective_primitive.hpp"
#include "cost_model/hardware_profile.hpp"
#include "cost_model/nccl_constants.hpp"
#include "cost_model/units.hpp"

namespace overlap {

// What NCCL's tuner knows about one communicator of n_ranks GPUs whose collective runs on link_class.
struct NcclCommunicator {
  int n_ranks = 0;
  int n_nodes = 1;
  int ranks_per_node = 0;
  NcclHw intra_hw = NcclHw::nvlink;  // link kind inside a node
  NcclHw collective_hw = NcclHw::nvlink;  // link kind of the collective's slowest hop (link_class)
  bool full_mesh = false;            // direct links per pair (no switch)
  bool nvswitch = false;             // an NVSwitch joins the node's GPUs (CollnetDirect needs one)
  double port_gbps = 0;              // line rate of one GPU's port on the link class (full mesh: its share)
  // NCCL's ring graph bandwidth: nChannels x bwIntra. On one node the port's rate x
  // comm.bandwidth_efficiency; across nodes the lesser of a GPU's NVLink (intra_bus_gbps) and the
  // node's NICs (inter_bus_gbps), as NCCL's search gives every channel both an NVLink path and a NIC.
  double bus_bw_gbps = 0;
  double intra_bus_gbps = 0;         // a GPU's NVLink x comm.bandwidth_efficiency (one node: bus_bw_gbps)
  double inter_bus_gbps = 0;         // across nodes: nics x NIC rate x fabric.nic_efficiency (else 0)
  double gpu_bus_gbps = 0;           // one GPU's own port on the link class x comm.bandwidth_efficiency
  int nics = 0;                      // across nodes: NICs a node's ranks reach, one channel group each
  int ranks_per_nic = 1;             // across nodes: ranks of a node sharing one NIC
  double intra_port_gbps = 0;        // across nodes: the line rate of a GPU's NVLink port
  int channels = 1;                  // comm.channels (ring/tree graph channels)
  int nvls_channels = 0;             // 0 = NVLS unavailable
  bool collnet = false;
  // Across nodes: the leaf switches the communicator's nodes sit under (fabric.nodes_per_leaf, nodes in
  // rank order, consecutive nodes sharing a leaf; 1 = one switch tier) and what a hop between two
  // leaves adds to NCCL's network hop latency: the spine's two crossings (2 x fabric.switch_latency_us).
  int nodes_per_leaf = 0;  // 0: every node under one leaf
  int leaves = 1;
  double spine_hop_us = 0;
  int arch_index = 0;                // node-count class of the bandwidth caps: 0 one node, 1 two, 2 more
};

// Throws std::invalid_argument for an unknown link class or n_ranks < 2. group_ranks_per_node: how many
// of the group's ranks share a node (GroupPlacement in collective_model.hpp); 0 packs the group onto
// nodes in rank order, gpus_per_node to a node (a network-class group no larger than a node: one rank
// per node).
NcclCommunicator nccl_communicator(const HardwareProfile& hw, int n_ranks, const std::string& link_class,
                                   int group_ranks_per_node = 0);

// The latency / bandwidth NCCL's table holds for one (collective, algorithm, protocol), before the
// size-dependent corrections. available == false where NCCL leaves the entry at bandwidth 0 (the
// algorithm cannot run that collective with that protocol on this communicator).
struct NcclCost {
  bool available = false;
  bool default_enabled = true;  // false: runs only when forced (NCCL enables LL128 by default only over NVLink)
  double latency_us = 0;
  double bandwidth_gbps = 0;     // algorithm bandwidth: t = latency + S / bandwidth
  double bus_bandwidth_gbps = 0; // before NCCL's bus -> algorithm bandwidth conversion
  std::string why_not;           // when unavailable: the reason, for error messages
};

NcclCost nccl_cost(const HardwareProfile& hw, const NcclCommunicator& comm, CollectivePrimitive p,
                   NcclAlgorithm a, NcclProtocol proto);

// NCCL's predicted time of one call of `bytes` (nccl-tests' S) with that cost: latency (times NCCL's
// ring plateau factor across nodes) + S / bandwidth (times the tree correction by size). Also returns
// the size-independent part.
struct NcclTime {
  double time_us = 0;
  double latency_us = 0;
  double bandwidth_gbps = 0;  // the bandwidth the S-proportional part ran at (after corrections)
};
NcclTime nccl_time(const NcclCommunicator& comm, const NcclCost& cost, CollectivePrimitive p, NcclAlgorithm a,
                   NcclProtocol proto, Bytes bytes);

// Channels (CTAs, one SM each) NCCL launches for this call (enqueue.cc topoGetAlgoInfo).
int nccl_channels(const HardwareProfile& hw, const NcclCommunicator& comm, NcclAlgorithm a, NcclProtocol proto,
                  Bytes bytes);

// All-to-all as NCCL runs it: grouped send/recv, LL while each peer's bytes fit the LL threshold of
// its channels, else Simple; channels per peer grow with the bytes (32 KiB each), up to p2p_channels.
NcclProtocol nccl_p2p_protocol(const HardwareProfile& hw, const NcclCommunicator& comm, Bytes bytes);
int nccl_p2p_channels(const HardwareProfile& hw, const NcclCommunicator& comm, Bytes bytes);
// Send/recv cost: the ring's constants for that protocol over n-1 pairwise rounds (NCCL's tuner has
// no model of send/recv; its p2p schedule runs round i as send to rank+i, receive from rank-i). Across
// nodes a GPU's NIC carries only the blocks for the other nodes' ranks, NVLink the rest at once.
NcclCost nccl_p2p_cost(const HardwareProfile& hw, const NcclCommunicator& comm, NcclProtocol proto);

// The NCCL latency kind of a fabric link class (comm.link_kinds, else by name).
NcclHw nccl_hw_of_link_class(const HardwareProfile& hw, const std::string& link_class);

// floor(log2(v)) for v >= 1, -1 for v <= 0 (NCCL's log2i).
int nccl_log2i(long long v);

// The hops of one call that cross the spine (each adds comm.spine_hop_us to its latency), by
// algorithm, with the communicator's nodes in rank order under comm.leaves leaves:
//   ring all-reduce   min(2 (nodes - 1), 2 x leaves): a pass round the ring of nodes leaves each leaf
//                     once, NCCL's latency counts two passes; reduce-scatter / all-gather one pass,
//                     min(nodes - 1, leaves); broadcast / reduce the pipeline's one network step;
//   tree, NVLSTree    2 x max(1, log2(nodes) - log2(nodes_per_leaf)): the double binary tree's levels above
//                     a leaf, up and down; PAT the same levels once;
//   CollNet, NVLS     one: the switches' reduction tree reaches the spine;
//   send/recv         the rounds to ranks under another leaf: n - ranks under the rank's own leaf.
// 0 under one leaf. Exact counts of the model's terms (tests/cost_model/nccl_switch_tiers_test.cpp).
int nccl_spine_hops(const NcclCommunicator& comm, CollectivePrimitive p, NcclAlgorithm a);

}  // namespace overlap
