#pragma once
// Fabric: the graph of GPU ports, switches, PCIe/host and NICs, held as a Boost.Graph with directed
// links (capacity, latency). HBM of each GPU is one more shared resource (a self-link of its GPU).
// Routes are shortest paths (fewest hops, then least latency), computed once per GPU pair.
// An isolated transfer of s bytes takes exactly `isolated_ps(src, dst, s, mechanism)`: the calibrated
// curve of that path when one is set, else the route's latency + s / narrowest capacity.
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "cost_model/bandwidth_curve.hpp"
#include "cost_model/units.hpp"

namespace overlap::sim {

enum class Mechanism : std::uint8_t { copy_engine, sm };

struct Link {
  std::string name;
  int from = -1, to = -1;       // fabric node ids (from == to: an HBM resource)
  double capacity_bytes_per_ps = 0;
  Ps latency_ps = 0;
};

class Fabric {
 public:
  int add_node(std::string name, int gpu = -1);  // gpu >= 0: this node is that GPU's port
  int add_link(int from, int to, double capacity_gbps, Ps latency_ps, std::string name);
  // HBM of `gpu` as a shared resource; memory kernels and local copies draw from it.
  void set_hbm(int gpu, double bandwidth_gbps);
  // Calibrated isolated-transfer curve for a GPU pair and mechanism (replaces alpha-beta of route).
  void set_curve(int src_gpu, int dst_gpu, Mechanism m, BandwidthCurve curve);

  int num_gpus() const { return static_cast<int>(gpu_node_.size()); }
  const std::vector<Link>& links() const { return links_; }
  int hbm_link(int gpu) const { return hbm_link_.at(static_cast<std::size_t>(gpu)); }
  int node_count() const { return static_cast<int>(node_names_.size()); }
  const std::string& node_name(int n) const { return node_names_.at(static_cast<std::size_t>(n)); }

  // Link ids from src to dst (src == dst: the GPU's HBM). Throws if unreachable. Cached.
  const std::vector<int>& route(int src_gpu, int dst_gpu) const;
  Ps route_latency_ps(int src_gpu, int dst_gpu) const;
  // Time an isolated transfer takes; `bytes` > 0.
  Ps isolated_ps(int src_gpu, int dst_gpu, Bytes bytes, Mechanism m) const;

 private:
  std::vector<std::string> node_names_;
  std::vector<int> gpu_node_;   // gpu -> node
  std::vector<Link> links_;
  std::vector<int> hbm_link_;   // gpu -> link id (-1 none)
  std::map<std::tuple<int, int, Mechanism>, BandwidthCurve> curves_;
  mutable std::map<std::pair<int, int>, std::vector<int>> routes_;
};

}  // namespace overlap::sim
