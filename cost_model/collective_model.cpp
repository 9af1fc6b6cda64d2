#include "cost_model/collective_model.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace overlap {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

using Ranks = std::vector<std::vector<CollectiveStep>>;

void check_primitive(CollectivePrimitive p, CollectiveAlgorithm a) {
  const bool basic = p == CollectivePrimitive::all_reduce || p == CollectivePrimitive::reduce_scatter ||
                     p == CollectivePrimitive::all_gather || p == CollectivePrimitive::all_to_all;
  if (a == CollectiveAlgorithm::tree ? p != CollectivePrimitive::all_reduce : !basic) {
    throw std::invalid_argument(std::string("collective steps: ") + collective_algorithm_name(a) +
                                " does not implement " + collective_primitive_name(p));
  }
}

// Appends one step to every rank.
void add_step(Ranks& ranks, Ps latency) {
  for (auto& r : ranks) r.push_back(CollectiveStep{{}, {}, latency, 0});
}

void ring_phase(Ranks& ranks, Bytes total, Ps latency, bool reduce) {
  const int n = static_cast<int>(ranks.size());
  for (int s = 0; s < n - 1; ++s) {
    add_step(ranks, latency);
    for (int r = 0; r < n; ++r) {
      CollectiveStep& st = ranks[static_cast<std::size_t>(r)].back();
      const Bytes out = chunk_bytes(total, n, mod(r - s, n));
      const Bytes in = chunk_bytes(total, n, mod(r - 1 - s, n));
      st.sends.push_back({mod(r + 1, n), out});
      st.recvs.push_back({mod(r - 1, n), in});
      if (reduce) st.reduce_bytes = in;
    }
  }
}

// kind: 0 reduce-scatter, 1 all-gather, 2 all-to-all.
void pairwise_phase(Ranks& ranks, Bytes total, Ps latency, int kind) {
  const int n = static_cast<int>(ranks.size());
  for (int i = 1; i < n; ++i) {
    add_step(ranks, latency);
    for (int r = 0; r < n; ++r) {
      CollectiveStep& st = ranks[static_cast<std::size_t>(r)].back();
      const int to = mod(r + i, n), from = mod(r - i, n);
      const Bytes out = chunk_bytes(total, n, kind == 1 ? r : to);
      const Bytes in = chunk_bytes(total, n, kind == 1 ? from : r);
      st.sends.push_back({to, out});
      st.recvs.push_back({from, in});
      if (kind == 0) st.reduce_bytes = in;
    }
  }
}

void direct_phase(Ranks& ranks, Bytes total, Ps latency, int kind) {
  const int n = static_cast<int>(ranks.size());
  add_step(ranks, latency);
  for (int r = 0; r < n; ++r) {
    CollectiveStep& st = ranks[static_cast<std::size_t>(r)].back();
    for (int i = 1; i < n; ++i) {
      const int to = mod(r + i, n), from = mod(r - i, n);
      st.sends.push_back({to, chunk_bytes(total, n, kind == 1 ? r : to)});
      const Bytes in = chunk_bytes(total, n, kind == 1 ? from : r);
      st.recvs.push_back({from, in});
      if (kind == 0) st.reduce_bytes += in;
    }
  }
}

// Double binary tree (NCCL's tree all-reduce): tree A is the heap over ranks (parent of position p is
// (p-1)/2), tree B the same heap over the mirrored ranks (rank = n-1-p), so most leaves of one tree
// are inner nodes of the other. Each tree carries half of S. Not pipelined: reduce up level by level,
// then broadcast down.
void tree_all_reduce(Ranks& ranks, Bytes total, Ps latency) {
  const int n = static_cast<int>(ranks.size());
  int depth_max = 0;
  while ((2 << depth_max) - 1 < n) ++depth_max;  // depth of position n-1 in the heap
  auto depth = [](int p) { int d = 0; while (p > 0) { p = (p - 1) / 2; ++d; } return d; };
  const Bytes half[2] = {chunk_bytes(total, 2, 0), chunk_bytes(total, 2, 1)};
  auto rank_of = [n](int tree, int p) { return tree == 0 ? p : n - 1 - p; };
  for (int phase = 0; phase < 2; ++phase) {  // 0: reduce up, 1: broadcast down
    for (int i = 0; i < depth_max; ++i) {
      const int level = phase == 0 ? depth_max - i : i + 1;  // depth of the children moving data
      add_step(ranks, latency);
      for (int tree = 0; tree < 2; ++tree) {
        for (int p = 1; p < n; ++p) {
          if (depth(p) != level) continue;
          const int child = rank_of(tree, p), parent = rank_of(tree, (p - 1) / 2);
          const int src = phase == 0 ? child : parent, dst = phase == 0 ? parent : child;
          ranks[static_cast<std::size_t>(src)].back().sends.push_back({dst, half[tree]});
          ranks[static_cast<std::size_t>(dst)].back().recvs.push_back({src, half[tree]});
          if (phase == 0) ranks[static_cast<std::size_t>(dst)].back().reduce_bytes += half[tree];
        }
      }
    }
  }
}

Bytes sum_bytes(const std::vector<CollectiveTransfer>& ts) {
  Bytes b = 0;
  for (const auto& t : ts) b += t.bytes;
  return b;
}

int ring_steps(CollectivePrimitive p, int n) {
  return p == CollectivePrimitive::all_reduce ? 2 * (n - 1) : n - 1;
}

}  // namespace

const char* collective_algorithm_name(CollectiveAlgorithm a) {
  switch (a) {
    case CollectiveAlgorithm::ring: return "ring";
    case CollectiveAlgorithm::tree: return "tree";
    case CollectiveAlgorithm::pairwise: return "pairwise";
    case CollectiveAlgorithm::direct: return "direct";
  }
  return "?";
}

std::optional<CollectiveAlgorithm> parse_collective_algorithm(const std::string& s) {
  for (auto a : {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree, CollectiveAlgorithm::pairwise,
                 CollectiveAlgorithm::direct}) {
    if (s == collective_algorithm_name(a)) return a;
  }
  return std::nullopt;
}

Bytes chunk_bytes(Bytes total, int n, int c) {
  const Bytes base = total / n;
  return base + (c < total % n ? 1 : 0);
}

Bytes CollectiveSchedule::bytes_sent(int rank) const {
  Bytes b = 0;
  for (const auto& st : ranks.at(static_cast<std::size_t>(rank))) b += sum_bytes(st.sends);
  return b;
}

Bytes CollectiveSchedule::bytes_received(int rank) const {
  Bytes b = 0;
  for (const auto& st : ranks.at(static_cast<std::size_t>(rank))) b += sum_bytes(st.recvs);
  return b;
}

Ps CollectiveSchedule::idle_time_ps() const {
  Ps t = ranks.empty() ? 0 : base_latency_ps;
  for (std::size_t s = 0; s < num_steps(); ++s) {
    Bytes port = 0;
    Ps lat = 0;
    for (const auto& r : ranks) {
      port = std::max({port, sum_bytes(r[s].sends), sum_bytes(r[s].recvs)});
      lat = std::max(lat, r[s].latency_ps);
    }
    t += lat + (port > 0 ? transfer_ps(port, bandwidth_gbps) : 0);
  }
  return t;
}

double collective_bandwidth_gbps(const HardwareProfile& profile, const std::string& link_class, int n_ranks) {
  const auto it = profile.fabric.links.find(link_class);
  if (it == profile.fabric.links.end()) {
    throw std::invalid_argument("collective model: unknown link class '" + link_class + "'");
  }
  double port_gbps = it->second.bandwidth_gbps;
  // A full mesh splits a GPU's bandwidth over its N-1 peers, one link each (fabric_topology.cpp); a
  // collective over n of the N GPUs can drive only n-1 of those links.
  const int all = profile.fabric.num_gpus;
  if (profile.fabric.topology == "full_mesh" && n_ranks > 1 && all > 1 && n_ranks < all)
    port_gbps *= static_cast<double>(n_ranks - 1) / static_cast<double>(all - 1);
  return port_gbps * profile.comm.bandwidth_efficiency * profile.comm.protocol_efficiency;
}

Ps collective_model_time_ps(const HardwareProfile& profile, CollectivePrimitive primitive, Bytes bytes_total,
                            int n_ranks, const std::string& link_class, CollectiveAlgorithm algorithm) {
  if (n_ranks <= 1 || bytes_total <= 0) return 0;
  if (algorithm == CollectiveAlgorithm::tree) {
    return collective_steps(profile, primitive, bytes_total, n_ranks, link_class, algorithm).idle_time_ps();
  }
  const double bw = collective_bandwidth_gbps(profile, link_class, n_ranks);
  int nsteps = ring_steps(primitive, n_ranks);  // ring and pairwise: n-1 steps per phase
  if (algorithm == CollectiveAlgorithm::direct) nsteps = primitive == CollectivePrimitive::all_reduce ? 2 : 1;
  // facts.md "NCCL on 8xH100 NVSwitch": t = base + nsteps * step_latency + S / bw, where the bytes a
  // port carries are the busbw bytes S * factor (nccl-tests doc/PERFORMANCE.md).
  const auto bus_bytes = static_cast<Bytes>(
      std::llround(static_cast<double>(bytes_total) * busbw_factor(primitive, n_ranks)));
  return ps_from_us(profile.comm.base_latency_us) + nsteps * ps_from_us(profile.comm.step_latency_us) +
         transfer_ps(bus_bytes, bw);
}

Ps collective_time_ps(const HardwareProfile& profile, CollectivePrimitive primitive, Bytes bytes_total,
                      int n_ranks, const std::string& link_class, CollectiveAlgorithm algorithm) {
  if (n_ranks <= 1 || bytes_total <= 0) return 0;
  const std::string name = collective_primitive_name(primitive);
  for (const std::string& key : {name + ".n" + std::to_string(n_ranks), name}) {
    const auto it = profile.curves.find(key);
    if (it != profile.curves.end() && !it->second.empty()) return it->second.time_ps(bytes_total);
  }
  return collective_model_time_ps(profile, primitive, bytes_total, n_ranks, link_class, algorithm);
}

CollectiveSchedule collective_steps(const HardwareProfile& profile, CollectivePrimitive primitive,
                                    Bytes bytes_total, int n_ranks, const std::string& link_class,
                                    CollectiveAlgorithm algorithm) {
  check_primitive(primitive, algorithm);
  if (n_ranks < 1) throw std::invalid_argument("collective steps: n_ranks must be >= 1");
  if (bytes_total < 0) throw std::invalid_argument("collective steps: negative size");
  CollectiveSchedule sched;
  sched.primitive = primitive;
  sched.algorithm = algorithm;
  sched.n_ranks = n_ranks;
  sched.bytes_total = bytes_total;
  sched.bandwidth_gbps = collective_bandwidth_gbps(profile, link_class, n_ranks);
  sched.ranks.assign(static_cast<std::size_t>(n_ranks), {});
  if (n_ranks == 1 || bytes_total == 0) return sched;  // nothing to move: no steps, no latency
  sched.base_latency_ps = ps_from_us(profile.comm.base_latency_us);
  const Ps step = ps_from_us(profile.comm.step_latency_us);
  Ranks& ranks = sched.ranks;
  const bool ar = primitive == CollectivePrimitive::all_reduce;
  // A ring all-to-all would relay blocks through intermediate ranks; NCCL runs all-to-all as grouped
  // point-to-point sends, so "ring" all-to-all uses the pairwise order.
  const int kind = primitive == CollectivePrimitive::all_gather ? 1
                   : primitive == CollectivePrimitive::all_to_all ? 2 : 0;
  switch (algorithm) {
    case CollectiveAlgorithm::ring:
      if (kind == 2) {
        pairwise_phase(ranks, bytes_total, step, 2);
      } else {
        if (kind == 0) ring_phase(ranks, bytes_total, step, true);  // reduce-scatter (or AR's first half)
        if (ar || kind == 1) ring_phase(ranks, bytes_total, step, false);
      }
      break;
    case CollectiveAlgorithm::pairwise:
      pairwise_phase(ranks, bytes_total, step, kind);
      if (ar) pairwise_phase(ranks, bytes_total, step, 1);
      break;
    case CollectiveAlgorithm::direct:
      direct_phase(ranks, bytes_total, step, kind);
      if (ar) direct_phase(ranks, bytes_total, step, 1);
      break;
    case CollectiveAlgorithm::tree:
      tree_all_reduce(ranks, bytes_total, step);
      break;
  }
  return sched;
}

}  // namespace overlap
