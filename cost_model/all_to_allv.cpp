#include "cost_model/all_to_allv.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "cost_model/nccl_tuning.hpp"

namespace overlap {
namespace {


int check_matrix(const PairBytes& bytes) {
  const std::size_t n = bytes.size();
  for (std::size_t s = 0; s < n; ++s) {
    if (bytes[s].size() != n)
      throw std::invalid_argument("all-to-allv: row " + std::to_string(s) + " has " + std::to_string(bytes[s].size()) +
                                  " entries, expected " + std::to_string(n) + " (one per rank)");
    for (std::size_t d = 0; d < n; ++d)
      if (bytes[s][d] < 0)
        throw std::invalid_argument("all-to-allv: negative bytes from rank " + std::to_string(s) + " to rank " +
                                    std::to_string(d));
  }
  return static_cast<int>(n);
}

// The even plans a call needs, each computed once (an all-to-all of many ranks has few distinct
// equivalent sizes; with all pairs equal, one).
class EvenPlans {
 public:
  EvenPlans(const HardwareProfile& hw, int n, const CollectiveOverrides& overrides)
      : hw_(hw), n_(n), overrides_(overrides) {}

  // The even all-to-all of `bytes` on `link_class`; model_only: without the profile's measured curves.
  const CollectivePlan& plan(Bytes bytes, const std::string& link_class, bool model_only) {
    auto key = std::make_tuple(bytes, link_class, model_only);
    const auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    const HardwareProfile& hw = model_only ? model_profile() : hw_;
    return plans_.emplace(key, plan_collective(hw, CollectivePrimitive::all_to_all, bytes, n_, link_class, overrides_))
        .first->second;
  }

  const HardwareProfile& profile(bool model_only) { return model_only ? model_profile() : hw_; }

 private:
  const HardwareProfile& model_profile() {
    if (hw_.curves.empty()) return hw_;  // the profile is the model already: no copy
    if (!model_) {
      model_ = std::make_unique<HardwareProfile>(hw_);
      model_->curves.clear();
    }
    return *model_;
  }

  const HardwareProfile& hw_;
  int n_;
  CollectiveOverrides overrides_;
  std::unique_ptr<HardwareProfile> model_;
  std::map<std::tuple<Bytes, std::string, bool>, CollectivePlan> plans_;
};

// The part of a rank's time one port class sets: the even plan of its equivalent size.
struct PortTime {
  Bytes equivalent_bytes = 0;
  std::string link_class;
  bool model_only = false;
  CollectivePlan plan;
};

struct Layout {
  int ranks_per_node = 0;  // 0: one node
  int max_remote_peers = 0;
  std::string intra_class;  // across nodes: the class of the node's own fabric
};

Layout layout_of(const HardwareProfile& hw, int n, const std::string& link_class) {
  Layout l;
  if (n < 2) return l;
  const NcclCommunicator comm = nccl_communicator(hw, n, link_class);
  if (comm.n_nodes <= 1) return l;
  // Ranks r / ranks_per_node share a node, as collective_steps() places them.
  l.ranks_per_node = comm.ranks_per_node;
  for (int node = 0; node * l.ranks_per_node < n; ++node) {
    const int size = std::min(l.ranks_per_node, n - node * l.ranks_per_node);
    l.max_remote_peers = std::max(l.max_remote_peers, n - size);
  }
  // The node's fabric as nccl_communicator() names it (NVLink through each node's NVSwitch).
  l.intra_class = hw.fabric.links.count("nvlink") ? "nvlink" : link_class;
  return l;
}

struct Costed {
  AllToAllvCost cost;
  std::vector<PortTime> binding;  // per rank
  Layout layout;
};

Costed cost_all(const HardwareProfile& hw, const PairBytes& bytes, const std::string& link_class,
                const CollectiveOverrides& overrides) {
  const int n = check_matrix(bytes);
  Costed out;
  AllToAllvCost& c = out.cost;
  c.rank_time_ps.assign(static_cast<std::size_t>(n), 0);
  c.rank_equivalent_bytes.assign(static_cast<std::size_t>(n), 0);
  out.binding.assign(static_cast<std::size_t>(n), PortTime{});
  if (n < 2) {
    c.ports.assign(static_cast<std::size_t>(n), AllToAllvPorts{});
    return out;
  }
  out.layout = layout_of(hw, n, link_class);
  const Layout& l = out.layout;
  c.ports = all_to_allv_ports(bytes, l.ranks_per_node);
  EvenPlans plans(hw, n, overrides);
  for (int r = 0; r < n; ++r) {
    const AllToAllvPorts& p = c.ports[static_cast<std::size_t>(r)];
    const Bytes intra = std::max(p.send_intra_node, p.recv_intra_node);
    std::vector<PortTime> parts;
    if (l.ranks_per_node == 0) {
      // One node: the even size S loads each port with S (n-1)/n.
      parts.push_back({ceil_div(checked_mul(intra, n), n - 1), link_class, false, {}});
    } else {
      // The NIC: the even size S loads the busiest NIC with S x max_remote_peers / n.
      const Bytes nic = std::max(p.send_inter_node, p.recv_inter_node);
      parts.push_back({ceil_div(checked_mul(nic, n), l.max_remote_peers), link_class, false, {}});
      parts.push_back({ceil_div(checked_mul(intra, n), n - 1), l.intra_class, true, {}});
    }
    PortTime* worst = nullptr;
    for (PortTime& part : parts) {
      part.plan = plans.plan(part.equivalent_bytes, part.link_class, part.model_only);
      if (!worst || part.plan.time_ps > worst->plan.time_ps) worst = &part;
    }
    c.rank_time_ps[static_cast<std::size_t>(r)] = worst->plan.time_ps;
    c.rank_equivalent_bytes[static_cast<std::size_t>(r)] = worst->equivalent_bytes;
    out.binding[static_cast<std::size_t>(r)] = *worst;
    if (worst->plan.time_ps > c.time_ps) {
      c.time_ps = worst->plan.time_ps;
      c.slowest_rank = r;
      c.slowest_plan = worst->plan;
    }
  }
  return out;
}

}  // namespace

std::vector<AllToAllvPorts> all_to_allv_ports(const PairBytes& bytes, int ranks_per_node) {
  const int n = check_matrix(bytes);
  std::vector<AllToAllvPorts> ports(static_cast<std::size_t>(n));
  auto same_node = [&](int a, int b) { return ranks_per_node <= 0 || a / ranks_per_node == b / ranks_per_node; };
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      if (s == d) continue;  // a rank's own block is a local copy
      const Bytes b = bytes[static_cast<std::size_t>(s)][static_cast<std::size_t>(d)];
      AllToAllvPorts& ps = ports[static_cast<std::size_t>(s)];
      AllToAllvPorts& pd = ports[static_cast<std::size_t>(d)];
      if (same_node(s, d)) {
        ps.send_intra_node = checked_add(ps.send_intra_node, b);
        pd.recv_intra_node = checked_add(pd.recv_intra_node, b);
      } else {
        ps.send_inter_node = checked_add(ps.send_inter_node, b);
        pd.recv_inter_node = checked_add(pd.recv_inter_node, b);
      }
    }
  return ports;
}

AllToAllvCost all_to_allv_cost(const HardwareProfile& hw, const PairBytes& bytes, const std::string& link_class,
                               const CollectiveOverrides& overrides) {
  return cost_all(hw, bytes, link_class, overrides).cost;
}

CollectiveSchedule all_to_allv_steps(const HardwareProfile& hw, const PairBytes& bytes, const std::string& link_class,
                                     const CollectiveOverrides& overrides) {
  const Costed costed = cost_all(hw, bytes, link_class, overrides);
  const int n = static_cast<int>(bytes.size());
  // nccl-tests' S of the even case: the largest buffer a rank sends (its own block included).
  Bytes largest_row = 0;
  for (const auto& row : bytes) {
    Bytes sum = 0;
    for (Bytes b : row) sum = checked_add(sum, b);
    largest_row = std::max(largest_row, sum);
  }
  CollectiveSchedule sched;
  if (costed.cost.slowest_rank < 0) {
    // Nothing crosses a port (one rank, or only self blocks): no steps, no latency, as
    // collective_steps() gives for an empty call.
    sched.primitive = CollectivePrimitive::all_to_all;
    sched.algorithm = NcclAlgorithm::SendRecv;
    sched.n_ranks = std::max(1, n);
    sched.bytes_total = largest_row;
    sched.ranks.assign(static_cast<std::size_t>(sched.n_ranks), {});
    return sched;
  }
  // The slowest rank's even schedule gives the step count, latencies and protocol bandwidth; its
  // transfers are replaced by this call's.
  const PortTime& slowest = costed.binding[static_cast<std::size_t>(costed.cost.slowest_rank)];
  EvenPlans plans(hw, n, overrides);
  sched = collective_steps(plans.profile(slowest.model_only), slowest.plan, slowest.equivalent_bytes, n,
                           slowest.link_class);
  // The schedule's node layout is the call's (the slowest part may be the nodes' own fabric).
  sched.ranks_per_node = costed.layout.ranks_per_node;
  sched.bytes_total = largest_row;
  for (auto& rank : sched.ranks)
    for (CollectiveStep& st : rank) {
      st.sends.clear();
      st.recvs.clear();
      st.reduce_bytes = 0;
    }
  // One step where the even schedule has one (a full mesh; across nodes, nccl_algorithms.cpp).
  const NcclCommunicator comm = nccl_communicator(hw, n, link_class);
  const bool one_step = comm.full_mesh || comm.n_nodes > 1;
  if (sched.num_steps() < static_cast<std::size_t>(one_step ? 1 : n - 1))
    throw std::logic_error("all-to-allv steps: the even schedule has fewer steps than NCCL's p2p rounds");
  // Round i (1 .. n-1): send to rank + i, receive from rank - i (nccl_algorithms.cpp's order, so that
  // equal pairs give the even schedule's transfers in the same order).
  for (int r = 0; r < n; ++r)
    for (int i = 1; i < n; ++i) {
      const int to = (r + i) % n;
      const Bytes b = bytes[static_cast<std::size_t>(r)][static_cast<std::size_t>(to)];
      if (b <= 0) continue;
      const std::size_t step = one_step ? 0 : static_cast<std::size_t>(i - 1);
      sched.ranks[static_cast<std::size_t>(r)][step].sends.push_back({to, b});
      sched.ranks[static_cast<std::size_t>(to)][step].recvs.push_back({r, b});
    }
  return sched;
}

}  // namespace overlap
