#include "cost_model/nccl_tuning.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace overlap {
namespace {

using A = NcclAlgorithm;
using P = NcclProtocol;

bool is_rs_or_ag(CollectivePrimitive p) {
  return p == CollectivePrimitive::reduce_scatter || p == CollectivePrimitive::all_gather;
}

// NCCL's nsteps per collective (tuning.cc): the ring's steps, which also sizes its bus -> algorithm
// bandwidth conversion.
int ring_nsteps(CollectivePrimitive p, int n) {
  if (p == CollectivePrimitive::all_reduce) return 2 * (n - 1);
  if (is_rs_or_ag(p)) return n - 1;
  return n;  // broadcast, reduce
}

// NCCL's size correction of tree bandwidth (tuning.cc treeCorrectionFactor), by protocol and
// log2(bytes / 64); trees fall short of their model for medium sizes.
constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

NcclCost unavailable(std::string why) {
  NcclCost c;
  c.available = false;
  c.why_not = std::move(why);
  return c;
}

int max_threads(const NcclCommunicator& comm, A a, P p) {
  switch (p) {
    case P::LL: return kNcclLLMaxThreads;
    case P::LL128: return kNcclLL128MaxThreads;
    case P::Simple:
      if (a == A::Ring) return comm.bus_bw_gbps <= kNcclPciBwGbps ? 256 : kNcclSimpleMaxThreads;
      if (a == A::Tree) return kNcclSimpleMaxThreads;
      return kNcclMaxThreads;  // NVLS, NVLSTree, CollNet, PAT
  }
  return kNcclSimpleMaxThreads;
}

long long thread_threshold(const NcclCommunicator& comm, A a, P p) {
  if ((a == A::CollnetDirect || a == A::CollnetChain) && p == P::Simple) return kNcclCollnetThreadThreshold;
  switch (p) {
    case P::LL: return static_cast<long long>(kNcclLLThreadThreshold) * (a == A::Ring ? comm.n_ranks : 1);
    case P::LL128: return kNcclLL128ThreadThreshold;
    case P::Simple: return kNcclSimpleThreadThreshold;
  }
  return kNcclSimpleThreadThreshold;
}

}  // namespace

int nccl_log2i(long long v) {
  if (v <= 0) return -1;
  int l = 0;
  while (v >>= 1) ++l;
  return l;
}

int nccl_spine_hops(const NcclCommunicator& comm, CollectivePrimitive p, NcclAlgorithm a) {
  if (comm.leaves <= 1) return 0;
  const int nodes = comm.n_nodes;
  // At least one level when the nodes span two leaves (a tree over them must cross once each way).
  const int levels = std::max(1, nccl_log2i(nodes) - nccl_log2i(comm.nodes_per_leaf));
  switch (a) {
    case A::Ring:
      if (p == CollectivePrimitive::all_reduce) return std::min(2 * (nodes - 1), 2 * comm.leaves);
      if (is_rs_or_ag(p)) return std::min(nodes - 1, comm.leaves);
      return 1;  // broadcast, reduce: the pipeline's one network step
    case A::Tree:
    case A::NVLSTree:
      return 2 * levels;
    case A::PAT:
      return levels;
    case A::CollnetDirect:
    case A::CollnetChain:
    case A::NVLS:
      return 1;
    case A::SendRecv: {
      const long long own_leaf = static_cast<long long>(comm.nodes_per_leaf) * comm.ranks_per_node;
      return static_cast<int>(std::max<long long>(0, comm.n_ranks - own_leaf));
    }
  }
  return 0;
}

NcclHw nccl_hw_of_link_class(const HardwareProfile& hw, const std::string& link_class) {
  const auto it = hw.comm.link_kinds.find(link_class);
  if (it != hw.comm.link_kinds.end()) return it->second;
  if (link_class == "network" || link_class == "net" || link_class == "ib" || link_class == "roce" ||
      link_class == "ethernet")
    return NcclHw::net;
  if (link_class == "pcie" || link_class == "pci" || link_class == "host") return NcclHw::pci;
  return NcclHw::nvlink;
}

NcclCommunicator nccl_communicator(const HardwareProfile& hw, int n_ranks, const std::string& link_class,
                                   int group_ranks_per_node) {
  if (n_ranks < 2) throw std::invalid_argument("NCCL model: a communicator needs at least 2 ranks");
  const FabricSpec& f = hw.fabric;
  const auto it = f.links.find(link_class);
  if (it == f.links.end()) throw std::invalid_argument("collective model: unknown link class '" + link_class + "'");
  NcclCommunicator c;
  c.n_ranks = n_ranks;
  c.collective_hw = nccl_hw_of_link_class(hw, link_class);
  if (f.topology == "multi_node" && f.gpus_per_node > 0 && group_ranks_per_node > 0) {
    // The group's own placement: a group strided over the job's GPUs (a data-parallel group with TP
    // innermost) has fewer of its ranks on each node than the node holds, so it spans more nodes, and
    // its channels leave each node only through the NICs of its own ranks' rails.
    const int per_node = std::min({group_ranks_per_node, f.gpus_per_node, n_ranks});
    c.n_nodes = (n_ranks + per_node - 1) / per_node;
  } else if (f.topology == "multi_node" && f.gpus_per_node > 0) {
    c.n_nodes = (n_ranks + f.gpus_per_node - 1) / f.gpus_per_node;
    // A collective on the network among no more ranks than a node holds is a group with one rank per
    // node: a data-parallel group of the TP groups' counterparts (Megatron's rank order, ranks
    // r + j x tp; sim/schemes/data_parallel.cpp), each member on its own node and NIC.
    if (c.n_nodes == 1 && c.collective_hw == NcclHw::net && f.links.count("nvlink")) c.n_nodes = n_ranks;
  }
  c.ranks_per_node = (n_ranks + c.n_nodes - 1) / c.n_nodes;
  c.intra_hw = f.topology == "multi_node" && f.links.count("nvlink") ? nccl_hw_of_link_class(hw, "nvlink") : c.collective_hw;
  c.full_mesh = f.topology == "full_mesh";
  c.nvswitch = f.topology == "nvswitch" || f.topology == "multi_node";
  double port_gbps = it->second.bandwidth_gbps;
  // A full mesh splits a GPU's bandwidth over its N-1 peers, one link each (fabric_topology.cpp); a
  // collective over n of the N GPUs can drive only n-1 of those links.
  const int all = f.num_gpus;
  if (c.full_mesh && all > 1 && n_ranks < all)
    port_gbps *= static_cast<double>(n_ranks - 1) / static_cast<double>(all - 1);
  c.port_gbps = port_gbps;
  c.gpu_bus_gbps = port_gbps * hw.comm.bandwidth_efficiency;
  c.bus_bw_gbps = c.gpu_bus_gbps;
  c.intra_bus_gbps = c.bus_bw_gbps;
  c.channels = std::max(1, hw.comm.channels);
  const auto nvlink = f.links.find("nvlink");
  if (c.n_nodes > 1 && nvlink != f.links.end()) {
    // NCCL's topology search across nodes (src/graph/search.cc): each channel's ring or tree enters and
    // leaves a node through one NIC, the channels spread over every NIC the node's ranks reach (a NIC
    // under another GPU's PCIe switch through PXN), so the node's network rate is the sum of its NICs;
    // inside the node every channel crosses NVLink. GPUs share NICs evenly (fabric_topology.cpp);
    // ranks r / ranks_per_node share a node, consecutive ranks a NIC.
    const int per_node = f.gpus_per_node;
    const int nics_per_node = f.nics_per_node > 0 ? std::min(f.nics_per_node, per_node) : per_node;
    c.ranks_per_nic = std::max(1, per_node / nics_per_node);
    c.nics = std::min(c.channels, (c.ranks_per_node + c.ranks_per_nic - 1) / c.ranks_per_nic);
    c.intra_port_gbps = nvlink->second.bandwidth_gbps;
    c.intra_bus_gbps = c.intra_port_gbps * hw.comm.bandwidth_efficiency;
    c.inter_bus_gbps = c.nics * it->second.bandwidth_gbps * f.nic_efficiency;
    c.bus_bw_gbps = std::min(c.intra_bus_gbps, c.inter_bus_gbps);
  }
  // NVLS needs an NVSwitch with NVLink SHARP and at least two channels (tuning.cc), and a generation
  // NCCL gives an NVLS efficiency (Hopper on).
  // NVLS multicasts among a node's GPUs: a group with one rank per node has none to multicast to
  // (src/transport/nvls.cc ncclNvlsInit: no NVLS with fewer than two of the communicator's GPUs).
  if (hw.comm.nvlink_sharp && c.nvswitch && hw.comm.nvls_channels >= 2 && hw.comm.tuner.nvls_efficiency > 0 &&
      c.ranks_per_node >= 2)
    c.nvls_channels = hw.comm.nvls_channels;
  c.collnet = hw.comm.collnet;
  if (c.n_nodes > 1 && f.nodes_per_leaf > 0 && f.nodes_per_leaf < c.n_nodes) {
    c.nodes_per_leaf = f.nodes_per_leaf;
    c.leaves = (c.n_nodes + f.nodes_per_leaf - 1) / f.nodes_per_leaf;
    c.spine_hop_us = 2.0 * f.switch_latency_us;
  }
  c.arch_index = c.n_nodes <= 2 ? c.n_nodes - 1 : 2;
  return c;
}

namespace {

// Why NCCL's tuner would not consider algorithm `a` with protocol `proto` for `p` on `comm`
// (tuning.cc); "" when it would. all_to_all and SendRecv are handled by the caller.
std::string why_unavailable(const NcclCommunicator& comm, CollectivePrimitive p, NcclAlgorithm a, NcclProtocol proto) {
  const int n = comm.n_ranks;
  const int nodes = comm.n_nodes;
  const bool ar = p == CollectivePrimitive::all_reduce;
  const std::string coll = collective_primitive_name(p);
  if ((p == CollectivePrimitive::broadcast || p == CollectivePrimitive::reduce) && a != A::Ring)
    return coll + " runs only as Ring";
  if (is_rs_or_ag(p) && a != A::Ring && a != A::PAT && a != A::NVLS && a != A::CollnetDirect)
    return coll + " runs as Ring, PAT, NVLS or CollnetDirect";
  if (ar && a == A::PAT) return "PAT runs only reduce_scatter and all_gather";
  const bool simple_only = a == A::NVLS || a == A::NVLSTree || a == A::PAT || a == A::CollnetDirect || a == A::CollnetChain;
  if (simple_only && proto != P::Simple) return std::string(nccl_algorithm_name(a)) + " runs only the Simple protocol";
  if ((a == A::NVLS || a == A::NVLSTree) && comm.nvls_channels < 2)
    return std::string(nccl_algorithm_name(a)) +
           " needs an NVSwitch with NVLink SHARP (comm.nvlink_sharp: true, comm.nvls_channels >= 2, "
           "comm.arch hopper or later)";
  if (a == A::NVLSTree && nodes == 1) return "NVLSTree runs only across nodes (NCCL disables it on one node)";
  if (a == A::NVLS && nodes > 1 && !comm.collnet) return "NVLS across nodes needs CollNet (comm.collnet: true)";
  if (a == A::NVLS && nodes > 1 && is_rs_or_ag(p)) return "NVLS " + coll + " across nodes needs CollNet support NCCL lacks here";
  if (a == A::PAT && nodes != n) return "PAT runs only with one GPU per node";
  if (a == A::CollnetDirect || a == A::CollnetChain) {
    if (!comm.collnet) return std::string(nccl_algorithm_name(a)) + " needs a network with SHARP (comm.collnet: true)";
    if (nodes == 1) return std::string(nccl_algorithm_name(a)) + " runs only across nodes";
    if (a == A::CollnetDirect && !comm.nvswitch) return "CollnetDirect needs an NVSwitch node";
    if (a == A::CollnetDirect && is_rs_or_ag(p)) return "CollnetDirect " + coll + " needs one NIC per GPU with CollNet support";
  }
  return {};
}

// The bus bandwidth NCCL's model gives (tuning.cc ncclTopoTuneModel): the graph's, refined per
// algorithm and protocol. Not positive: the algorithm has no bandwidth on this communicator.
double nccl_bus_bandwidth_gbps(const HardwareProfile& hw, const NcclCommunicator& comm, CollectivePrimitive p,
                               NcclAlgorithm a, NcclProtocol proto) {
  const NcclTunerConstants& k = hw.comm.tuner;
  const int nodes = comm.n_nodes;
  const int ppn = comm.ranks_per_node;
  const auto ai = static_cast<std::size_t>(comm.arch_index);
  const bool ar = p == CollectivePrimitive::all_reduce;
  const double nch = comm.channels;
  double bus = comm.bus_bw_gbps;
  if (a == A::NVLS || a == A::NVLSTree) {
    const double vch = comm.nvls_channels;
    const double per = comm.intra_bus_gbps / vch;
    double intra = per * k.nvls_efficiency * (vch - 1) / vch;
    intra *= ar ? 2.0 : static_cast<double>(ppn - 1) / ppn;  // all-reduce pipelines its two halves
    double bw = intra;
    // Across nodes the node's NICs bound it, shared by the NVLS channels (one node: no network hop;
    // NCCL's single-node NVLS graph has no inter bandwidth below its intra one).
    if (nodes > 1) bw = std::min(bw, comm.inter_bus_gbps / vch * ((nodes <= 2 && a == A::NVLSTree) ? 2.0 : 1.0));
    if (a == A::NVLSTree) bw = std::min(bw, k.nvls_tree_channel_gbps[ai]);
    bus = vch * bw;
  }
  if (a == A::Ring && proto == P::LL) bus = std::min(k.ll_max_bw_gbps[ai], bus * 0.5);
  if (a == A::Ring && proto == P::LL128) bus = std::min(bus * 0.92, nch * k.ring_ll128_channel_gbps[ai]);
  if (a == A::Tree && ar) bus = std::min(bus * 0.92, nch * k.tree_channel_gbps[ai]);
  if (a == A::Tree && proto == P::LL) bus = std::min(bus / 3.8, k.ll_max_bw_gbps[ai]);
  if (a == A::Tree && proto == P::LL128)
    bus = std::min(bus * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), nch * k.tree_ll128_channel_gbps[ai]);
  if (a == A::PAT) bus *= 0.75;
  // CollNet's graph is the node's NVLink side (NCCL takes its bwIntra): the switches reduce, so each
  // node sends its data into the network once.
  if (a == A::CollnetDirect || a == A::CollnetChain) bus = comm.intra_bus_gbps;
  if (a == A::CollnetDirect) {
    // NCCL assumes a NIC per GPU: fewer channels than GPUs per node share them.
    double factor = static_cast<double>(ppn) / nch;
    factor -= (factor - 1) / 2;
    bus /= factor;
    if (hw.comm.arch == NcclArch::hopper || hw.comm.arch == NcclArch::blackwell) bus *= 0.85;
  }
  return bus;
}

// The algorithm bandwidth of bus bandwidth `bus` (NCCL's conversion, and the link's bound on NVLS).
double nccl_algorithm_bandwidth_gbps(const NcclCommunicator& comm, CollectivePrimitive p, NcclAlgorithm a, double bus) {
  const int n = comm.n_ranks;
  const int nodes = comm.n_nodes;
  const bool ar = p == CollectivePrimitive::all_reduce;
  // Bus -> algorithm bandwidth: a ring moves S * nsteps / n per port; trees and CollNet 2 S;
  // all-gather / reduce-scatter other than the ring are left as they are (tuning.cc).
  double ratio = 1.0;
  if (!(a != A::Ring && is_rs_or_ag(p))) {
    if (a == A::Ring || a == A::NVLS || a == A::NVLSTree) ratio = static_cast<double>(n) / ring_nsteps(p, n);
    else ratio = 0.5;
  }
  double algbw = bus * ratio;
  // NVLS moves (n+1)/n x S through each GPU's switch link each way for an all-reduce (facts.md, NCCL's
  // maintainers) and S for a reduce-scatter / all-gather: no faster than the link allows. NCCL's
  // formula does not bound it and runs past the link for few ranks (2 GPUs: 1.6x the ring's bus
  // bandwidth); measured NVLS on 2-4 H100s stays near the ring's (nccl issue 1455).
  if ((a == A::NVLS || a == A::NVLSTree) && nodes == 1) {
    const double traffic = ar ? static_cast<double>(n + 1) / n : 1.0;
    algbw = std::min(algbw, comm.bus_bw_gbps / traffic);
  }
  return algbw;
}

// The latency of one call (tuning.cc): the algorithm/protocol's base plus its hops, each at the
// latency of the hardware it crosses.
double nccl_latency_us(const HardwareProfile& hw, const NcclCommunicator& comm, CollectivePrimitive p, NcclAlgorithm a,
                       NcclProtocol proto) {
  const NcclTunerConstants& k = hw.comm.tuner;
  const int n = comm.n_ranks;
  const int nodes = comm.n_nodes;
  const int ppn = comm.ranks_per_node;
  const bool ar = p == CollectivePrimitive::all_reduce;
  const NcclLatency& l = k.at(a, proto);
  const auto hw_lat = [&](NcclAlgorithm alg, NcclHw h) {
    return k.at(alg, proto).hw_us[static_cast<std::size_t>(index_of(h))];
  };
  double intra_lat = hw_lat(a, comm.intra_hw);
  // With one GPU per node every hop is exposed at the network's (tree) latency.
  double inter_lat = ppn == 1 ? hw_lat(A::Tree, NcclHw::net) : hw_lat(a, NcclHw::net);
  double lat = l.base_us;
  const int nsteps = ring_nsteps(p, n);
  const int log2_nodes = nccl_log2i(nodes);
  switch (a) {
    case A::Ring:
      if (p == CollectivePrimitive::broadcast || p == CollectivePrimitive::reduce) {
        // A pipeline: every rank forwards as it receives; one step of latency (NCCL: rings on the
        // same channels).
        lat += hw_lat(A::Ring, nodes == 1 ? comm.intra_hw : NcclHw::net);
      } else {
        // Across nodes every ring step also pays the network's post overhead (1 us on x86, x3 for
        // Simple: getNetOverhead).
        if (nodes > 1) intra_lat = std::max(intra_lat, proto == P::Simple ? 3.0 : 1.0);
        const int inter_steps = nodes == 1 ? 0 : ar ? 2 * (nodes - 1) : nodes - 1;
        lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
      }
      break;
    case A::Tree:
      if (ar) lat += 2 * ((ppn - 1) * intra_lat + log2_nodes * inter_lat);
      break;
    case A::CollnetDirect:
      lat += 2 * (std::min(1, ppn - 1) * intra_lat + (ppn - 1) * 0.4) + inter_lat;
      break;
    case A::CollnetChain:
      lat += 2 * (ppn - 1) * intra_lat + inter_lat;
      break;
    case A::NVLS:
      lat = intra_lat + (nodes > 1 ? inter_lat : 0.0);
      break;
    case A::NVLSTree:
      lat += intra_lat + 2 * log2_nodes * inter_lat;
      break;
    case A::PAT:
      lat += log2_nodes * (inter_lat / 3.5) + n * 2.8;
      break;
    case A::SendRecv:
      break;
  }
  return lat + nccl_spine_hops(comm, p, a) * comm.spine_hop_us;
}

}  // namespace

NcclCost nccl_cost(const HardwareProfile& hw, const NcclCommunicator& comm, CollectivePrimitive p, NcclAlgorithm a,
                   NcclProtocol proto) {
  if (p == CollectivePrimitive::all_to_all) {
    if (a != A::SendRecv) return unavailable("all_to_all runs as grouped send/recv, not " + std::string(nccl_algorithm_name(a)));
    if (proto == P::LL128) return unavailable("send/recv uses LL or Simple");
    return nccl_p2p_cost(hw, comm, proto);
  }
  if (a == A::SendRecv) return unavailable("SendRecv is how all_to_all runs");
  std::string why = why_unavailable(comm, p, a, proto);
  if (!why.empty()) return unavailable(std::move(why));
  const double bus = nccl_bus_bandwidth_gbps(hw, comm, p, a, proto);
  if (!(bus > 0))
    return unavailable(std::string(nccl_algorithm_name(a)) + "/" + nccl_protocol_name(proto) +
                       " has no bandwidth on this communicator");
  NcclCost cost;
  cost.available = true;
  cost.bus_bandwidth_gbps = bus;
  cost.bandwidth_gbps = nccl_algorithm_bandwidth_gbps(comm, p, a, bus);
  cost.latency_us = nccl_latency_us(hw, comm, p, a, proto);
  // LL128 is on by default only where NCCL trusts it: NVLink inside the node (tuning.cc).
  if (proto == P::LL128 && comm.intra_hw != NcclHw::nvlink) cost.default_enabled = false;
  return cost;
}

NcclTime nccl_time(const NcclCommunicator& comm, const NcclCost& cost, CollectivePrimitive p, NcclAlgorithm a,
                   NcclProtocol proto, Bytes bytes) {
  NcclTime t;
  double bw = cost.bandwidth_gbps;
  double lat = cost.latency_us;
  const int log_size = nccl_log2i(bytes >> 6);
  if (a == A::Tree && p == CollectivePrimitive::all_reduce && log_size >= 0 && log_size < 23)
    bw *= kTreeCorrection[index_of(proto)][log_size];
  // Across nodes a Simple ring all-reduce of more than 64 bytes per rank and channel reaches a
  // latency plateau (tuning.cc ncclTopoGetAlgoTime).
  if (a == A::Ring && proto == P::Simple && comm.n_nodes > 1 && p == CollectivePrimitive::all_reduce &&
      bytes / (static_cast<long long>(comm.channels) * comm.n_ranks) >= 64)
    lat *= 1.4;
  t.latency_us = lat;
  t.bandwidth_gbps = bw;
  t.time_us = lat + static_cast<double>(bytes) / (1000.0 * bw);
  return t;
}

int nccl_channels(const HardwareProfile& hw, const NcclCommunicator& comm, NcclAlgorithm a, NcclProtocol proto,
                  Bytes bytes) {
  if (a == A::NVLS || a == A::NVLSTree) {
    // NVLS does not need more channels to reach its bandwidth, nor fewer for small messages.
    return comm.n_nodes > 1 && a == A::NVLS ? std::min(comm.nvls_channels, comm.channels) : comm.nvls_channels;
  }
  if (a == A::SendRecv) return nccl_p2p_channels(hw, comm, bytes);
  int nc = comm.channels;
  const long long nt = max_threads(comm, a, proto);
  const long long threshold = thread_threshold(comm, a, proto);
  // Fewer channels until each channel's threads have their minimum work (enqueue.cc).
  while (nc >= 2 && bytes < static_cast<long long>(nc) * nt * threshold) --nc;
  return nc;
}

NcclProtocol nccl_p2p_protocol(const HardwareProfile& hw, const NcclCommunicator& comm, Bytes bytes) {
  const Bytes per_peer = bytes / comm.n_ranks;
  const int per_peer_channels = std::max(1, hw.comm.p2p_channels / comm.n_ranks);
  return per_peer <= per_peer_channels * kNcclP2pLLThresholdBytes ? NcclProtocol::LL : NcclProtocol::Simple;
}

int nccl_p2p_channels(const HardwareProfile& hw, const NcclCommunicator& comm, Bytes bytes) {
  const Bytes per_peer = bytes / comm.n_ranks;
  const int per_peer_max = std::max(1, hw.comm.p2p_channels / comm.n_ranks);
  // A channel per 32 KiB a peer sends, up to the per-peer share of the p2p channels (enqueue.cc);
  // every rank is a peer, itself included (an all-to-all sends a block to itself too).
  const long long want = std::max<long long>(1, (per_peer + 32767) / 32768);
  const int per_peer_channels = static_cast<int>(std::min<long long>(per_peer_max, want));
  return std::min(hw.comm.p2p_channels, per_peer_channels * comm.n_ranks);
}

NcclCost nccl_p2p_cost(const HardwareProfile& hw, const NcclCommunicator& comm, NcclProtocol proto) {
  const NcclTunerConstants& k = hw.comm.tuner;
  const auto ai = static_cast<std::size_t>(comm.arch_index);
  const NcclLatency& l = k.at(A::Ring, proto);
  NcclCost c;
  c.available = true;
  // Send/recv runs on each GPU's own port (its own NIC across nodes), not the node's channel graph.
  double bus = comm.gpu_bus_gbps;
  if (proto == P::LL) bus = std::min(k.ll_max_bw_gbps[ai], bus * 0.5);
  c.bus_bandwidth_gbps = bus;
  // Each rank sends (n-1)/n of S, one block per peer, and receives as much. Inside a node every block
  // crosses the rank's port. Across nodes (one NIC per GPU, fabric_topology.cpp) only the blocks for
  // the ranks of other nodes, (n - ppn)/n of S, cross its NIC, while the (ppn - 1)/n for the ranks of
  // its own node move over NVLink at the same time: the slower of the two sets the time.
  const double n = comm.n_ranks;
  double s_per_bus_byte = (n - 1) / n / bus;
  const auto nvlink = hw.fabric.links.find("nvlink");
  if (comm.n_nodes > 1 && nvlink != hw.fabric.links.end()) {
    const double ppn = comm.ranks_per_node;
    double intra = nvlink->second.bandwidth_gbps * hw.comm.bandwidth_efficiency;
    if (proto == P::LL) intra = std::min(k.ll_max_bw_gbps[ai], intra * 0.5);
    s_per_bus_byte = std::max((n - ppn) / n / bus, (ppn - 1) / n / intra);
  }
  c.bandwidth_gbps = 1.0 / s_per_bus_byte;
  c.latency_us = l.base_us + (comm.n_ranks - 1) * l.hw_us[static_cast<std::size_t>(index_of(comm.collective_hw))] +
                 nccl_spine_hops(comm, CollectivePrimitive::all_to_all, A::SendRecv) * comm.spine_hop_us;
  return c;
}

}  // namespace overlap
