#pragma once
// All-to-all with unequal sizes (all-to-allv) as NCCL runs it: grouped ncclSend / ncclRecv, one send
// and one receive per peer inside ncclGroupStart / ncclGroupEnd (NCCL documentation, "Point-to-point
// communication: all-to-all(v)"). The per-pair bytes come from the caller, e.g. an MoE dispatch
// (cost_model/moe_routing.hpp); the imbalance model is FlashOverlap's (Sec. 4.2, online stage): the operation takes
// as long as its slowest GPU.
//
// One rank's time reuses the even all-to-all model (collective_model.hpp, NcclAlgorithm::SendRecv)
// rather than a second set of constants: a rank takes the time of the even all-to-all whose busiest
// port carries what this rank's busiest port carries (its "equivalent even size"). A rank's ports:
//   one node (NVSwitch, full mesh, PCIe): the larger of the bytes it sends to and receives from the
//     other ranks (the diagonal, a rank's own block, is a local copy on no port); the even size S
//     loads that port with S (n-1)/n, so the equivalent size is port x n / (n-1);
//   across nodes (multi_node): its NIC ("network" class; one NIC per GPU on rail-optimised profiles)
//     carries the bytes to / from ranks on other nodes; the even size S loads the busiest NIC with
//     S x remote / n (remote: the most peers on other nodes any rank has), so the equivalent size is
//     nic x n / remote. Its NVSwitch port ("nvlink" class) carries the bytes to / from the other ranks
//     of its node, priced as one node's port on the nvlink class (the model alone, no measured curve:
//     an all_to_all curve measures the operation across nodes). Both run at once: the rank's time is
//     the larger.
// Equivalent sizes round up, so a rank's time never falls when a pair's bytes grow. With all pairs
// equal the equivalent size is the even size itself, so the time, protocol, channels and steps are
// exactly those of plan_collective / collective_steps for CollectivePrimitive::all_to_all.
// Across nodes the even model prices the NIC's (n - ppn)/n of S and NVLink's (ppn - 1)/n at once
// (nccl_p2p_cost), so the equivalent size's time carries the NVLink part of an even operation too.
#include <string>
#include <vector>

#include "cost_model/collective_model.hpp"
#include "cost_model/hardware_profile.hpp"
#include "cost_model/units.hpp"

namespace overlap {

// bytes[src][dst] over n ranks (n x n, every entry >= 0). bytes[r][r] is rank r's own block.
using PairBytes = std::vector<std::vector<Bytes>>;

// The ports one rank's traffic loads (see the header comment). Within one node, inter_node_* are 0.
struct AllToAllvPorts {
  Bytes send_intra_node = 0;  // to other ranks of its node (one node: to every other rank)
  Bytes recv_intra_node = 0;
  Bytes send_inter_node = 0;  // to ranks on other nodes, through its NIC
  Bytes recv_inter_node = 0;
};

struct AllToAllvCost {
  Ps time_ps = 0;                            // the whole operation: max over ranks of rank_time_ps
  int slowest_rank = -1;                     // the first rank with time_ps (-1 when nothing moves)
  std::vector<Ps> rank_time_ps;              // per rank
  std::vector<Bytes> rank_equivalent_bytes;  // per rank: the even size whose time it takes (binding port)
  std::vector<AllToAllvPorts> ports;
  CollectivePlan slowest_plan;  // the even plan the slowest rank's time comes from (protocol, channels)
};

// The curve-fidelity time of the whole operation. link_class: the class the even all-to-all of these
// ranks runs on (as for plan_collective; across nodes "network"). Throws std::invalid_argument for a
// matrix that is not square or has a negative entry, and what plan_collective throws.
AllToAllvCost all_to_allv_cost(const HardwareProfile& hw, const PairBytes& bytes, const std::string& link_class,
                               const CollectiveOverrides& overrides = {});

// The steps-fidelity schedule, in collective_steps()'s shape: NCCL's p2p rounds (round i: rank r sends
// bytes[r][r+i] to rank r+i and receives bytes[r-i][r] from rank r-i; on a full mesh or across nodes
// every peer in one step), with the latencies and protocol bandwidth of the slowest rank's even schedule. With all pairs
// equal it is collective_steps(all_to_all) of the same total. The self blocks move on no link and are
// not in the schedule; bytes_total is the whole matrix.
CollectiveSchedule all_to_allv_steps(const HardwareProfile& hw, const PairBytes& bytes, const std::string& link_class,
                                     const CollectiveOverrides& overrides = {});

// The ports of every rank (ranks_per_node 0: one node).
std::vector<AllToAllvPorts> all_to_allv_ports(const PairBytes& bytes, int ranks_per_node);

}  // namespace overlap
