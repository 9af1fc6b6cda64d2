// A MoE layer's dispatch or combine as workload.all_to_all runs it (docs/guide/moe.md "Dispatch across
// nodes"): NCCL's all-to-allv (GraphBuilder::add_all_to_allv), or one comm kernel per member timed by
// DeepEP's cost model (cost_model/deepep.hpp) or the hierarchical all-to-all's
// (cost_model/hierarchical_all_to_all.hpp). Those kernels are closed forms at either fidelity (no step
// decomposition); their bytes load the links along the routes the algorithm takes, so other traffic
// contends with them:
//   DeepEP normal   a token's copy for another node over RDMA to the GPU of its own index there, then
//                   over NVLink to the expert's GPU (bytes scaled by deepep_dedup_ratios, as
//                   deepep_port_bytes_of_pairs); its own node's over NVLink. Holds kDeepEpNormalSms SMs.
//   DeepEP low lat. every selection straight to the expert's GPU; holds no SM once issued.
//   hierarchical    source -> its node's exchanger -> the other node's exchanger -> destination; holds
//                   the SMs NCCL's send/recv would (the even all-to-all's channels).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <map>
#include <stdexcept>

#include "cost_model/deepep.hpp"
#include "cost_model/hierarchical_all_to_all.hpp"
#include "sim/schemes/moe.hpp"

namespace overlap::sim {

namespace {

// GPUs of the EP group per node: the profile's node, or the whole group when it fits in one.
int group_gpus_per_node(const HardwareProfile& hw, int members) {
  const FabricSpec& f = hw.fabric;
  const int per_node = f.topology == "multi_node" && f.gpus_per_node > 0 ? f.gpus_per_node : f.num_gpus;
  return std::min(members, per_node);
}

struct ExpertExchange {
  Ps time_ps = 0;
  Ps fixed_ps = 0;  // of time_ps, the part that moves no bytes
  int sms = 0;
  // sends[i][peer member] the bytes member i puts on the wire to that member.
  std::vector<std::map<int, double>> sends;
};

ExpertExchange price_exchange(const GraphBuilder& b, const Moe& m, const overlap::PairBytes& pairs) {
  const HardwareProfile& hw = b.hardware();
  const int n = static_cast<int>(pairs.size());
  const int g = group_gpus_per_node(hw, n);
  auto node_of = [&](int r) { return r / g; };
  ExpertExchange x;
  x.sends.assign(static_cast<std::size_t>(n), {});
  auto put = [&](int s, int d, double bytes) {
    if (s != d && bytes > 0) x.sends[static_cast<std::size_t>(s)][d] += bytes;
  };
  if (m.all_to_all == MoeAllToAll::hierarchical) {
    const HierarchicalRates rates = hierarchical_rates(hw);
    const HierarchicalAllToAll h = hierarchical_all_to_all(pairs, g, rates);
    x.time_ps = h.time_ps;
    for (const auto& [ps, us] : {std::pair{h.gather_ps, rates.nvlink_phase_us}, std::pair{h.exchange_ps, rates.network_phase_us},
                                 std::pair{h.scatter_ps, rates.nvlink_phase_us}})
      if (ps > 0) x.fixed_ps += checked_ps(us * 1e6);
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) {
        const double bytes = static_cast<double>(pairs[static_cast<std::size_t>(s)][static_cast<std::size_t>(d)]);
        if (node_of(s) == node_of(d)) {
          put(s, d, bytes);
          continue;
        }
        const int out = node_of(s) * g + node_of(d) % g, in = node_of(d) * g + node_of(s) % g;
        put(s, out, bytes);
        put(out, in, bytes);
        put(in, d, bytes);
      }
    const CollectiveOverrides overrides{};
    x.sms = all_to_allv_cost(hw, pairs, collective_link_class(hw, n), overrides).slowest_plan.channels;
    return x;
  }
  const DeepEpKernel kernel = m.all_to_all == MoeAllToAll::deepep ? DeepEpKernel::normal : DeepEpKernel::low_latency;
  const DeepEpLayout layout{n, g, m.experts, m.top_k, m.max_nodes};
  const DeepEpRates rates = deepep_rates(hw);
  x.time_ps = deepep_time_ps(deepep_port_bytes_of_pairs(kernel, layout, pairs), rates);
  x.fixed_ps = std::min(x.time_ps, checked_ps(rates.latency_us * 1e6));
  x.sms = kernel == DeepEpKernel::normal ? std::min(kDeepEpNormalSms, hw.gpu.sm_count) : 0;
  // The routes' bytes, as deepep_port_bytes_of_pairs loads the ports.
  const DeepEpDedup dedup = deepep_dedup_ratios(kernel, layout);
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      const double bytes = static_cast<double>(pairs[static_cast<std::size_t>(s)][static_cast<std::size_t>(d)]);
      if (kernel == DeepEpKernel::low_latency || node_of(s) == node_of(d)) {
        put(s, d, kernel == DeepEpKernel::low_latency ? bytes : bytes * dedup.nvlink);
        continue;
      }
      const int forwarder = deepep_forwarder(s, d, g);
      put(s, forwarder, bytes * dedup.rdma);
      put(forwarder, d, bytes * dedup.nvlink);
    }
  return x;
}

}  // namespace

std::vector<OpId> add_expert_all_to_allv(GraphBuilder& b, const Moe& m, const AllToAllvSpec& spec) {
  if (m.all_to_all == MoeAllToAll::nccl) return b.add_all_to_allv(spec);
  std::vector<int> members = spec.ranks;
  if (members.empty())
    for (int r = 0; r < b.ranks(); ++r) members.push_back(r);
  const int n = static_cast<int>(members.size());
  if (spec.streams.size() != members.size() || spec.bytes.size() != members.size() ||
      (!spec.deps.empty() && spec.deps.size() != members.size()))
    throw GraphError(fmt::format("expert all-to-all '{}': streams, bytes and deps must have one entry per member", spec.name));
  auto deps_of = [&](int i) { return spec.deps.empty() ? std::vector<OpId>{} : spec.deps[static_cast<std::size_t>(i)]; };
  ExpertExchange x;
  try {
    x = price_exchange(b, m, spec.bytes);
  } catch (const std::invalid_argument& e) {
    // The loader checks the layout against the profile (sim/scenario.cpp check_moe_all_to_all); a sweep
    // or an override that changes the profile afterwards lands here.
    throw InputError(m.file, m.line, "workload.all_to_all", e.what());
  }
  Bytes largest_row = 0;
  for (const auto& row : spec.bytes) {
    Bytes sum = 0;
    for (const Bytes v : row) sum = checked_add(sum, v);
    largest_row = std::max(largest_row, sum);
  }
  std::vector<OpId> out;
  if (largest_row == 0 || n <= 1) {  // nothing crosses a port: a zero-time marker keeps stream order
    for (int i = 0; i < n; ++i)
      out.push_back(b.add_delay(members[static_cast<std::size_t>(i)], spec.streams[static_cast<std::size_t>(i)], 0,
                                spec.name, deps_of(i), true));
    return out;
  }
  const std::int64_t id = b.new_collective_id();
  b.record_call(CollectiveCall{id, spec.name, Primitive::all_to_all, largest_row, n, moe_all_to_all_name(m.all_to_all),
                               "-", x.sms});
  const HardwareProfile& hw = b.hardware();
  for (int i = 0; i < n; ++i) {
    Op op;
    op.name = spec.name;
    op.kind = OpKind::comm_kernel;
    op.stream = spec.streams[static_cast<std::size_t>(i)];
    op.comm = true;
    op.deps = deps_of(i);
    op.channels = x.sms;
    op.collective = id;
    op.members = n;
    op.host_ps = hw.launch.collective_host_ps(CollectivePrimitive::all_to_all);
    op.duration_ps = x.time_ps;
    op.bytes = largest_row;
    // Byte accounting: what the algorithm moves on each hop (a forwarded token counts on both hops; DeepEP's
    // normal kernels' deduplicated copies), not the pairs' logical blocks.
    for (const auto& [peer, bytes] : x.sends[static_cast<std::size_t>(i)]) {
      const Bytes whole = static_cast<Bytes>(std::ceil(bytes));
      if (whole <= 0) continue;
      op.curve_sends.push_back(PeerBytes{members[static_cast<std::size_t>(peer)], whole});
      b.add_required_bytes(members[static_cast<std::size_t>(i)], members[static_cast<std::size_t>(peer)], whole);
    }
    op.curve_latency_ps = std::clamp<Ps>(x.fixed_ps, 0, op.duration_ps);
    out.push_back(b.graph().add(std::move(op)));
  }
  return out;
}

std::optional<std::string> moe_all_to_all_refusal(const Workload& w, const std::string& scheme) {
  const Moe* m = std::get_if<Moe>(&w.shape);
  if (const auto* t = std::get_if<Transformer>(&w.shape); t && t->moe) m = &*t->moe;
  if (m == nullptr || m->all_to_all == MoeAllToAll::nccl || scheme != "moe_tile_fused") return std::nullopt;
  return fmt::format("moe_tile_fused moves each tile's rows with its own SM copies inside the expert GEMMs; "
                     "all_to_all {} is for the schemes that call an all-to-all (no_overlap, moe_pipeline, "
                     "moe_flashoverlap)",
                     moe_all_to_all_name(m->all_to_all));
}

}  // namespace overlap::sim
