// The scheme-swap what-if (tools/trace_swap.hpp).
#include "tools/trace_swap.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "calibrate/traces/profile_fit.hpp"
#include "sim/metrics.hpp"
#include "sim/workload.hpp"

namespace overlap {

namespace {

bool is_all_gather(const traces::RankTrace& t, const traces::GpuActivity& a) {
  if (a.link != traces::OpLink::comm) return false;
  const traces::CommOp& op = t.comm_ops[static_cast<std::size_t>(a.op)];
  const std::string& named = t.names[op.collective];
  const std::string c = named.empty() ? traces::collective_from_kernel_name(t.names[a.name])
                                      : traces::collective_from_kernel_name(named);
  return (c.empty() ? named : c) == "all_gather";
}

}  // namespace

SwapResult swap_all_gathers(const traces::ReplayGraph& g, const std::vector<const traces::RankTrace*>& ranks,
                            const HardwareProfile& hw, const std::string& scheme, std::vector<std::int64_t>& durations) {
  SwapResult out;
  out.scheme = scheme;
  // Per (rank, device): the GEMM nodes by measured start.
  std::map<std::pair<int, std::int32_t>, std::vector<std::size_t>> kernels;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const traces::ReplayNode& n = g.nodes[i];
    const traces::GpuActivity& a = ranks[static_cast<std::size_t>(n.rank)]->activities[static_cast<std::size_t>(n.activity)];
    if (a.cls == traces::ActivityClass::compute) kernels[{n.rank, a.device}].push_back(i);
  }
  const auto start_of = [&](std::size_t i) {
    const traces::ReplayNode& n = g.nodes[i];
    return ranks[static_cast<std::size_t>(n.rank)]->activities[static_cast<std::size_t>(n.activity)].start_ns;
  };
  for (auto& [key, list] : kernels)
    std::stable_sort(list.begin(), list.end(), [&](std::size_t x, std::size_t y) { return start_of(x) < start_of(y); });
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, int, int>, std::int64_t> priced;  // m, n, k, dtype, group
  std::vector<bool> taken(g.nodes.size(), false);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const traces::ReplayNode& n = g.nodes[i];
    const traces::RankTrace& t = *ranks[static_cast<std::size_t>(n.rank)];
    const traces::GpuActivity& ag = t.activities[static_cast<std::size_t>(n.activity)];
    if (ag.cls != traces::ActivityClass::communication || !is_all_gather(t, ag)) continue;
    ++out.all_gathers;
    const traces::CommOp& c = t.comm_ops[static_cast<std::size_t>(ag.op)];
    if (c.out_nelems <= 0 || c.group_size < 2 || c.group_size > hw.fabric.num_gpus) continue;
    // The first compute kernel on this GPU that starts once the all-gather ended: a GEMM, or no match.
    const auto it = kernels.find({n.rank, ag.device});
    if (it == kernels.end()) continue;
    const auto next = std::find_if(it->second.begin(), it->second.end(), [&](std::size_t j) { return start_of(j) >= ag.end_ns; });
    if (next == it->second.end() || taken[*next]) continue;
    const traces::GpuActivity& gemm = t.activities[static_cast<std::size_t>(g.nodes[*next].activity)];
    if (gemm.kind != traces::KernelKind::gemm || gemm.link != traces::OpLink::gemm) continue;
    const traces::GemmOp& op = t.gemm_ops[static_cast<std::size_t>(gemm.op)];
    std::int64_t gathered = 0;
    if (op.batch != 1 || __builtin_mul_overflow(op.m, op.k, &gathered) || gathered != c.out_nelems) continue;
    const auto dtype = traces::model_dtype(t.names[op.dtype]);
    if (!dtype) continue;
    const auto key = std::make_tuple(op.m, op.n, op.k, static_cast<int>(*dtype), static_cast<int>(c.group_size));
    auto found = priced.find(key);
    if (found == priced.end()) {
      sim::Workload w;
      w.kind = sim::WorkloadKind::gemm_collective;
      w.tp = static_cast<int>(c.group_size);
      w.shape = sim::GemmCollective{op.m, op.n, op.k, *dtype, sim::Primitive::all_gather, false};
      const std::vector<sim::SchemeResult> r =
          sim::evaluate_all({sim::SchemeRequest{scheme, nlohmann::json::object()}}, w, hw, sim::Fidelity::steps);
      if (r.empty())
        throw std::invalid_argument(fmt::format("scheme '{}' does not run an all-gather before a GEMM", scheme));
      found = priced.emplace(key, static_cast<std::int64_t>(r.front().latency_ps / 1000)).first;
    }
    taken[*next] = true;
    SwapPair p;
    p.rank = n.rank;
    p.all_gather = i;
    p.gemm = *next;
    p.m = op.m;
    p.n = op.n;
    p.k = op.k;
    p.group = static_cast<int>(c.group_size);
    p.dtype = dtype_name(*dtype);
    p.measured_ns = durations[i] + durations[*next];
    p.scheme_ns = found->second;
    durations[i] = 0;
    durations[*next] = found->second;
    out.pairs.push_back(p);
  }
  return out;
}

}  // namespace overlap
