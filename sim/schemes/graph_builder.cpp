#include "sim/schemes/graph_builder.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "sim/transfer_price.hpp"

namespace overlap::sim {

std::optional<NcclAlgorithm> default_algorithm(const HardwareProfile& hw, Primitive p) {
  // NCCL runs all-to-all as grouped send/recv whatever NCCL_ALGO says; every other collective takes
  // the profile's NCCL_ALGO-like setting, or NCCL's choice per call (plan_collective).
  if (p == Primitive::all_to_all) return NcclAlgorithm::SendRecv;
  return hw.comm.algorithm;
}

CollectivePrimitive to_collective_primitive(Primitive p) {
  switch (p) {
    case Primitive::all_reduce: return CollectivePrimitive::all_reduce;
    case Primitive::reduce_scatter: return CollectivePrimitive::reduce_scatter;
    case Primitive::all_gather: return CollectivePrimitive::all_gather;
    case Primitive::all_to_all: return CollectivePrimitive::all_to_all;
  }
  throw std::invalid_argument("unknown primitive");
}

std::string collective_link_class(const HardwareProfile& hw, int ranks) {
  const FabricSpec& f = hw.fabric;
  auto has = [&](const char* c) { return f.links.count(c) > 0; };
  // A ring over GPUs of several nodes (or NUMA domains) is as fast as its slowest hop.
  if (f.topology == "multi_node" && f.gpus_per_node > 0 && ranks > f.gpus_per_node && has("network"))
    return "network";
  if (f.topology == "pcie") {
    if (f.gpus_per_numa > 0 && ranks > f.gpus_per_numa && has("host") &&
        (!has("pcie") || f.links.at("host").bandwidth_gbps < f.links.at("pcie").bandwidth_gbps))
      return "host";
    if (has("pcie")) return "pcie";
  }
  if (has("nvlink")) return "nvlink";
  if (!f.links.empty()) return f.links.begin()->first;
  throw std::invalid_argument("hardware.fabric.links: no link class a collective could use");
}

GraphBuilder::GraphBuilder(const BuildContext& ctx) : GraphBuilder(ctx, std::max(1, ctx.workload.tp)) {}

GraphBuilder::GraphBuilder(const BuildContext& ctx, int ranks)
    : ctx_(ctx),
      graph_(ranks),
      required_(static_cast<std::size_t>(ranks), std::vector<Bytes>(static_cast<std::size_t>(ranks), 0)) {}

StreamId GraphBuilder::add_stream(int rank, const std::string& name, int priority) {
  return graph_.add_stream(rank, fmt::format("r{}.{}", rank, name), priority);
}

std::vector<StreamId> GraphBuilder::add_streams(const std::string& name, int priority) {
  std::vector<StreamId> out;
  for (int r = 0; r < ranks(); ++r) out.push_back(add_stream(r, name, priority));
  return out;
}

RankStreams GraphBuilder::add_compute_and_comm_streams() {
  RankStreams s;
  // The communication stream gets the higher priority so a collective is not starved of SMs by the
  // GEMM it overlaps (flashoverlap-paper Sec. 4, high-priority comm stream; facts.md "Production").
  s.compute = add_streams("compute", 0);
  s.comm = add_streams("comm", 1);
  return s;
}

namespace {

void check_stream_rank(const TaskGraph& g, int rank, StreamId stream, const std::string& name) {
  if (stream < 0 || stream >= static_cast<StreamId>(g.streams().size()))
    throw GraphError(fmt::format("op '{}': unknown stream {}", name, stream));
  if (g.streams()[static_cast<std::size_t>(stream)].rank != rank)
    throw GraphError(fmt::format("op '{}': stream {} is not on rank {}", name, stream, rank));
}


// What every op starts from: its stream (checked to be on `rank`), name, kind and dependencies.
Op new_op(const TaskGraph& g, int rank, StreamId stream, OpKind kind, const std::string& name,
          const std::vector<OpId>& deps) {
  check_stream_rank(g, rank, stream, name);
  Op op;
  op.name = name;
  op.kind = kind;
  op.stream = stream;
  op.deps = deps;
  return op;
}

}  // namespace

// HBM traffic of one GEMM tile at full speed (design.md "The simulation model": HBM), the whole GEMM's spread evenly
// over its tiles; never less than reading A and B and writing C once (a skinny GEMM streams its
// weights).
//   - gpu.l2_bytes given: an L2 capacity model. The GEMM's L2 share is the GPU's L2, divided among
//     the virtual ranks that share one GPU (fabric.topology virtual). Operands that fit in it
//     (A + B, or B alone) come from HBM once; otherwise the raster (N-fastest within a row of tiles,
//     the launch order of the reference kernels' signalling GEMM) re-reads B once per wave's worth
//     of tile rows: a wave of sm_count x ctas_per_sm tiles covers that many whole rows, which read
//     B together. A row's band of A stays in L2 while its row runs. The runner's GEMMs on 4 virtual ranks
//     (own A 16 MB, B 32 MB each, 12.5 MB of L2 each) ran 1.22-1.34x slower together than alone,
//     1.06x with one shared A and B (H100, calibrate/results/...: gemm_concurrent).
//   - otherwise: each tile streams (tile_m + tile_n) x K operands of which 1 / gemm_l2_reuse misses
//     L2, and writes its output tile.
Bytes gemm_tile_hbm_bytes(const HardwareProfile& hw, const GemmShape& shape, const GemmPlan& plan) {
  const double e = dtype_bytes(shape.dtype);
  const double tiles = static_cast<double>(plan.tiles);
  const double k = static_cast<double>(shape.k);
  if (hw.gpu.l2_bytes > 0) {
    const int sharing = hw.fabric.topology == "virtual" ? std::max(1, hw.fabric.num_gpus) : 1;
    const double share = static_cast<double>(hw.gpu.l2_bytes) / sharing;
    const double a = static_cast<double>(shape.m) * k * e, b = k * static_cast<double>(shape.n) * e;
    const double rows = std::ceil(static_cast<double>(shape.m) / plan.tile_m), cols = std::ceil(static_cast<double>(shape.n) / plan.tile_n);
    const double wave = static_cast<double>(hw.gpu.sm_count) * plan.ctas_per_sm;
    const double row_bands = std::ceil(rows / std::max(1.0, std::floor(wave / cols)));
    const double operands = a + b <= share || b <= share ? a + b : a + b * row_bands;
    const double c = static_cast<double>(shape.m) * static_cast<double>(shape.n) * e;
    return static_cast<Bytes>(std::ceil((operands + c) / tiles));
  }
  const double tile_model = tiles * (static_cast<double>(plan.tile_m + plan.tile_n) * k * e / hw.gpu.gemm_l2_reuse +
                                     static_cast<double>(plan.tile_m) * plan.tile_n * e);
  const double once = (static_cast<double>(shape.m) * k + k * static_cast<double>(shape.n) +
                       static_cast<double>(shape.m) * static_cast<double>(shape.n)) * e;
  return static_cast<Bytes>(std::ceil(std::max(tile_model, once) / tiles));
}

OpId GraphBuilder::add_gemm(int rank, StreamId stream, const GemmShape& shape, const GemmOptions& options) {
  check_stream_rank(graph_, rank, stream, options.name);
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0) return add_delay(rank, stream, 0, options.name, options.deps);
  const HardwareProfile& hw = hardware();
  GemmPlan plan;
  try {
    plan = plan_gemm(hw, shape);
  } catch (const RangeError& e) {
    throw RangeError("kernel '" + options.name + "': " + e.what());  // which of the graph's GEMMs
  }
  const int sms = options.sm_budget > 0 ? std::min(options.sm_budget, hw.gpu.sm_count) : hw.gpu.sm_count;

  Op op = new_op(graph_, rank, stream, OpKind::tiled, options.name, options.deps);
  op.ctas = plan.tiles;
  op.ctas_per_sm = plan.ctas_per_sm;
  op.cta_ps = plan.cta_ps;
  op.tile_counters = options.tile_counters;
  // Memory-bound regime (small M: decode GEMVs, thin data-slicing chunks): streaming the weights
  // takes longer than the waves' arithmetic, so each wave is stretched until the GEMM takes
  // memory_ps (gemm_model.hpp: max(waves * cta, memory_ps)).
  const std::int64_t waves = plan.waves(sms);
  op.reference_sms = plan.reference_sms;
  if (waves > 0 && plan.memory_ps > checked_mul(waves, op.cta_ps)) {
    op.cta_ps = ceil_div(plan.memory_ps, waves);
    op.reference_sms = 0;  // HBM-bound: the tile time is the weights' streaming, not the SMs' rate
  }
  op.cta_ps = checked_add(op.cta_ps, checked_ps(std::round(static_cast<double>(op.cta_ps) * options.epilogue_overhead)));
  op.hbm_bytes_per_cta = gemm_tile_hbm_bytes(hw, shape, plan);
  // An SM budget (TransformerEngine set_sm_margin, facts.md "Production overlap implementations")
  // is a grid of budget CTAs looping over the tiles: a persistent kernel capped at the budget.
  if (options.persistent || options.sm_budget > 0) {
    op.kind = OpKind::persistent;
    op.max_ctas = options.sm_budget > 0 ? sms * plan.ctas_per_sm : 0;
  }
  return graph_.add(std::move(op));
}

std::int64_t GroupedGemmPlan::waves(int sms) const {
  const std::int64_t slots = static_cast<std::int64_t>(std::max(1, sms)) * std::max(1, ctas_per_sm);
  return tiles <= 0 ? 0 : (tiles + slots - 1) / slots;
}

Ps GroupedGemmPlan::time_ps(int sms) const { return std::max(checked_mul(waves(sms), cta_ps), memory_ps); }

GroupedGemmPlan plan_grouped_gemm(const HardwareProfile& hw, const std::vector<GemmShape>& shapes) {
  GroupedGemmPlan g;
  double work_ps = 0, hbm = 0;
  std::int64_t largest = -1;
  for (const GemmShape& s : shapes) {
    if (s.m <= 0 || s.n <= 0 || s.k <= 0) {
      g.groups.push_back(GemmPlan{});
      continue;
    }
    const GemmPlan p = plan_gemm(hw, s);
    g.groups.push_back(p);
    g.tiles += p.tiles;
    work_ps += static_cast<double>(p.tiles) * static_cast<double>(p.cta_ps);
    hbm += static_cast<double>(p.tiles) * static_cast<double>(gemm_tile_hbm_bytes(hw, s, p));
    g.memory_ps = checked_add(g.memory_ps, p.memory_ps);
    if (p.tiles > largest) {
      largest = p.tiles;
      g.ctas_per_sm = p.ctas_per_sm;
      g.reference_sms = p.reference_sms;
    }
  }
  if (g.tiles > 0) {
    g.cta_ps = checked_ps(std::ceil(work_ps / static_cast<double>(g.tiles)));
    g.hbm_bytes_per_cta = static_cast<Bytes>(std::ceil(hbm / static_cast<double>(g.tiles)));
    // The grid of the whole kernel (GemmPlan::reference_sms of one group's tiles).
    g.reference_sms = static_cast<int>(std::min<std::int64_t>(hw.gpu.sm_count, ceil_div(g.tiles, g.ctas_per_sm)));
  }
  return g;
}

OpId GraphBuilder::add_grouped_gemm(int rank, StreamId stream, const std::vector<GemmShape>& shapes,
                                    const GemmOptions& options) {
  check_stream_rank(graph_, rank, stream, options.name);
  const HardwareProfile& hw = hardware();
  const GroupedGemmPlan plan = plan_grouped_gemm(hw, shapes);
  if (plan.tiles <= 0) return add_delay(rank, stream, 0, options.name, options.deps);
  const int sms = options.sm_budget > 0 ? std::min(options.sm_budget, hw.gpu.sm_count) : hw.gpu.sm_count;
  Op op = new_op(graph_, rank, stream, OpKind::tiled, options.name, options.deps);
  op.ctas = plan.tiles;
  op.ctas_per_sm = plan.ctas_per_sm;
  op.cta_ps = plan.cta_ps;
  op.tile_counters = options.tile_counters;
  op.reference_sms = plan.reference_sms;
  // As add_gemm: a memory-bound grouped GEMM (few rows per expert) streams every expert's weights.
  const std::int64_t waves = plan.waves(sms);
  if (waves > 0 && plan.memory_ps > checked_mul(waves, op.cta_ps)) {
    op.cta_ps = ceil_div(plan.memory_ps, waves);
    op.reference_sms = 0;
  }
  op.cta_ps = checked_add(op.cta_ps, checked_ps(std::round(static_cast<double>(op.cta_ps) * options.epilogue_overhead)));
  op.hbm_bytes_per_cta = plan.hbm_bytes_per_cta;
  if (options.persistent || options.sm_budget > 0) {
    op.kind = OpKind::persistent;
    op.max_ctas = options.sm_budget > 0 ? sms * plan.ctas_per_sm : 0;
  }
  return graph_.add(std::move(op));
}

OpId GraphBuilder::add_flop_kernel(int rank, StreamId stream, const std::string& name, double total_flops,
                                   std::int64_t tiles, DType dtype, const std::vector<OpId>& deps) {
  check_stream_rank(graph_, rank, stream, name);
  if (!(total_flops > 0) || tiles <= 0) return add_delay(rank, stream, 0, name, deps);
  // Per-SM rate of the GEMM model: a 128x128 tile over K = tile_flops / (2*128*128) reproduces
  // plan_gemm's per-CTA time, so attention tiles run at the same tensor-core rate as GEMM tiles.
  const double tile_flops = total_flops / static_cast<double>(tiles);
  const std::int64_t k_equiv = std::max<std::int64_t>(1, std::llround(tile_flops / (2.0 * 128 * 128)));
  GemmShape probe{128, 128, k_equiv, dtype};
  const GemmPlan plan = plan_gemm(hardware(), probe);
  Op op = new_op(graph_, rank, stream, OpKind::tiled, name, deps);
  op.ctas = tiles;
  op.ctas_per_sm = 1;
  op.cta_ps = plan.cta_ps;
  op.reference_sms = plan.reference_sms;
  return graph_.add(std::move(op));
}

OpId GraphBuilder::add_memory(int rank, StreamId stream, const MemoryKernel& kernel) {
  Op op = new_op(graph_, rank, stream, OpKind::memory, kernel.name, kernel.deps);
  op.bytes = kernel.bytes;
  op.channels = kernel.sms;
  return graph_.add(std::move(op));
}

Ps GraphBuilder::collective_ps(Primitive primitive, Bytes bytes, int members) const {
  if (members <= 1 || bytes <= 0) return 0;
  return plan_collective(hardware(), to_collective_primitive(primitive), bytes, members,
                         collective_link_class(hardware(), members))
      .time_ps;
}

namespace {

// Curve fidelity: the bytes member `i` sends to each peer over the whole algorithm
// load the links they cross, as flows, so a collective contends with concurrent traffic; the
// plan's latency (NCCL's base + per-step latencies) is the part of the curve time that moves no bytes.
void set_curve_traffic(Op& op, const CollectiveSchedule& schedule, int i, const std::vector<int>& members,
                       Ps latency_ps) {
  std::map<int, Bytes> to;
  Bytes from_switch = 0;
  for (const CollectiveStep& st : schedule.ranks[static_cast<std::size_t>(i)]) {
    for (const CollectiveTransfer& t : st.sends)
      to[t.peer < 0 ? kSwitchPeer : members[static_cast<std::size_t>(t.peer)]] += t.bytes;
    for (const CollectiveTransfer& t : st.recvs)
      if (t.peer < 0) from_switch += t.bytes;
  }
  for (const auto& [peer, bytes] : to)
    if (bytes > 0) op.curve_sends.push_back(PeerBytes{peer, bytes});
  op.curve_from_switch = from_switch;
  op.curve_latency_ps = std::clamp<Ps>(latency_ps, 0, op.duration_ps);
  op.curve_reduces = schedule.primitive == CollectivePrimitive::all_reduce ||
                     schedule.primitive == CollectivePrimitive::reduce_scatter;
}

// The protocol's bandwidth as a fraction of the ports' line rate, the engine's Op::link_efficiency in
// (0, 1]. The schedule's rate is its busiest port's bytes over whole picoseconds of moving time, so at
// line rate (an efficiency-1 profile) it can come out a hair above the ports' (1 + 2e-7 seen), and a
// transfer too small to take a picosecond has no finite rate: both move at the line rate.
double step_link_efficiency(double schedule_gbps, double port_gbps) {
  if (!(port_gbps > 0) || !(schedule_gbps > 0)) return 1.0;
  return std::min(1.0, schedule_gbps / port_gbps);
}

std::vector<OpId> member_deps(const std::vector<std::vector<OpId>>& deps, int i) {
  return deps.empty() ? std::vector<OpId>{} : deps[static_cast<std::size_t>(i)];
}

// Member i's kernel of collective call `id` (NCCL's kind: a communication kernel holding `channels`
// SMs, issued with `host_ps` of enqueue) on its stream, checked to be its rank's; its timing (steps
// or curve) is the caller's.
template <class Spec>
Op collective_member_op(const TaskGraph& g, const Spec& spec, const std::vector<int>& members, int i, int channels,
                        std::int64_t id, Ps host_ps) {
  const StreamId stream = spec.streams[static_cast<std::size_t>(i)];
  check_stream_rank(g, members[static_cast<std::size_t>(i)], stream, spec.name);
  Op op;
  op.name = spec.name;
  op.kind = OpKind::comm_kernel;
  op.stream = stream;
  op.comm = true;
  op.deps = member_deps(spec.deps, i);
  op.channels = channels;
  op.collective = id;
  op.members = static_cast<int>(members.size());
  op.host_ps = host_ps;
  return op;
}

// Member i's part of a steps-fidelity schedule as its op's phases (design.md "Collectives", fidelity
// `steps`): each step a phase of transfers with its protocol latency; the one-off base latency is paid
// after the phases (duration_ps). Schedule peers are member indices (-1 the switch).
void set_step_phases(Op& op, const CollectiveSchedule& schedule, int i, const std::vector<int>& members,
                     double link_efficiency) {
  op.duration_ps = schedule.base_latency_ps;
  op.link_efficiency = link_efficiency;
  op.phase_latency_covers_wire = true;
  auto peer_of = [&](int p) { return p < 0 ? kSwitchPeer : members[static_cast<std::size_t>(p)]; };
  for (const CollectiveStep& st : schedule.ranks[static_cast<std::size_t>(i)]) {
    Phase ph;
    ph.latency_ps = st.latency_ps;
    ph.reduce = st.reduce_bytes > 0;  // the reduction streams through HBM as the bytes arrive
    for (const CollectiveTransfer& t : st.sends)
      if (t.bytes > 0) ph.sends.push_back({peer_of(t.peer), t.bytes});
    for (const CollectiveTransfer& t : st.recvs)
      if (t.bytes > 0) ph.recvs.push_back({peer_of(t.peer), t.bytes});
    op.phases.push_back(std::move(ph));
  }
}

// The steps a collective of `plan` runs at steps fidelity, and that its byte accounting counts.
CollectiveSchedule engine_schedule(const HardwareProfile& hw, const CollectivePlan& plan, Bytes bytes, int n,
                                   const std::string& link) {
  // NVLS's legs to and from the switch run on the GPU's own switch links (the engine's kSwitchPeer).
  try {
    return collective_steps(hw, plan, bytes, n, link);
  } catch (const std::invalid_argument&) {
    // NVLSTree / CollNet: no steps model yet (nccl_algorithms.hpp). Their curve fidelity has their
    // time; their steps (and byte accounting) are the ring's with the same protocol.
  }
  CollectivePlan ring = plan_collective(hw, plan.primitive, bytes, n, link,
                                        CollectiveOverrides{NcclAlgorithm::Ring, NcclProtocol::Simple}, plan.placement);
  return collective_steps(hw, ring, bytes, n, link);
}

// A collective call's member ranks (none named: every rank), after checking that the spec gives one
// stream per member, and one dependency list per member or none. `what` names the call in the error.
template <class Spec>
std::vector<int> checked_members(const GraphBuilder& b, const char* what, const Spec& spec) {
  std::vector<int> members = spec.ranks;
  if (members.empty())
    for (int r = 0; r < b.ranks(); ++r) members.push_back(r);
  if (spec.streams.size() != members.size())
    throw GraphError(fmt::format("{} '{}': {} streams for {} members", what, spec.name, spec.streams.size(), members.size()));
  if (!spec.deps.empty() && spec.deps.size() != members.size())
    throw GraphError(fmt::format("{} '{}': deps must be empty or one list per member", what, spec.name));
  return members;
}

// A call that moves nothing: a zero-time marker per member keeps its stream's order.
template <class Spec>
std::vector<OpId> add_markers(GraphBuilder& b, const Spec& spec, const std::vector<int>& members) {
  std::vector<OpId> out;
  for (std::size_t i = 0; i < members.size(); ++i)
    out.push_back(b.add_delay(members[i], spec.streams[i], 0, spec.name, member_deps(spec.deps, static_cast<int>(i)), true));
  return out;
}

void add_schedule_bytes(GraphBuilder& b, const CollectiveSchedule& schedule, const std::vector<int>& members) {
  for (std::size_t i = 0; i < members.size(); ++i)
    for (const CollectiveStep& st : schedule.ranks[i])
      for (const CollectiveTransfer& t : st.sends)
        if (t.peer >= 0) b.add_required_bytes(members[i], members[static_cast<std::size_t>(t.peer)], t.bytes);
}

}  // namespace

std::vector<OpId> GraphBuilder::add_collective(const CollectiveSpec& spec) {
  const std::vector<int> members = checked_members(*this, "collective", spec);
  const int n = static_cast<int>(members.size());
  const CollectivePrimitive prim = to_collective_primitive(spec.primitive);
  const HardwareProfile& hw = hardware();

  std::vector<OpId> out;
  if (n <= 1 || spec.bytes <= 0)  // nothing to move: a zero-time marker keeps stream order
    return add_markers(*this, spec, members);

  const std::string link = collective_link_class(hw, n);
  // What NCCL would run for this call (algorithm, protocol, channels, time), and its steps.
  const auto key = std::make_tuple(static_cast<int>(prim), spec.bytes, n, spec.algorithm ? static_cast<int>(*spec.algorithm) : -1);
  auto found = planned_.find(key);
  if (found == planned_.end()) {
    const CollectivePlan p = plan_collective(hw, prim, spec.bytes, n, link, CollectiveOverrides{spec.algorithm, {}});
    found = planned_.emplace(key, PlannedCollective{p, engine_schedule(hw, p, spec.bytes, n, link)}).first;
  }
  const CollectivePlan& plan = found->second.plan;
  const CollectiveSchedule& schedule = found->second.schedule;
  // Byte accounting: what the algorithm moves between members (design.md "Scheme library").
  add_schedule_bytes(*this, schedule, members);
  // A collective kernel holds one SM per channel: NCCL's channel count for this size (a small
  // collective takes fewer SMs from the GEMM beside it), unless the scheme names a count. Not clamped
  // to the SM count: a request for more SMs than the GPU has is reported by the engine (ResourceError)
  // rather than silently run on fewer.
  const int channels = spec.channels >= 0 ? spec.channels : plan.channels;

  const std::int64_t id = new_collective_id();
  calls_.push_back(CollectiveCall{id, spec.name, spec.primitive, spec.bytes, n, nccl_algorithm_name(plan.algorithm),
                                  nccl_protocol_name(plan.protocol), channels});
  // A fixed duration (a measured tau_c) is a curve-level figure; the steps fidelity always runs the
  // algorithm's transfers.
  const bool steps = fidelity() == Fidelity::steps;
  const Ps curve_ps = spec.fixed_duration_ps >= 0 ? spec.fixed_duration_ps : plan.time_ps;
  // The protocol's bandwidth as a fraction of the ports' line rate: the engine slows each transfer by
  // it (NCCL's step latency covers the wire's). So on an idle fabric whose steps do not share links,
  // the steps take what the curve fidelity says.
  const double port_gbps = collective_port_gbps(hw, link, n);
  const double link_efficiency = step_link_efficiency(schedule.bandwidth_gbps, port_gbps);
  for (int i = 0; i < n; ++i) {
    Op op = collective_member_op(graph_, spec, members, i, channels, id, hw.launch.collective_host_ps(prim));
    if (steps) {
      set_step_phases(op, schedule, i, members, link_efficiency);
    } else {
      op.duration_ps = curve_ps;
      // Nominal size of the curve collective: marks it as a data-moving collective (metrics.cpp),
      // unlike a barrier; its bytes load the links as flows (set_curve_traffic).
      op.bytes = spec.bytes;
      set_curve_traffic(op, schedule, i, members, plan.latency_ps);
    }
    out.push_back(graph_.add(std::move(op)));
  }
  return out;
}

std::vector<OpId> GraphBuilder::add_all_to_allv(const AllToAllvSpec& spec) {
  const std::vector<int> members = checked_members(*this, "all-to-allv", spec);
  const int n = static_cast<int>(members.size());
  if (spec.bytes.size() != members.size())
    throw GraphError(fmt::format("all-to-allv '{}': {} byte rows for {} members", spec.name, spec.bytes.size(), n));
  const HardwareProfile& hw = hardware();
  const std::string link = n > 1 ? collective_link_class(hw, n) : std::string();
  // The even all-to-all's algorithm (NCCL's send/recv, default_algorithm) and no forced protocol, as
  // add_collective(all_to_all) plans it.
  const CollectiveOverrides overrides{};
  AllToAllvCost cost;
  if (n > 1) cost = all_to_allv_cost(hw, spec.bytes, link, overrides);
  std::vector<OpId> out;
  if (n <= 1 || cost.slowest_rank < 0)  // nothing crosses a port: a zero-time marker keeps stream order
    return add_markers(*this, spec, members);
  const CollectivePlan& plan = cost.slowest_plan;
  // nccl-tests' S of the call: the largest send buffer (the even case's S).
  Bytes largest_row = 0;
  for (const auto& row : spec.bytes) {
    Bytes sum = 0;
    for (const Bytes b : row) sum = checked_add(sum, b);
    largest_row = std::max(largest_row, sum);
  }
  // Byte accounting: every pair's block but a rank's own.
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d && spec.bytes[static_cast<std::size_t>(s)][static_cast<std::size_t>(d)] > 0)
        add_required_bytes(members[static_cast<std::size_t>(s)], members[static_cast<std::size_t>(d)],
                           spec.bytes[static_cast<std::size_t>(s)][static_cast<std::size_t>(d)]);
  const int channels = spec.channels >= 0 ? spec.channels : plan.channels;
  const std::int64_t id = new_collective_id();
  calls_.push_back(CollectiveCall{id, spec.name, Primitive::all_to_all, largest_row, n,
                                  nccl_algorithm_name(plan.algorithm), nccl_protocol_name(plan.protocol), channels});
  const bool steps = fidelity() == Fidelity::steps;
  CollectiveSchedule schedule;
  double link_efficiency = 1.0;
  if (steps) {
    schedule = all_to_allv_steps(hw, spec.bytes, link, overrides);
    const double port_gbps = collective_port_gbps(hw, link, n);
    link_efficiency = step_link_efficiency(schedule.bandwidth_gbps, port_gbps);
  }
  const CollectivePrimitive prim = CollectivePrimitive::all_to_all;
  for (int i = 0; i < n; ++i) {
    Op op = collective_member_op(graph_, spec, members, i, channels, id, hw.launch.collective_host_ps(prim));
    if (steps) {
      set_step_phases(op, schedule, i, members, link_efficiency);
    } else {
      // FlashOverlap Sec. 4.2 (online stage, imbalanced GEMM+A2A): the operation lasts as long as its
      // slowest GPU, so every member's kernel ends with it; its own bytes load its links meanwhile.
      op.duration_ps = cost.time_ps;
      op.bytes = largest_row;
      for (int d = 0; d < n; ++d) {
        const Bytes b = spec.bytes[static_cast<std::size_t>(i)][static_cast<std::size_t>(d)];
        if (d != i && b > 0) op.curve_sends.push_back(PeerBytes{members[static_cast<std::size_t>(d)], b});
      }
      std::sort(op.curve_sends.begin(), op.curve_sends.end(),
                [](const PeerBytes& a, const PeerBytes& b) { return a.peer < b.peer; });
      op.curve_latency_ps = std::clamp<Ps>(plan.latency_ps, 0, op.duration_ps);
    }
    out.push_back(graph_.add(std::move(op)));
  }
  return out;
}

CollectiveSchedule GraphBuilder::schedule_of(const CollectivePlan& plan, Bytes bytes, int members,
                                             const std::string& link) const {
  return engine_schedule(hardware(), plan, bytes, members, link);
}

void GraphBuilder::add_required_bytes(int src, int dst, Bytes bytes) {
  if (src < 0 || dst < 0 || src >= ranks() || dst >= ranks())
    throw GraphError(fmt::format("byte accounting: pair ({}, {}) outside {} ranks", src, dst, ranks()));
  required_[static_cast<std::size_t>(src)][static_cast<std::size_t>(dst)] += bytes;
}

void GraphBuilder::add_collective_required_bytes(Primitive primitive, Bytes bytes, const std::vector<int>& ranks_in) {
  std::vector<int> members = ranks_in;
  if (members.empty())
    for (int r = 0; r < ranks(); ++r) members.push_back(r);
  const int n = static_cast<int>(members.size());
  if (n <= 1 || bytes <= 0) return;
  const HardwareProfile& hw = hardware();
  const std::string link = collective_link_class(hw, n);
  const CollectivePrimitive prim = to_collective_primitive(primitive);
  add_schedule_bytes(*this, engine_schedule(hw, plan_collective(hw, prim, bytes, n, link), bytes, n, link), members);
}

OpId GraphBuilder::add_copy(int rank, StreamId stream, int src_gpu, int dst_gpu, Bytes bytes, const std::string& name,
                            const std::vector<OpId>& deps, bool count_required) {
  Op op = new_op(graph_, rank, stream, OpKind::copy, name, deps);
  op.comm = true;
  op.bytes = bytes;
  op.src_gpu = src_gpu;
  op.dst_gpu = dst_gpu;
  const OpId id = graph_.add(std::move(op));
  if (count_required && src_gpu != dst_gpu) add_required_bytes(src_gpu, dst_gpu, bytes);
  return id;
}

OpId GraphBuilder::add_p2p(int rank, StreamId stream, const P2pSpec& spec) {
  if (spec.transport == Transport::copy_engine)
    throw GraphError(fmt::format("p2p '{}': a copy-engine transfer is a copy op (add_copy)", spec.name));
  Op op = new_op(graph_, rank, stream, OpKind::comm_kernel, spec.name, spec.deps);
  op.comm = true;
  op.channels = spec.channels;
  op.collective = spec.collective >= 0 ? spec.collective : new_collective_id();
  op.members = spec.members;
  op.transport = spec.transport;
  Phase ph;
  for (const PeerBytes& pb : spec.sends)
    if (pb.bytes > 0) ph.sends.push_back(pb);
  for (const PeerBytes& pb : spec.recvs)
    if (pb.bytes > 0) ph.recvs.push_back(pb);
  op.phases.push_back(std::move(ph));
  return graph_.add(std::move(op));
}

std::vector<OpId> GraphBuilder::add_barrier(const std::vector<StreamId>& streams,
                                            const std::vector<std::vector<OpId>>& deps, const std::string& name,
                                            const std::vector<int>& ranks_in) {
  std::vector<int> members = ranks_in;
  if (members.empty())
    for (int r = 0; r < ranks(); ++r) members.push_back(r);
  if (streams.size() != members.size() || (!deps.empty() && deps.size() != members.size()))
    throw GraphError(fmt::format("barrier '{}': one stream (and deps list) per member", name));
  const HardwareProfile& hw = hardware();
  // async-tp-illustrated: the barrier is a one-block kernel writing a flag into every peer's symmetric
  // buffer and spinning on its own: a one-sided put's latency over the link class the group spans.
  Ps latency = ps_from_us(hw.transports.one_sided.latency_us);
  if (members.size() > 1) {
    const auto it = hw.fabric.links.find(collective_link_class(hw, static_cast<int>(members.size())));
    if (it != hw.fabric.links.end()) latency += ps_from_us(it->second.latency_us);
  }
  const std::int64_t id = new_collective_id();
  std::vector<OpId> out;
  for (std::size_t i = 0; i < members.size(); ++i) {
    Op op = new_op(graph_, members[i], streams[i], OpKind::comm_kernel, name, deps.empty() ? std::vector<OpId>{} : deps[i]);
    op.comm = true;
    op.channels = 1;
    op.duration_ps = latency;
    op.collective = id;
    op.members = static_cast<int>(members.size());
    out.push_back(graph_.add(std::move(op)));
  }
  return out;
}

Ps GraphBuilder::transfer_ps(int src, int dst, Bytes bytes, Transport transport, int ctas) const {
  if (bytes <= 0) return 0;
  return isolated_transfer_ps(hardware(), ranks(), ctx_.node, src, dst, bytes, transport, ctas);
}

OpId GraphBuilder::add_wait(int rank, StreamId stream, CounterId counter, std::int64_t target,
                            const std::string& name, const std::vector<OpId>& deps) {
  Op op = new_op(graph_, rank, stream, OpKind::wait, name, deps);
  op.counter = counter;
  op.target = target;
  return graph_.add(std::move(op));
}

OpId GraphBuilder::add_signal(int rank, StreamId stream, CounterId counter, std::int64_t amount,
                              const std::string& name, const std::vector<OpId>& deps) {
  Op op = new_op(graph_, rank, stream, OpKind::signal, name, deps);
  op.counter = counter;
  op.amount = amount;
  return graph_.add(std::move(op));
}

OpId GraphBuilder::add_delay(int rank, StreamId stream, Ps delay_ps, const std::string& name,
                             const std::vector<OpId>& deps, bool comm) {
  Op op = new_op(graph_, rank, stream, OpKind::delay, name, deps);
  op.delay_ps = delay_ps;
  op.comm = comm;
  return graph_.add(std::move(op));
}

BuiltScheme GraphBuilder::finish(std::string reason, Ps bound_ps) {
  BuiltScheme out;
  out.graph = std::move(graph_);
  out.required_bytes = std::move(required_);
  out.bound_ps = bound_ps;
  out.reason = std::move(reason);
  out.collectives = std::move(calls_);
  calls_.clear();
  const int n = out.graph.num_ranks();
  graph_ = TaskGraph(n);
  required_.assign(static_cast<std::size_t>(n), std::vector<Bytes>(static_cast<std::size_t>(n), 0));
  next_collective_ = 0;
  return out;
}

UnitCompute gemm_unit(GraphBuilder& b, const GemmShape& g) {
  return [&b, g](int rank, StreamId stream, std::int64_t rows, const std::string& name, const std::vector<OpId>& deps) {
    GemmOptions o;
    o.name = name;
    o.deps = deps;
    return b.add_gemm(rank, stream, GemmShape{rows, g.n, g.k, g.dtype}, o);
  };
}

UnitCompute gemm_unit_split_k(GraphBuilder& b, const GemmShape& g) {
  return [&b, g](int rank, StreamId stream, std::int64_t rows, const std::string& name, const std::vector<OpId>& deps) {
    GemmOptions o;
    o.name = name;
    o.deps = deps;
    return b.add_gemm(rank, stream, GemmShape{g.m, g.n, rows, g.dtype}, o);
  };
}

std::vector<OpId> compose_layers(int layers, const LayerEmitter& attention, const LayerEmitter& mlp) {
  std::vector<OpId> end;
  for (int l = 0; l < layers; ++l) {
    const std::string prefix = fmt::format("L{}.", l);
    end = attention(end, prefix);
    end = mlp(end, prefix);
  }
  return end;
}

Ps decomposition_bound_ps(const HardwareProfile& hw, int T, const std::vector<Bytes>& collectives, bool summed) {
  Bytes recv = 0;
  for (const Bytes S : collectives) recv = summed ? recv + S / T * (T - 1) : std::max(recv, S / T * (T - 1));
  return port_bound_ps(hw, T, recv);
}

Ps port_bound_ps(const HardwareProfile& hw, int ranks, Bytes recv_bytes) {
  const std::string cls = collective_link_class(hw, ranks);
  const auto it = hw.fabric.links.find(cls);
  if (it == hw.fabric.links.end() || !(it->second.bandwidth_gbps > 0) || recv_bytes <= 0) return 0;
  return checked_ps(static_cast<double>(recv_bytes) / bytes_per_ps_from_gbps(it->second.bandwidth_gbps));
}

}  // namespace overlap::sim
