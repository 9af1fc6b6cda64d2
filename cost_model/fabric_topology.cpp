// Topology presets -> fabric graph (design.md "Fabric": GPU ports, switches, PCIe root/host, NICs;
// directed links with capacity and latency). Link class names the presets use:
//   nvswitch, full_mesh: "nvlink";  pcie: "pcie" and "host" (the CPU interconnect between NUMA
//   nodes, e.g. UPI/Infinity Fabric);  multi_node: "nvlink" and "network" (NIC port, e.g. IB);
//   virtual: "d2d" (a device-to-device copy between partitions of one GPU) or "pcie" (staged
//   through pinned host memory).
// A class's latency is that of one GPU-to-GPU transfer over the class; a route through a switch has
// two edges of the class, so each edge touching a switch carries half of it.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "cost_model/hardware_profile.hpp"

namespace overlap {
namespace {

const LinkClass& need_class(const FabricSpec& f, const std::string& name) {
  const auto it = f.links.find(name);
  if (it == f.links.end()) {
    throw std::invalid_argument("fabric topology '" + f.topology + "' needs link class '" + name +
                                "' under links");
  }
  return it->second;
}

int add_node(FabricSpec& f, std::string name, FabricNodeKind kind, int gpu = -1) {
  f.nodes.push_back(FabricNode{std::move(name), kind, gpu});
  return static_cast<int>(f.nodes.size()) - 1;
}

// Both directions of a full-duplex link; `bandwidth_gbps` is per direction.
void add_duplex(FabricSpec& f, int a, int b, const LinkClass& lc, double bandwidth_gbps, double latency_us) {
  f.edges.push_back(FabricEdge{a, b, lc.name, bandwidth_gbps, latency_us});
  f.edges.push_back(FabricEdge{b, a, lc.name, bandwidth_gbps, latency_us});
}

void add_gpus(FabricSpec& f) {
  for (int g = 0; g < f.num_gpus; ++g) add_node(f, "gpu" + std::to_string(g), FabricNodeKind::gpu, g);
}

void expand_nvswitch(FabricSpec& f) {
  const LinkClass& nv = need_class(f, "nvlink");
  add_gpus(f);
  const int sw = add_node(f, "nvswitch", FabricNodeKind::nvswitch);
  for (int g = 0; g < f.num_gpus; ++g) add_duplex(f, g, sw, nv, nv.bandwidth_gbps, nv.latency_us / 2);
}

// Direct GPU-GPU links: a GPU's port bandwidth is split evenly over its n-1 peers (an A800 or MI300X
// style mesh where each pair has its own links).
void expand_full_mesh(FabricSpec& f) {
  const LinkClass& nv = need_class(f, "nvlink");
  add_gpus(f);
  const double per_pair = f.num_gpus > 1 ? nv.bandwidth_gbps / (f.num_gpus - 1) : nv.bandwidth_gbps;
  for (int a = 0; a < f.num_gpus; ++a) {
    for (int b = a + 1; b < f.num_gpus; ++b) add_duplex(f, a, b, nv, per_pair, nv.latency_us);
  }
}

// GPUs under one PCIe switch per NUMA node, each switch under its NUMA node's host (root complex);
// hosts joined pairwise by the CPU interconnect (flashoverlap-paper Sec. 6.1.1: the RTX 4090 server's
// GPU traffic traverses PCIe across NUMA nodes).
void expand_pcie(FabricSpec& f) {
  const LinkClass& pcie = need_class(f, "pcie");
  const int per_numa = f.gpus_per_numa > 0 ? f.gpus_per_numa : f.num_gpus;
  const int numa_nodes = (f.num_gpus + per_numa - 1) / per_numa;
  const LinkClass* host = numa_nodes > 1 ? &need_class(f, "host") : nullptr;
  add_gpus(f);
  std::vector<int> hosts;
  for (int n = 0; n < numa_nodes; ++n) {
    const std::string prefix = "numa" + std::to_string(n) + ".";
    const int sw = add_node(f, prefix + "pcie_switch", FabricNodeKind::pcie_switch);
    const int h = add_node(f, prefix + "host", FabricNodeKind::host);
    hosts.push_back(h);
    add_duplex(f, sw, h, pcie, pcie.bandwidth_gbps, 0);
    for (int g = n * per_numa; g < std::min(f.num_gpus, (n + 1) * per_numa); ++g) {
      add_duplex(f, g, sw, pcie, pcie.bandwidth_gbps, pcie.latency_us / 2);
    }
  }
  for (std::size_t a = 0; a < hosts.size(); ++a) {
    for (std::size_t b = a + 1; b < hosts.size(); ++b) {
      add_duplex(f, hosts[a], hosts[b], *host, host->bandwidth_gbps, host->latency_us);
    }
  }
}

// Nodes of gpus_per_node GPUs on an NVSwitch each, with nics_per_node NICs each (GPUDirect RDMA; 0 =
// one per GPU; fewer NICs are shared evenly, GPU g of a node on NIC g / (gpus_per_node / nics), as
// GPUs share the NIC under their PCIe switch). Without rails every NIC is on one network switch.
// Rail-optimised (the DGX SuperPOD layout): NIC i of every node is on rail switch i, and the rail
// switches are joined by a non-blocking spine, so traffic between same-rail NICs of two nodes
// crosses one switch and other pairs cross rail, spine, rail.
void expand_multi_node(FabricSpec& f) {
  const LinkClass& nv = need_class(f, "nvlink");
  const LinkClass& net = need_class(f, "network");
  const int per_node = f.gpus_per_node > 0 ? f.gpus_per_node : f.num_gpus;
  const int nodes = (f.num_gpus + per_node - 1) / per_node;
  const int nics = f.nics_per_node > 0 ? std::min(f.nics_per_node, per_node) : per_node;
  const int gpus_per_nic = (per_node + nics - 1) / nics;
  add_gpus(f);
  std::vector<int> net_sw;
  if (!f.rails) {
    net_sw.push_back(add_node(f, "network_switch", FabricNodeKind::network_switch));
  } else {
    const int spine = add_node(f, "spine", FabricNodeKind::network_switch);
    for (int i = 0; i < nics; ++i) {
      net_sw.push_back(add_node(f, "rail" + std::to_string(i), FabricNodeKind::network_switch));
      // Non-blocking: the spine port of a rail carries what all its NICs can send.
      add_duplex(f, net_sw.back(), spine, net, net.bandwidth_gbps * nodes, 0);
    }
  }
  for (int n = 0; n < nodes; ++n) {
    const std::string prefix = "node" + std::to_string(n) + ".";
    const int sw = add_node(f, prefix + "nvswitch", FabricNodeKind::nvswitch);
    int nic = -1;
    for (int g = n * per_node; g < std::min(f.num_gpus, (n + 1) * per_node); ++g) {
      add_duplex(f, g, sw, nv, nv.bandwidth_gbps, nv.latency_us / 2);
      const int local = g - n * per_node;
      const int rail = local / gpus_per_nic;
      const bool first = local % gpus_per_nic == 0;
      // One NIC per GPU keeps its GPU's name; a shared NIC is named by node and index.
      if (first)
        nic = add_node(f, gpus_per_nic == 1 ? "nic" + std::to_string(g) : prefix + "nic" + std::to_string(rail),
                       FabricNodeKind::nic);
      add_duplex(f, g, nic, net, net.bandwidth_gbps, 0);
      if (first)
        add_duplex(f, nic, net_sw[f.rails ? static_cast<std::size_t>(rail) : 0], net, net.bandwidth_gbps,
                   net.latency_us / 2);
    }
  }
}

// T virtual ranks on one physical GPU (the calibration's single-GPU host). d2d: every rank reaches
// the others through the GPU's memory system (one hub; the HBM the copies read and write is the
// engine's shared HBM resource). host: a copy is staged through pinned host memory, so every rank's
// traffic shares the one PCIe link of the physical GPU (D2H on its up direction, H2D on its down).
void expand_virtual(FabricSpec& f) {
  add_gpus(f);
  if (f.virtual_link == "host") {
    const LinkClass& pcie = need_class(f, "pcie");
    const int out = add_node(f, "gpu.out", FabricNodeKind::gpu_memory);
    const int in = add_node(f, "gpu.in", FabricNodeKind::gpu_memory);
    const int host = add_node(f, "host", FabricNodeKind::host);
    // Inside the GPU the partitions are not the limit: the PCIe link (and HBM) are.
    constexpr double kOnChipGbps = 1e6;
    for (int g = 0; g < f.num_gpus; ++g) {
      f.edges.push_back(FabricEdge{g, out, pcie.name, kOnChipGbps, 0});
      f.edges.push_back(FabricEdge{in, g, pcie.name, kOnChipGbps, 0});
    }
    f.edges.push_back(FabricEdge{out, host, pcie.name, pcie.bandwidth_gbps, pcie.latency_us / 2});
    f.edges.push_back(FabricEdge{host, in, pcie.name, pcie.bandwidth_gbps, pcie.latency_us / 2});
    return;
  }
  const LinkClass& d2d = need_class(f, "d2d");
  const int hub = add_node(f, "gpu.memory", FabricNodeKind::gpu_memory);
  for (int g = 0; g < f.num_gpus; ++g) add_duplex(f, g, hub, d2d, d2d.bandwidth_gbps, d2d.latency_us / 2);
}

}  // namespace

void expand_topology(FabricSpec& fabric) {
  if (fabric.topology == "explicit") return;
  if (fabric.num_gpus <= 0) throw std::invalid_argument("fabric.num_gpus must be positive");
  fabric.nodes.clear();
  fabric.edges.clear();
  if (fabric.topology == "nvswitch") {
    expand_nvswitch(fabric);
  } else if (fabric.topology == "full_mesh") {
    expand_full_mesh(fabric);
  } else if (fabric.topology == "pcie") {
    expand_pcie(fabric);
  } else if (fabric.topology == "multi_node") {
    expand_multi_node(fabric);
  } else if (fabric.topology == "virtual") {
    expand_virtual(fabric);
  } else {
    throw std::invalid_argument("unknown fabric topology '" + fabric.topology + "'");
  }
}

}  // namespace overlap
