#include "sim/fabric.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace overlap::sim {

const std::string Fabric::kD2d = "d2d";

int Fabric::add_node(std::string name, int gpu, bool is_switch) {
  node_names_.push_back(std::move(name));
  node_is_switch_.push_back(is_switch ? 1 : 0);
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
  pairs_.clear();
  routed_.clear();
  route_graph_.reset();
  return id;
}

int Fabric::add_link(int from, int to, double capacity_gbps, Ps latency_ps, std::string name, std::string link_class) {
  if (from < 0 || to < 0 || from >= node_count() || to >= node_count())
    throw std::invalid_argument(fmt::format("fabric: link '{}' joins unknown nodes", name));
  if (!(capacity_gbps > 0) || !std::isfinite(capacity_gbps) || latency_ps < 0)
    throw std::invalid_argument(fmt::format("fabric: link '{}' needs a finite capacity > 0 and latency >= 0", name));
  links_.push_back(Link{std::move(name), from, to, bytes_per_ps_from_gbps(capacity_gbps), latency_ps, std::move(link_class)});
  pairs_.clear();
  routed_.clear();
  route_graph_.reset();
  return static_cast<int>(links_.size() - 1);
}

void Fabric::set_hbm(int gpu, double bandwidth_gbps) {
  if (gpu < 0 || gpu >= num_gpus() || gpu_node_[static_cast<std::size_t>(gpu)] < 0)
    throw std::invalid_argument(fmt::format("fabric: HBM for unknown GPU {}", gpu));
  const int node = gpu_node_[static_cast<std::size_t>(gpu)];
  hbm_link_[static_cast<std::size_t>(gpu)] = add_link(node, node, bandwidth_gbps, 0, fmt::format("gpu{}.hbm", gpu), "hbm");
}

void Fabric::share_hbm(int gpu, int owner) {
  if (gpu < 0 || gpu >= num_gpus() || owner < 0 || owner >= num_gpus() || hbm_link_[static_cast<std::size_t>(owner)] < 0)
    throw std::invalid_argument(fmt::format("fabric: GPU {} cannot share the HBM of GPU {}", gpu, owner));
  hbm_link_[static_cast<std::size_t>(gpu)] = hbm_link_[static_cast<std::size_t>(owner)];
  pairs_.clear();
  routed_.clear();
}

void Fabric::set_transport(Transport t, const TransportSpec& spec) {
  if (!(spec.efficiency > 0 && spec.efficiency <= 1) || !(spec.latency_us >= 0) || !(spec.cta_gbps >= 0))
    throw std::invalid_argument(fmt::format("fabric: transport {} needs latency >= 0, efficiency in (0, 1]",
                                            transport_name(t)));
  transports_[static_cast<std::size_t>(t)] = spec;
}

void Fabric::set_curve(Transport t, const std::string& link_class, BandwidthCurve curve) {
  curves_[{t, link_class}] = std::move(curve);
}

bool Fabric::same_memory(int a, int b) const {
  if (a == b) return true;
  const int ha = hbm_link(a), hb = hbm_link(b);
  return ha >= 0 && ha == hb;
}

// The routing graph over the network links (HBM self-links excluded), with, between two nodes, the
// parallel link a route takes (the lowest latency, then the lowest id). Weight = 1e6 per hop +
// latency in us: hop count wins, latency breaks ties. Built once per fabric.
struct Fabric::RouteGraph {
  using G = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                  boost::property<boost::edge_weight_t, double>>;
  explicit RouteGraph(std::size_t nodes) : g(nodes) {}
  G g;
  std::map<std::pair<int, int>, int> best;
};

const Fabric::RouteGraph& Fabric::route_graph() const {
  if (route_graph_) return *route_graph_;
  auto rg = std::make_shared<RouteGraph>(static_cast<std::size_t>(node_count()));
  for (int l = 0; l < static_cast<int>(links_.size()); ++l) {
    const Link& k = links_[static_cast<std::size_t>(l)];
    if (k.from == k.to) continue;
    auto [it, fresh] = rg->best.emplace(std::make_pair(k.from, k.to), l);
    if (!fresh && k.latency_ps < links_[static_cast<std::size_t>(it->second)].latency_ps) it->second = l;
  }
  for (const auto& [ends, l] : rg->best) {
    auto [e, ok] = boost::add_edge(static_cast<std::size_t>(ends.first), static_cast<std::size_t>(ends.second), rg->g);
    (void)ok;
    boost::put(boost::edge_weight, rg->g, e, 1e6 + us_from_ps(links_[static_cast<std::size_t>(l)].latency_ps));
  }
  route_graph_ = rg;
  return *route_graph_;
}

// One Dijkstra from `src_gpu` fills the routes to every GPU.
void Fabric::routes_from(int src_gpu) const {
  const auto n = static_cast<std::size_t>(node_count());
  if (pairs_.size() != static_cast<std::size_t>(num_gpus())) {
    pairs_.assign(static_cast<std::size_t>(num_gpus()), {});
    routed_.assign(static_cast<std::size_t>(num_gpus()), 0);
  }
  const RouteGraph& rg = route_graph();
  const auto& g = rg.g;
  const auto& best = rg.best;
  const auto src = static_cast<std::size_t>(gpu_node_[static_cast<std::size_t>(src_gpu)]);
  std::vector<std::size_t> pred(n);
  std::vector<double> dist(n);
  boost::dijkstra_shortest_paths(g, src, boost::predecessor_map(pred.data()).distance_map(dist.data()));
  auto& row = pairs_[static_cast<std::size_t>(src_gpu)];
  row.assign(static_cast<std::size_t>(num_gpus()), PairInfo{});
  for (int dst_gpu = 0; dst_gpu < num_gpus(); ++dst_gpu) {
    PairInfo& info = row[static_cast<std::size_t>(dst_gpu)];
    const int dst_node = gpu_node_[static_cast<std::size_t>(dst_gpu)];
    if (dst_gpu != src_gpu && dst_node >= 0) {
      const auto dst = static_cast<std::size_t>(dst_node);
      if (pred[dst] == dst) {
        info.narrowest = -1;  // unreachable: reported when asked for
        continue;
      }
      for (std::size_t v = dst; v != src; v = pred[v])
        info.links.push_back(best.at({static_cast<int>(pred[v]), static_cast<int>(v)}));
      std::reverse(info.links.begin(), info.links.end());
    }
    for (int l : info.links) {
      const Link& k = links_[static_cast<std::size_t>(l)];
      info.latency_ps += k.latency_ps;
      if (info.narrowest_link < 0 || k.capacity_bytes_per_ps < info.narrowest) {
        info.narrowest = k.capacity_bytes_per_ps;
        info.narrowest_link = l;
      }
    }
    // A copy inside one memory reads and writes it: half its bandwidth, and class "d2d".
    if (same_memory(src_gpu, dst_gpu) && hbm_link(src_gpu) >= 0) {
      const double half = links_[static_cast<std::size_t>(hbm_link(src_gpu))].capacity_bytes_per_ps / 2;
      if (info.narrowest_link < 0 || half < info.narrowest) {
        info.narrowest = half;
        info.narrowest_link = -2;  // marks "d2d"
      }
    }
  }
  routed_[static_cast<std::size_t>(src_gpu)] = 1;
}

const Fabric::PairInfo& Fabric::pair(int src_gpu, int dst_gpu) const {
  if (src_gpu < 0 || dst_gpu < 0 || src_gpu >= num_gpus() || dst_gpu >= num_gpus() ||
      gpu_node_[static_cast<std::size_t>(src_gpu)] < 0 || gpu_node_[static_cast<std::size_t>(dst_gpu)] < 0)
    throw std::invalid_argument(fmt::format("fabric: no GPU {} or {}", src_gpu, dst_gpu));
  if (routed_.size() != static_cast<std::size_t>(num_gpus()) || !routed_[static_cast<std::size_t>(src_gpu)])
    routes_from(src_gpu);
  const PairInfo& info = pairs_[static_cast<std::size_t>(src_gpu)][static_cast<std::size_t>(dst_gpu)];
  if (info.narrowest < 0) throw std::invalid_argument(fmt::format("fabric: GPU {} cannot reach GPU {}", src_gpu, dst_gpu));
  if (info.narrowest_link == -1)
    throw std::invalid_argument(fmt::format("fabric: GPU {} has no HBM resource for a local copy", src_gpu));
  return info;
}

const std::vector<int>& Fabric::route(int src_gpu, int dst_gpu) const { return pair(src_gpu, dst_gpu).links; }

Ps Fabric::route_latency_ps(int src_gpu, int dst_gpu) const { return pair(src_gpu, dst_gpu).latency_ps; }

std::pair<int, int> Fabric::switch_links(int gpu) const {
  if (gpu < 0 || gpu >= num_gpus()) throw std::invalid_argument(fmt::format("fabric: no GPU {}", gpu));
  const int node = gpu_node_[static_cast<std::size_t>(gpu)];
  int up = -1, down = -1;
  for (int l = 0; l < static_cast<int>(links_.size()); ++l) {
    const Link& k = links_[static_cast<std::size_t>(l)];
    if (k.from == node && k.to != node && node_is_switch_[static_cast<std::size_t>(k.to)] && up < 0) up = l;
    if (k.to == node && k.from != node && node_is_switch_[static_cast<std::size_t>(k.from)] && down < 0) down = l;
  }
  if (up < 0 || down < 0)
    throw std::invalid_argument(fmt::format("fabric: GPU {} is not attached to a switch (NVLS needs one)", gpu));
  return {up, down};
}

double Fabric::narrowest_bytes_per_ps(int src_gpu, int dst_gpu) const { return pair(src_gpu, dst_gpu).narrowest; }

const std::string& Fabric::narrowest_class(int src_gpu, int dst_gpu) const {
  const PairInfo& info = pair(src_gpu, dst_gpu);
  return info.narrowest_link == -2 ? kD2d : links_[static_cast<std::size_t>(info.narrowest_link)].link_class;
}

const BandwidthCurve* Fabric::curve_for(int src_gpu, int dst_gpu, Transport t) const {
  if (curves_.empty()) return nullptr;
  const auto it = curves_.find({t, narrowest_class(src_gpu, dst_gpu)});
  return it == curves_.end() || it->second.empty() ? nullptr : &it->second;
}

double Fabric::rate_cap(const TransportSpec& spec, int ctas) const {
  return ctas > 0 && spec.cta_gbps > 0 ? bytes_per_ps_from_gbps(spec.cta_gbps * ctas) : 0;
}

bool Fabric::cta_limited(int src_gpu, int dst_gpu, Transport t, int ctas) const {
  const TransportSpec& spec = transports_[static_cast<std::size_t>(t)];
  const double cap = rate_cap(spec, ctas);
  return cap > 0 && cap < pair(src_gpu, dst_gpu).narrowest * spec.efficiency;
}

Ps Fabric::isolated_ps(int src_gpu, int dst_gpu, Bytes bytes, Transport t, int ctas) const {
  if (const BandwidthCurve* c = curve_for(src_gpu, dst_gpu, t)) return c->time_ps(bytes);
  const PairInfo& info = pair(src_gpu, dst_gpu);
  const TransportSpec& spec = transports_[static_cast<std::size_t>(t)];
  double rate = info.narrowest * spec.efficiency;
  if (const double cap = rate_cap(spec, ctas); cap > 0) rate = std::min(rate, cap);
  return checked_add(checked_add(info.latency_ps, ps_from_us(spec.latency_us)),
                     checked_ps(std::ceil(static_cast<double>(bytes) / rate)));
}

Ps Fabric::latency_part_ps(int src_gpu, int dst_gpu, Bytes bytes, Transport t, int ctas) const {
  const Ps total = isolated_ps(src_gpu, dst_gpu, bytes, t, ctas);
  Ps latency;
  if (const BandwidthCurve* c = curve_for(src_gpu, dst_gpu, t)) latency = ps_from_us(std::max(0.0, c->fit().alpha_us));
  else latency = pair(src_gpu, dst_gpu).latency_ps + ps_from_us(transports_[static_cast<std::size_t>(t)].latency_us);
  return std::clamp<Ps>(latency, 0, std::max<Ps>(0, total - 1));
}

Ps Fabric::wire_ps(int src_gpu, int dst_gpu, Bytes bytes, double efficiency) const {
  return checked_ps(std::ceil(static_cast<double>(bytes) / (pair(src_gpu, dst_gpu).narrowest * efficiency)));
}

}  // namespace overlap::sim
