#include "sim/node_builder.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace overlap::sim {

NodeConfig make_node(const HardwareProfile& profile, int ranks) {
  FabricSpec spec = profile.fabric;
  if (spec.nodes.empty()) expand_topology(spec);
  if (ranks < 1 || ranks > spec.num_gpus)
    throw std::invalid_argument(fmt::format("profile '{}' has {} GPUs; {} ranks asked", profile.name,
                                            spec.num_gpus, ranks));
  NodeConfig node;
  node.kernel_launch_ps = ps_from_us(profile.gpu.kernel_launch_us);
  for (int r = 0; r < spec.num_gpus; ++r) node.gpus.push_back(GpuConfig{profile.gpu.sm_count, profile.gpu.copy_engines});

  Fabric& f = node.fabric;
  for (const FabricNode& n : spec.nodes) f.add_node(n.name, n.kind == FabricNodeKind::gpu ? n.gpu : -1);
  std::vector<std::string> edge_class;
  for (const FabricEdge& e : spec.edges) {
    f.add_link(e.from, e.to, e.bandwidth_gbps, ps_from_us(e.latency_us),
               fmt::format("{}->{} ({})", spec.nodes[static_cast<std::size_t>(e.from)].name,
                           spec.nodes[static_cast<std::size_t>(e.to)].name, e.link_class));
    edge_class.push_back(e.link_class);
  }
  // hbm_bandwidth_gbps = 0 is "no memory model" (scenarios/hardware/README.md): no HBM resource, and
  // memory-bound kernels take no time.
  if (profile.gpu.hbm_bandwidth_gbps > 0)
    for (int g = 0; g < spec.num_gpus; ++g)
      f.set_hbm(g, profile.gpu.hbm_bandwidth_gbps * profile.gpu.hbm_efficiency);

  // Calibrated point-to-point curves apply to every GPU pair whose route's narrowest link is of that
  // class ("p2p.<class>" for SM-driven copies, "copy_engine.<class>" for copy engines).
  for (int s = 0; s < spec.num_gpus; ++s)
    for (int d = 0; d < spec.num_gpus; ++d) {
      if (s == d) continue;
      int narrowest = -1;
      for (int l : f.route(s, d))
        if (narrowest < 0 || f.links()[static_cast<std::size_t>(l)].capacity_bytes_per_ps <
                                 f.links()[static_cast<std::size_t>(narrowest)].capacity_bytes_per_ps)
          narrowest = l;
      const std::string& cls = edge_class[static_cast<std::size_t>(narrowest)];
      if (auto it = profile.curves.find("p2p." + cls); it != profile.curves.end())
        f.set_curve(s, d, Mechanism::sm, it->second);
      if (auto it = profile.curves.find("copy_engine." + cls); it != profile.curves.end())
        f.set_curve(s, d, Mechanism::copy_engine, it->second);
    }
  return node;
}

}  // namespace overlap::sim
