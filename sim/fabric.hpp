#pragma once
// Fabric: the graph of GPU ports, switches, PCIe/host and NICs, held as a Boost.Graph with directed
// links (capacity, latency, link class). HBM of each GPU is one more shared resource (a self-link of
// its GPU; virtual ranks of one physical GPU share one). Routes are shortest paths (fewest hops, then
// least latency), found by one Dijkstra per source GPU the first time that source sends, and cached.
//
// How long bytes take on a path is answered here and only here (design.md "Fabric": every
// transport costed the same way whichever scheme sends). An isolated transfer of s bytes from src to
// dst by transport t takes
//     the calibrated curve "<t>.<class>" at s, when set for the class of the route's narrowest link
//     (for a copy inside one GPU's memory, class "d2d"); else
//     route wire latency + t.latency + s / (narrowest bandwidth * t.efficiency)
// where an SM copy kernel of k CTAs moves at most k * cta_gbps. NCCL's collective steps carry their
// own protocol latency and efficiency instead (wire_ps).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cost_model/bandwidth_curve.hpp"
#include "cost_model/hardware_profile.hpp"
#include "cost_model/units.hpp"

namespace overlap::sim {

struct Link {
  std::string name;
  int from = -1, to = -1;       // fabric node ids (from == to: an HBM resource)
  double capacity_bytes_per_ps = 0;
  Ps latency_ps = 0;
  std::string link_class;       // "nvlink", "pcie", ... ("hbm" for HBM resources)
};

class Fabric {
 public:
  // gpu >= 0: this node is that GPU's port. `is_switch`: GPUs attached to it reach it for NVLS's
  // switch-side reduction (task_graph.hpp kSwitchPeer).
  int add_node(std::string name, int gpu = -1, bool is_switch = false);
  int add_link(int from, int to, double capacity_gbps, Ps latency_ps, std::string name, std::string link_class = "");
  // HBM of `gpu` as a shared resource; memory kernels, copies and GEMM operand traffic draw from it.
  void set_hbm(int gpu, double bandwidth_gbps);
  // `gpu` is a virtual rank of the physical GPU that `owner` is: it uses owner's HBM.
  void share_hbm(int gpu, int owner);
  // Per-transport alpha-beta costs (default: no latency, efficiency 1, no per-CTA limit).
  void set_transport(Transport t, const TransportSpec& spec);
  // A calibrated isolated-transfer curve for transport t on routes whose narrowest link is of
  // `link_class` ("d2d": copies inside one GPU's memory).
  void set_curve(Transport t, const std::string& link_class, BandwidthCurve curve);

  int num_gpus() const { return static_cast<int>(gpu_node_.size()); }
  const std::vector<Link>& links() const { return links_; }
  int hbm_link(int gpu) const { return hbm_link_.at(static_cast<std::size_t>(gpu)); }
  int node_count() const { return static_cast<int>(node_names_.size()); }
  const std::string& node_name(int n) const { return node_names_.at(static_cast<std::size_t>(n)); }
  // True when both GPUs draw from one HBM (the same GPU, or virtual ranks of one physical GPU).
  bool same_memory(int a, int b) const;

  // Network link ids from src to dst, HBM excluded (empty for src == dst). Throws if unreachable.
  const std::vector<int>& route(int src_gpu, int dst_gpu) const;
  Ps route_latency_ps(int src_gpu, int dst_gpu) const;
  // The GPU's links to and from the switch it is attached to (NVLS); throws if it has none.
  std::pair<int, int> switch_links(int gpu) const;
  // Bandwidth of the path's narrowest link in bytes/ps (a copy inside one memory: half the HBM's,
  // as every byte is read and written), and that link's class ("d2d" inside one memory).
  double narrowest_bytes_per_ps(int src_gpu, int dst_gpu) const;
  const std::string& narrowest_class(int src_gpu, int dst_gpu) const;

  // Time an isolated transfer of `bytes` (> 0) takes by transport t (`ctas`: SM copy kernel's CTAs,
  // 0 = no limit), and the part of it that is latency (does not move bytes).
  Ps isolated_ps(int src_gpu, int dst_gpu, Bytes bytes, Transport t, int ctas = 0) const;
  Ps latency_part_ps(int src_gpu, int dst_gpu, Bytes bytes, Transport t, int ctas = 0) const;
  // Time the bytes take at `efficiency` of the narrowest link, no latency (NCCL collective steps,
  // whose per-step latency covers the wire's).
  Ps wire_ps(int src_gpu, int dst_gpu, Bytes bytes, double efficiency) const;
  // A calibrated curve times this transport on this path / an SM copy of `ctas` CTAs is held back by
  // its CTAs rather than by the wire.
  bool has_curve(int src_gpu, int dst_gpu, Transport t) const { return curve_for(src_gpu, dst_gpu, t) != nullptr; }
  bool cta_limited(int src_gpu, int dst_gpu, Transport t, int ctas) const;

 private:
  struct PairInfo {
    std::vector<int> links;
    Ps latency_ps = 0;
    double narrowest = 0;  // bytes/ps
    int narrowest_link = -1;
  };
  const PairInfo& pair(int src_gpu, int dst_gpu) const;
  void routes_from(int src_gpu) const;
  const BandwidthCurve* curve_for(int src_gpu, int dst_gpu, Transport t) const;
  struct RouteGraph;  // the Boost.Graph of network links, built once (fabric.cpp)
  const RouteGraph& route_graph() const;
  double rate_cap(const TransportSpec& spec, int ctas) const;

  std::vector<std::string> node_names_;
  std::vector<char> node_is_switch_;
  std::vector<int> gpu_node_;   // gpu -> node
  std::vector<Link> links_;
  std::vector<int> hbm_link_;   // gpu -> link id (-1 none)
  std::vector<TransportSpec> transports_ = std::vector<TransportSpec>(4, TransportSpec{});
  std::map<std::pair<Transport, std::string>, BandwidthCurve> curves_;
  // pairs_[src][dst], filled one source at a time.
  mutable std::vector<std::vector<PairInfo>> pairs_;
  mutable std::vector<char> routed_;
  mutable std::shared_ptr<const RouteGraph> route_graph_;
  static const std::string kD2d;
};

}  // namespace overlap::sim
