#include "sim/fabric.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace overlap::sim {

int Fabric::add_node(std::string name, int gpu) {
  node_names_.push_back(std::move(name));
  const int id = static_cast<int>(node_names_.size() - 1);
  if (gpu >= 0) {
    if (static_cast<int>(gpu_node_.size()) <= gpu) {
      gpu_node_.resize(static_cast<std::size_t>(gpu) + 1, -1);
      hbm_link_.resize(static_cast<std::size_t>(gpu) + 1, -1);
    }
    if (gpu_node_[static_cast<std::size_t>(gpu)] != -1)
      throw std::invalid_argument(fmt::format("fabric: GPU {} has two nodes", gpu));
    gpu_node_[static_cast<std::size_t>(gpu)] = id;
  }
  routes_.clear();
  return id;
}

int Fabric::add_link(int from, int to, double capacity_gbps, Ps latency_ps, std::string name) {
  if (from < 0 || to < 0 || from >= node_count() || to >= node_count())
    throw std::invalid_argument(fmt::format("fabric: link '{}' joins unknown nodes", name));
  if (!(capacity_gbps > 0) || latency_ps < 0)
    throw std::invalid_argument(fmt::format("fabric: link '{}' needs capacity > 0 and latency >= 0", name));
  links_.push_back(Link{std::move(name), from, to, bytes_per_ps_from_gbps(capacity_gbps), latency_ps});
  routes_.clear();
  return static_cast<int>(links_.size() - 1);
}

void Fabric::set_hbm(int gpu, double bandwidth_gbps) {
  if (gpu < 0 || gpu >= num_gpus() || gpu_node_[static_cast<std::size_t>(gpu)] < 0)
    throw std::invalid_argument(fmt::format("fabric: HBM for unknown GPU {}", gpu));
  const int node = gpu_node_[static_cast<std::size_t>(gpu)];
  hbm_link_[static_cast<std::size_t>(gpu)] =
      add_link(node, node, bandwidth_gbps, 0, fmt::format("gpu{}.hbm", gpu));
}

void Fabric::set_curve(int src_gpu, int dst_gpu, Mechanism m, BandwidthCurve curve) {
  curves_[{src_gpu, dst_gpu, m}] = std::move(curve);
}

const std::vector<int>& Fabric::route(int src_gpu, int dst_gpu) const {
  auto key = std::make_pair(src_gpu, dst_gpu);
  if (auto it = routes_.find(key); it != routes_.end()) return it->second;
  if (src_gpu < 0 || dst_gpu < 0 || src_gpu >= num_gpus() || dst_gpu >= num_gpus())
    throw std::invalid_argument(fmt::format("fabric: no GPU {} or {}", src_gpu, dst_gpu));
  std::vector<int> path;
  if (src_gpu == dst_gpu) {
    const int hbm = hbm_link_[static_cast<std::size_t>(src_gpu)];
    if (hbm < 0) throw std::invalid_argument(fmt::format("fabric: GPU {} has no HBM resource", src_gpu));
    path.push_back(hbm);
  } else {
    // Shortest path by (hops, latency): weight = 1e6 per hop + latency in us, so hop count wins and
    // latency breaks ties. Self-links (HBM) are not part of the routing graph.
    using G = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                    boost::property<boost::edge_weight_t, double, boost::property<boost::edge_index_t, int>>>;
    G g(static_cast<std::size_t>(node_count()));
    for (int l = 0; l < static_cast<int>(links_.size()); ++l) {
      const Link& k = links_[static_cast<std::size_t>(l)];
      if (k.from == k.to) continue;
      auto [e, ok] = boost::add_edge(static_cast<std::size_t>(k.from), static_cast<std::size_t>(k.to), g);
      (void)ok;
      boost::put(boost::edge_weight, g, e, 1e6 + us_from_ps(k.latency_ps));
      boost::put(boost::edge_index, g, e, l);
    }
    const auto src = static_cast<std::size_t>(gpu_node_[static_cast<std::size_t>(src_gpu)]);
    const auto dst = static_cast<std::size_t>(gpu_node_[static_cast<std::size_t>(dst_gpu)]);
    std::vector<std::size_t> pred(boost::num_vertices(g));
    std::vector<double> dist(boost::num_vertices(g));
    boost::dijkstra_shortest_paths(g, src, boost::predecessor_map(pred.data()).distance_map(dist.data()));
    if (pred[dst] == dst)
      throw std::invalid_argument(fmt::format("fabric: GPU {} cannot reach GPU {}", src_gpu, dst_gpu));
    for (std::size_t v = dst; v != src; v = pred[v]) {
      // The cheapest parallel edge pred[v] -> v (deterministic: lowest latency, then lowest id).
      int best = -1;
      for (int l = 0; l < static_cast<int>(links_.size()); ++l) {
        const Link& k = links_[static_cast<std::size_t>(l)];
        if (static_cast<std::size_t>(k.from) == pred[v] && static_cast<std::size_t>(k.to) == v &&
            (best < 0 || k.latency_ps < links_[static_cast<std::size_t>(best)].latency_ps))
          best = l;
      }
      path.push_back(best);
    }
    std::reverse(path.begin(), path.end());
  }
  return routes_.emplace(key, std::move(path)).first->second;
}

Ps Fabric::route_latency_ps(int src_gpu, int dst_gpu) const {
  Ps total = 0;
  for (int l : route(src_gpu, dst_gpu)) total += links_[static_cast<std::size_t>(l)].latency_ps;
  return total;
}

Ps Fabric::isolated_ps(int src_gpu, int dst_gpu, Bytes bytes, Mechanism m) const {
  if (auto it = curves_.find({src_gpu, dst_gpu, m}); it != curves_.end()) return it->second.time_ps(bytes);
  const auto& path = route(src_gpu, dst_gpu);
  double narrowest = 0;
  for (int l : path) {
    const double c = links_[static_cast<std::size_t>(l)].capacity_bytes_per_ps;
    narrowest = narrowest == 0 ? c : std::min(narrowest, c);
  }
  // A local copy reads and writes HBM: twice the bytes cross it.
  const double moved = static_cast<double>(bytes) * (src_gpu == dst_gpu ? 2.0 : 1.0);
  return route_latency_ps(src_gpu, dst_gpu) + static_cast<Ps>(std::ceil(moved / narrowest));
}

}  // namespace overlap::sim
