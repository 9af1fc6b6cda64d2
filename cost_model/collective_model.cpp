#include "cost_model/collective_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "cost_model/input_error.hpp"
#include "cost_model/nccl_algorithms.hpp"
#include "cost_model/nccl_tuning.hpp"

namespace overlap {
namespace {

using A = NcclAlgorithm;
using P = NcclProtocol;

Bytes sum_bytes(const std::vector<CollectiveTransfer>& ts, bool switch_only = false) {
  Bytes b = 0;
  for (const auto& t : ts)
    if (!switch_only || t.peer == kSwitchPeer) b += t.bytes;
  return b;
}

const BandwidthCurve* find_curve(const HardwareProfile& hw, CollectivePrimitive p, int n,
                                 std::optional<NcclProtocol> proto) {
  for (const std::string& key : collective_curve_keys(p, n, proto)) {
    const auto it = hw.curves.find(key);
    if (it != hw.curves.end() && !it->second.empty()) return &it->second;
  }
  return nullptr;
}

// The size-independent part of a curve: its alpha-beta fit's latency, within [0, time).
Ps curve_latency_ps(const BandwidthCurve& c, Ps time_ps) {
  const Ps alpha = ps_from_us(std::max(0.0, c.fit().alpha_us));
  return std::clamp<Ps>(alpha, 0, std::max<Ps>(0, time_ps - 1));
}

struct Candidate {
  A algorithm;
  P protocol;
  bool default_enabled;
  Ps time_ps;
  Ps latency_ps;
  bool from_curve;
};

Candidate model_candidate(const NcclCommunicator& comm, const NcclCost& cost, CollectivePrimitive p, A a, P proto,
                          Bytes bytes) {
  const NcclTime t = nccl_time(comm, cost, p, a, proto, bytes);
  const Ps lat = ps_from_us(t.latency_us);
  return Candidate{a, proto, cost.default_enabled, lat + transfer_ps(bytes, t.bandwidth_gbps), lat, false};
}

// A forced choice that cannot run: the profile's comm.algorithm / comm.protocol (naming the profile's
// file), or this call's NCCL_ALGO / NCCL_PROTO-like override.
[[noreturn]] void forced_error(const HardwareProfile& hw, const std::string& key, const std::string& message) {
  throw InputError(key.rfind("comm.", 0) == 0 ? hw.source_file : std::string(), 0, key, message);
}

std::string override_key(bool from_call, const char* what) {
  if (from_call) return std::string(what) == "algorithm" ? "NCCL_ALGO" : "NCCL_PROTO";
  return std::string("comm.") + what;
}

}  // namespace

std::vector<std::string> collective_curve_keys(CollectivePrimitive primitive, int n_ranks,
                                               std::optional<NcclProtocol> protocol) {
  const std::string name = collective_primitive_name(primitive);
  const std::string nr = name + ".n" + std::to_string(n_ranks);
  if (protocol) {
    const std::string pr = nccl_protocol_name(*protocol);
    return {nr + "." + pr, name + "." + pr};
  }
  return {nr, name};
}

Bytes chunk_bytes(Bytes total, int n, int c) {
  const Bytes base = total / n;
  return base + (c < total % n ? 1 : 0);
}

double collective_bandwidth_gbps(const HardwareProfile& hw, const std::string& link_class, int n_ranks) {
  const int n = n_ranks > 1 ? n_ranks : std::max(2, hw.fabric.num_gpus);
  return nccl_communicator(hw, n, link_class).bus_bw_gbps;
}

double collective_port_gbps(const HardwareProfile& hw, const std::string& link_class, int n_ranks) {
  const int n = n_ranks > 1 ? n_ranks : std::max(2, hw.fabric.num_gpus);
  return nccl_communicator(hw, n, link_class).port_gbps;
}

std::vector<CollectiveCandidate> collective_candidates(const HardwareProfile& hw, CollectivePrimitive primitive,
                                                       Bytes bytes, int n_ranks, const std::string& link_class) {
  std::vector<CollectiveCandidate> out;
  if (n_ranks <= 1 || bytes <= 0) return out;
  const NcclCommunicator comm = nccl_communicator(hw, n_ranks, link_class);
  auto push = [&](A a, P proto, const NcclCost& cost) {
    const Candidate c = model_candidate(comm, cost, primitive, a, proto, bytes);
    out.push_back({a, proto, cost.default_enabled, c.time_ps, c.latency_ps, nccl_channels(hw, comm, a, proto, bytes)});
  };
  if (primitive == CollectivePrimitive::all_to_all) {
    for (P proto : {P::LL, P::Simple}) push(A::SendRecv, proto, nccl_p2p_cost(hw, comm, proto));
    return out;
  }
  for (int ai = 0; ai < kNcclAlgorithms; ++ai)
    for (P proto : {P::LL, P::LL128, P::Simple}) {
      const A a = static_cast<A>(ai);
      const NcclCost cost = nccl_cost(hw, comm, primitive, a, proto);
      if (cost.available) push(a, proto, cost);
    }
  return out;
}

GroupPlacement strided_group_placement(const HardwareProfile& hw, int stride) {
  const FabricSpec& f = hw.fabric;
  if (f.topology != "multi_node" || f.gpus_per_node <= 0) return {};
  if (stride < 1) throw std::invalid_argument("group placement: the stride must be at least 1");
  return GroupPlacement{stride >= f.gpus_per_node ? 1 : f.gpus_per_node / stride};
}

CollectivePlan plan_collective(const HardwareProfile& hw, CollectivePrimitive primitive, Bytes bytes, int n_ranks,
                               const std::string& link_class, const CollectiveOverrides& overrides,
                               const GroupPlacement& placement) {
  CollectivePlan plan;
  plan.primitive = primitive;
  plan.placement = placement;
  if (n_ranks <= 1 || bytes <= 0) return plan;
  const NcclCommunicator comm = nccl_communicator(hw, n_ranks, link_class, placement.ranks_per_node);
  const std::optional<A> forced_algo = overrides.algorithm ? overrides.algorithm : hw.comm.algorithm;
  const std::optional<P> forced_proto = overrides.protocol ? overrides.protocol : hw.comm.protocol;
  const std::string algo_key = override_key(overrides.algorithm.has_value(), "algorithm");
  const std::string proto_key = override_key(overrides.protocol.has_value(), "protocol");

  std::vector<Candidate> cands;
  if (primitive == CollectivePrimitive::all_to_all) {
    // NCCL runs all-to-all as grouped send/recv, which NCCL_ALGO does not govern: the profile's
    // comm.algorithm does not apply; a per-call override other than SendRecv is an error.
    if (overrides.algorithm && *overrides.algorithm != A::SendRecv)
      forced_error(hw, algo_key, std::string("all_to_all runs as SendRecv (grouped send/recv), not ") +
                                     nccl_algorithm_name(*overrides.algorithm));
    // Send/recv has LL and Simple; comm.protocol pins one of those, LL128 leaves it to the size.
    P proto = nccl_p2p_protocol(hw, comm, bytes);
    if (forced_proto && *forced_proto != P::LL128) proto = *forced_proto;
    cands.push_back(model_candidate(comm, nccl_p2p_cost(hw, comm, proto), primitive, A::SendRecv, proto, bytes));
    if (const BandwidthCurve* c = find_curve(hw, primitive, n_ranks, proto)) {
      cands.back().time_ps = c->time_ps(bytes);
      cands.back().latency_ps = curve_latency_ps(*c, cands.back().time_ps);
      cands.back().from_curve = true;
    }
  } else {
    if (forced_algo && *forced_algo == A::SendRecv)
      forced_error(hw, algo_key, std::string("SendRecv runs only all_to_all, not ") + collective_primitive_name(primitive));
    std::string why_not;
    for (P proto : {P::LL, P::LL128, P::Simple}) {
      if (forced_proto && proto != *forced_proto) continue;
      std::optional<Candidate> best;
      for (int ai = 0; ai < kNcclAlgorithms; ++ai) {
        const A a = static_cast<A>(ai);
        if (forced_algo && a != *forced_algo) continue;
        const NcclCost cost = nccl_cost(hw, comm, primitive, a, proto);
        if (!cost.available) {
          why_not = cost.why_not;  // the last protocol's (Simple's, the most permissive) reason stands
          continue;
        }
        // LL128 where NCCL does not enable it by default runs only when forced (NCCL_PROTO=LL128).
        if (!cost.default_enabled && !(forced_proto && *forced_proto == proto)) continue;
        const Candidate c = model_candidate(comm, cost, primitive, a, proto, bytes);
        cands.push_back(c);
        if (!best || c.time_ps < best->time_ps) best = c;
      }
      // A measured curve of this protocol replaces the model for it: the protocol's best algorithm
      // takes the curve's time, the protocol's other candidates go.
      const BandwidthCurve* c = best ? find_curve(hw, primitive, n_ranks, proto) : nullptr;
      if (c) {
        cands.erase(std::remove_if(cands.begin(), cands.end(), [&](const Candidate& x) { return x.protocol == proto; }),
                    cands.end());
        Candidate m = *best;
        m.time_ps = c->time_ps(bytes);
        m.latency_ps = curve_latency_ps(*c, m.time_ps);
        m.from_curve = true;
        cands.push_back(m);
      }
    }
    if (cands.empty()) {
      const std::string what = forced_algo && forced_proto
                                   ? std::string(nccl_algorithm_name(*forced_algo)) + "/" + nccl_protocol_name(*forced_proto)
                               : forced_algo ? std::string(nccl_algorithm_name(*forced_algo))
                               : forced_proto ? std::string(nccl_protocol_name(*forced_proto))
                                              : std::string("no algorithm");
      forced_error(hw, forced_algo ? algo_key : proto_key,
                   what + " cannot run " + collective_primitive_name(primitive) + " over " + std::to_string(n_ranks) +
                       " ranks on this profile" + (why_not.empty() ? "" : ": " + why_not));
    }
  }
  // NCCL's choice: the minimum predicted time, the first in NCCL's order on a tie.
  const auto best = std::min_element(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    if (a.time_ps != b.time_ps) return a.time_ps < b.time_ps;
    if (a.algorithm != b.algorithm) return index_of(a.algorithm) < index_of(b.algorithm);
    return index_of(a.protocol) < index_of(b.protocol);
  });
  plan.algorithm = best->algorithm;
  plan.protocol = best->protocol;
  plan.time_ps = best->time_ps;
  plan.latency_ps = best->latency_ps;
  plan.from_curve = best->from_curve;
  // A curve of the primitive (whatever protocol NCCL ran) replaces the model's time.
  if (!plan.from_curve) {
    if (const BandwidthCurve* c = find_curve(hw, primitive, n_ranks, std::nullopt)) {
      plan.time_ps = c->time_ps(bytes);
      plan.latency_ps = curve_latency_ps(*c, plan.time_ps);
      plan.from_curve = true;
    }
  }
  plan.channels = nccl_channels(hw, comm, plan.algorithm, plan.protocol, bytes);
  const Ps moving = plan.time_ps - plan.latency_ps;
  plan.algbw_gbps = moving > 0 ? gbps_from_bytes_per_ps(static_cast<double>(bytes) / static_cast<double>(moving)) : 0.0;
  return plan;
}

// ---- steps ----

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

Bytes CollectiveSchedule::bytes_to_switch(int rank) const {
  Bytes b = 0;
  for (const auto& st : ranks.at(static_cast<std::size_t>(rank))) b += sum_bytes(st.sends, true);
  return b;
}

Bytes CollectiveSchedule::bytes_from_switch(int rank) const {
  Bytes b = 0;
  for (const auto& st : ranks.at(static_cast<std::size_t>(rank))) b += sum_bytes(st.recvs, true);
  return b;
}

bool CollectiveSchedule::uses_switch() const {
  for (std::size_t r = 0; r < ranks.size(); ++r)
    if (bytes_to_switch(static_cast<int>(r)) > 0 || bytes_from_switch(static_cast<int>(r)) > 0) return true;
  return false;
}

Bytes CollectiveSchedule::port_bytes(int rank, std::size_t step) const {
  const bool spans = ranks_per_node > 0 && ranks_per_node < n_ranks;
  auto sums = [&](int r, bool inter) {
    const CollectiveStep& st = ranks.at(static_cast<std::size_t>(r)).at(step);
    auto counted = [&](const std::vector<CollectiveTransfer>& ts) {
      Bytes b = 0;
      for (const auto& t : ts)
        if (!spans || (t.peer < 0 || t.peer / ranks_per_node != r / ranks_per_node) == inter) b += t.bytes;
      return b;
    };
    return std::pair<Bytes, Bytes>{counted(st.sends), counted(st.recvs)};
  };
  if (!spans) {
    const auto [sent, received] = sums(rank, true);
    return std::max(sent, received);
  }
  // The NIC: every rank of the node that shares it.
  const int node_first = rank / ranks_per_node * ranks_per_node;
  const int per_nic = std::max(1, ranks_per_nic);
  const int nic_first = node_first + (rank - node_first) / per_nic * per_nic;
  const int nic_end = std::min({nic_first + per_nic, node_first + ranks_per_node, n_ranks});
  Bytes nic_sent = 0, nic_received = 0;
  for (int r = nic_first; r < nic_end; ++r) {
    const auto [sent, received] = sums(r, true);
    nic_sent += sent;
    nic_received += received;
  }
  Bytes port = std::max(nic_sent, nic_received);
  if (intra_scale > 0) {
    const auto [sent, received] = sums(rank, false);
    port = std::max(port, static_cast<Bytes>(std::ceil(static_cast<double>(std::max(sent, received)) * intra_scale)));
  }
  return port;
}

Ps CollectiveSchedule::idle_time_ps() const {
  Ps t = ranks.empty() ? 0 : base_latency_ps;
  for (std::size_t s = 0; s < num_steps(); ++s) {
    Bytes port = 0;
    Ps lat = 0;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      port = std::max(port, port_bytes(static_cast<int>(r), s));
      lat = std::max(lat, ranks[r][s].latency_ps);
    }
    t += lat + (port > 0 ? transfer_ps(port, bandwidth_gbps) : 0);
  }
  return t;
}

CollectiveSchedule collective_steps(const HardwareProfile& hw, const CollectivePlan& plan, Bytes bytes, int n_ranks,
                                    const std::string& link_class) {
  if (n_ranks < 1) throw std::invalid_argument("collective steps: n_ranks must be >= 1");
  if (bytes < 0) throw std::invalid_argument("collective steps: negative size");
  CollectiveSchedule sched;
  sched.primitive = plan.primitive;
  sched.algorithm = plan.algorithm;
  sched.protocol = plan.protocol;
  sched.n_ranks = n_ranks;
  sched.bytes_total = bytes;
  sched.ranks.assign(static_cast<std::size_t>(n_ranks), {});
  if (n_ranks == 1 || bytes == 0) return sched;  // nothing to move: no steps, no latency
  const NcclCommunicator comm = nccl_communicator(hw, n_ranks, link_class, plan.placement.ranks_per_node);
  sched.ranks = nccl_algorithm_steps(comm, plan.primitive, plan.algorithm, bytes);
  if (comm.n_nodes > 1) {
    sched.ranks_per_node = comm.ranks_per_node;
    // The channel-group algorithms share the node's NICs and cross NVLink inside it. Grouped
    // send/recv runs on each GPU's own NIC (nccl_p2p_cost), its NVLink blocks within the NIC's time.
    if (plan.algorithm != A::SendRecv) {
      sched.ranks_per_nic = comm.ranks_per_nic;
      if (comm.intra_port_gbps > 0) sched.intra_scale = comm.port_gbps / comm.intra_port_gbps;
    }
  }
  const std::size_t steps = sched.num_steps();

  // Latency: NCCL's base latency once (no more than the plan's latency), the rest spread evenly over
  // the steps NCCL's latency model counts; the last step takes the rounding remainder, so the
  // latencies add up to the plan's exactly.
  const A lat_algo = plan.algorithm == A::SendRecv ? A::Ring : plan.algorithm;
  const Ps base = std::min<Ps>(plan.latency_ps, ps_from_us(hw.comm.tuner.at(lat_algo, plan.protocol).base_us));
  sched.base_latency_ps = base;
  const Ps rest = plan.latency_ps - base;
  const Ps each = steps > 0 ? rest / static_cast<Ps>(steps) : 0;
  for (std::size_t s = 0; s < steps; ++s) {
    const Ps lat = s + 1 == steps ? rest - each * static_cast<Ps>(steps - 1) : each;
    for (auto& r : sched.ranks) r[s].latency_ps = lat;
  }
  // Bandwidth: the busiest port's bytes over all steps move in the plan's S-proportional time.
  Bytes port_total = 0;
  for (std::size_t s = 0; s < steps; ++s) {
    Bytes port = 0;
    for (int r = 0; r < n_ranks; ++r) port = std::max(port, sched.port_bytes(r, s));
    port_total += port;
  }
  const Ps moving = plan.time_ps - plan.latency_ps;
  sched.bandwidth_gbps = moving > 0 && port_total > 0
                             ? gbps_from_bytes_per_ps(static_cast<double>(port_total) / static_cast<double>(moving))
                             : std::numeric_limits<double>::infinity();
  return sched;
}

// ---- shorthands ----

Ps collective_time_ps(const HardwareProfile& hw, CollectivePrimitive primitive, Bytes bytes, int n_ranks,
                      const std::string& link_class, std::optional<NcclAlgorithm> algorithm) {
  if (n_ranks <= 1 || bytes <= 0) return 0;
  return plan_collective(hw, primitive, bytes, n_ranks, link_class, CollectiveOverrides{algorithm, std::nullopt}).time_ps;
}

Ps collective_model_time_ps(const HardwareProfile& hw, CollectivePrimitive primitive, Bytes bytes, int n_ranks,
                            const std::string& link_class, std::optional<NcclAlgorithm> algorithm) {
  if (n_ranks <= 1 || bytes <= 0) return 0;
  HardwareProfile model = hw;
  model.curves.clear();
  return collective_time_ps(model, primitive, bytes, n_ranks, link_class, algorithm);
}

CollectiveSchedule collective_steps(const HardwareProfile& hw, CollectivePrimitive primitive, Bytes bytes,
                                    int n_ranks, const std::string& link_class, std::optional<NcclAlgorithm> algorithm) {
  if (n_ranks < 1) throw std::invalid_argument("collective steps: n_ranks must be >= 1");
  const CollectivePlan plan =
      plan_collective(hw, primitive, bytes, n_ranks, link_class, CollectiveOverrides{algorithm, std::nullopt});
  return collective_steps(hw, plan, bytes, n_ranks, link_class);
}

}  // namespace overlap
