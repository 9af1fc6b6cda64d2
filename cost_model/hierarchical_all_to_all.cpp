// The hierarchical all-to-all (hierarchical_all_to_all.hpp): each phase's per-GPU bytes and the time.
#include "cost_model/hierarchical_all_to_all.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace overlap {

namespace {

Ps phase_ps(const HierarchicalPhaseBytes& p, double gbps, double fixed_us) {
  Bytes most = 0;
  for (std::size_t g = 0; g < p.send.size(); ++g) most = std::max({most, p.send[g], p.recv[g]});
  if (most == 0) return 0;
  if (!(gbps > 0)) throw std::invalid_argument("hierarchical all-to-all: a port with bytes to move has no rate");
  return checked_ps(fixed_us * 1e6 + static_cast<double>(most) / gbps * 1e3);  // 1 GB/s = 1e-3 bytes per ps
}

}  // namespace

HierarchicalAllToAll hierarchical_all_to_all(const PairBytes& pairs, int g, const HierarchicalRates& rates) {
  const int n = static_cast<int>(pairs.size());
  if (g < 1 || n % g != 0 || n / g < 2)
    throw std::invalid_argument(
        fmt::format("hierarchical all-to-all: {} GPUs are not two or more nodes of {} GPUs", n, g));
  for (const auto& row : pairs) {
    if (static_cast<int>(row.size()) != n)
      throw std::invalid_argument("hierarchical all-to-all: the byte matrix is not square");
    for (const Bytes b : row)
      if (b < 0) throw std::invalid_argument("hierarchical all-to-all: a negative pair");
  }
  auto at = [&](int s, int d) { return pairs[static_cast<std::size_t>(s)][static_cast<std::size_t>(d)]; };
  auto exchanger = [&](int node, int peer_node) { return node * g + peer_node % g; };  // node's GPU for peer_node
  HierarchicalAllToAll h;
  for (HierarchicalPhaseBytes* p : {&h.gather, &h.exchange, &h.scatter}) {
    p->send.assign(static_cast<std::size_t>(n), 0);
    p->recv.assign(static_cast<std::size_t>(n), 0);
  }
  auto move = [](HierarchicalPhaseBytes& p, int s, int d, Bytes b) {
    if (s == d || b == 0) return;
    p.send[static_cast<std::size_t>(s)] = checked_add(p.send[static_cast<std::size_t>(s)], b);
    p.recv[static_cast<std::size_t>(d)] = checked_add(p.recv[static_cast<std::size_t>(d)], b);
  };
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      const Bytes b = at(s, d);
      const int sn = s / g, dn = d / g;
      if (sn == dn) {
        move(h.gather, s, d, b);  // the node's own traffic, straight to its GPU
        continue;
      }
      const int out = exchanger(sn, dn), in = exchanger(dn, sn);
      move(h.gather, s, out, b);
      move(h.exchange, out, in, b);
      move(h.scatter, in, d, b);
    }
  h.gather_ps = phase_ps(h.gather, rates.nvlink_gbps, rates.nvlink_phase_us);
  h.exchange_ps = phase_ps(h.exchange, rates.nic_gbps, rates.network_phase_us);
  h.scatter_ps = phase_ps(h.scatter, rates.nvlink_gbps, rates.nvlink_phase_us);
  h.time_ps = checked_add(checked_add(h.gather_ps, h.exchange_ps), h.scatter_ps);
  return h;
}

HierarchicalRates hierarchical_rates(const HardwareProfile& hw) {
  const FabricSpec& f = hw.fabric;
  const auto nvlink = f.links.find("nvlink");
  const auto network = f.links.find("network");
  if (f.topology != "multi_node" || nvlink == f.links.end() || network == f.links.end())
    throw std::invalid_argument(
        "the hierarchical all-to-all runs across nodes: it needs a multi_node profile with fabric.links.nvlink and "
        "fabric.links.network");
  const int per_node = f.gpus_per_node > 0 ? f.gpus_per_node : f.num_gpus;
  const int nics = f.nics_per_node > 0 ? std::min(f.nics_per_node, per_node) : per_node;
  HierarchicalRates r;
  r.nvlink_gbps = nvlink->second.bandwidth_gbps * hw.comm.bandwidth_efficiency;
  r.nic_gbps = network->second.bandwidth_gbps * f.nic_efficiency * nics / per_node;
  r.nvlink_phase_us = hw.transports.nccl_p2p.latency_us;
  r.network_phase_us = hw.transports.nccl_p2p.latency_us + network->second.latency_us;
  return r;
}

}  // namespace overlap
