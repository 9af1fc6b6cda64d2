#include "sim/node_builder.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "sim/transfer_price.hpp"

namespace overlap::sim {

NodeConfig make_node(const HardwareProfile& profile, int ranks) {
  FabricSpec spec = profile.fabric;
  if (spec.nodes.empty()) expand_topology(spec);
  if (ranks < 1 || ranks > spec.num_gpus)
    throw std::invalid_argument(fmt::format("profile '{}' has {} GPUs; {} ranks asked", profile.name,
                                            spec.num_gpus, ranks));
  NodeConfig node;
  node.launch_gap_ps = profile.launch.gap_ps();
  node.launch_host_ps = profile.launch.host_ps();
  node.shared_host = profile.launch.shared_host;
  node.sync_host_ps = profile.launch.sync_host_ps();
  const bool virtual_ranks = spec.topology == "virtual";
  for (int r = 0; r < spec.num_gpus; ++r) {
    GpuConfig g{profile.gpu.sm_count, profile.gpu.copy_engines, virtual_ranks ? 0 : -1,
                profile.gpu.gemm_comm_interference, profile.gpu.gemm_full_rate_sms,
                profile.gpu.hbm_bandwidth_gbps > 0 ? ps_from_us(profile.gpu.hbm_latency_us) : 0,
                profile.gpu.hbm_sm_gbps * 1e-3};  // GB/s = 1e-3 bytes per ps
    node.gpus.push_back(g);
  }

  Fabric& f = node.fabric;
  for (const FabricNode& n : spec.nodes)
    f.add_node(n.name, n.kind == FabricNodeKind::gpu ? n.gpu : -1, n.kind == FabricNodeKind::nvswitch);
  for (const FabricEdge& e : spec.edges)
    f.add_link(e.from, e.to, e.bandwidth_gbps, ps_from_us(e.latency_us),
               fmt::format("{}->{} ({})", spec.nodes[static_cast<std::size_t>(e.from)].name,
                           spec.nodes[static_cast<std::size_t>(e.to)].name, e.link_class),
               e.link_class);
  // hbm_bandwidth_gbps = 0 is "no memory model" (scenarios/hardware/README.md): no HBM resource, and
  // memory-bound kernels take no time. Virtual ranks share their physical GPU's one HBM.
  if (profile.gpu.hbm_bandwidth_gbps > 0) {
    const double hbm = profile.gpu.hbm_bandwidth_gbps * profile.gpu.hbm_efficiency;
    if (virtual_ranks) {
      f.set_hbm(0, hbm);
      for (int g = 1; g < spec.num_gpus; ++g) f.share_hbm(g, 0);
    } else {
      for (int g = 0; g < spec.num_gpus; ++g) f.set_hbm(g, hbm);
    }
  }
  for (Transport t : kAllTransports) f.set_transport(t, profile.transports.of(t));
  // Calibrated curves "<transport>.<link class>" (the loader stores "p2p.<class>" as sm_copy).
  for (const auto& [key, curve] : profile.curves) {
    const auto dot = key.find('.');
    if (dot == std::string::npos) continue;
    if (const auto t = parse_transport(key.substr(0, dot))) f.set_curve(*t, key.substr(dot + 1), curve);
  }
  return node;
}

// The profile's node answers when the scenario has none (transfer_price.hpp): the price is the
// fabric's own (Fabric::isolated_ps), so a scheme sizes its work by what the engine will simulate.
Ps isolated_transfer_ps(const HardwareProfile& hw, int ranks, const NodeConfig* node, int src, int dst, Bytes bytes,
                        Transport transport, int ctas) {
  if (node && static_cast<int>(node->gpus.size()) >= ranks)
    return node->fabric.isolated_ps(src, dst, bytes, transport, ctas);
  return make_node(hw, ranks).fabric.isolated_ps(src, dst, bytes, transport, ctas);
}

}  // namespace overlap::sim
