// FlashOverlap (flashoverlap-paper Sec. 3, 4, 6.4; facts.md "FlashOverlap's published
// implementation"): one GEMM kernel whose CTAs, in their epilogue, reorder their tile into the
// group's contiguous buffer and atomically increment the group's counter; on a high-priority comm
// stream a wait kernel per group spins until the count is reached and then issues NCCL's collective
// on that group's slice. NCCL's SMs shrink the GEMM's later waves while they run (the engine's SM
// pool); the reordering costs a little in the GEMM epilogue and in the RMSNorm that reads the output
// back through the mapping table (Sec. 3.3, 6.6, Table 5).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cost_model/closed_forms.hpp"
#include "cost_model/flashoverlap_predictor.hpp"
#include "cost_model/gemm_model.hpp"
#include "cost_model/input_error.hpp"
#include "sim/schemes/flashoverlap.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/schemes/wave_groups.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

namespace {

struct FlashOverlapParams {
  enum class Search { list, equal, auto_search, optimal } search = Search::auto_search;
  std::vector<int> groups;      // Search::list
  int equal_size = 1;           // Search::equal
  int wave_sms = 0;             // SMs per wave when tiles are assigned to groups
  double epilogue_overhead = 0; // fraction added to every GEMM tile (pre-reorder)
  double rmsnorm_overhead = 0;  // fraction added to the RMSNorm (post-reorder)
  bool sm_margin = false;       // GEMM capped at wave_sms SMs (persistent grid), NCCL's SMs kept free
};

constexpr std::int64_t kMaxGroupWaves = 1 << 20;

std::optional<std::string> groups_problem(const nlohmann::json& g) {
  const std::string choices = "must be \"auto\", \"optimal\", a wave count or a";
  if (g.is_string()) {
    const std::string s = g.get<std::string>();
    if (s == "auto" || s == "optimal") return std::nullopt;
    return fmt::format("{} list of wave counts (got '{}')", choices, s);
  }
  if (g.is_number_integer()) {
    const std::int64_t size = g.get<std::int64_t>();
    if (size < 1) return fmt::format("group size must be >= 1 wave (got {})", size);
    return std::nullopt;
  }
  if (g.is_array() && !g.empty()) {
    for (const auto& v : g) {
      if (!v.is_number_integer() || v.get<std::int64_t>() < 1)
        return std::string("every group must be a positive whole number of waves");
      if (v.get<std::int64_t>() > kMaxGroupWaves)
        return fmt::format("a group of {} waves is more than any GEMM has (at most 2^20)", v.get<std::int64_t>());
    }
    return std::nullopt;
  }
  return choices + " non-empty list of wave counts";
}

const SchemeParam kGroups = [] {
  SchemeParam p;
  p.name = "groups";
  p.type = ParamType::wave_groups;
  p.default_value = "auto";
  p.help = "wave groups: a list of wave counts, one wave count n (equal groups, Fig. 14 Egs=n), \"auto\" (the paper's "
           "predictive search) or \"optimal\" (exact optimum of the same predictor)";
  p.check = groups_problem;
  return p.tune({"auto", "optimal", 1, 2})
      .production("FlashOverlap's tuner output cSeg (tune/search.py); `overlap-sim tune --export-flashoverlap` writes it");
}();
// The published implementation computes waves with NCCL assumed to hold 2 SMs (facts.md).
const SchemeParam kWaveSms = [] {
  SchemeParam p = int_param("wave_sms", 0, 1, 4096, "SMs per wave when tiles are assigned to groups (published code: SMs - 2)");
  p.default_value = nullptr;
  p.hardware_default = [](const HardwareProfile& hw) { return nlohmann::json(std::max(1, hw.gpu.sm_count - 2)); };
  p.default_formula = "sm_count - 2";
  p.hardware_max = [](const HardwareProfile& hw) { return static_cast<double>(hw.gpu.sm_count); };
  p.max_formula = "sm_count";
  return p.production("FlashOverlap's wSize = SMs - 2");
}();
// Table 5: the pre-reorder in the epilogue costs 0.07-0.68 % of the GEMM; the post-reorder 7.5-9.6 %
// of the RMSNorm (Sec. 6.6: "< 10 %").
const SchemeParam kEpilogueOverhead = number_param("epilogue_overhead", 0.005, 0, 1,
                                                   "pre-reorder cost in the GEMM epilogue, fraction of a tile (Table 5)");
const SchemeParam kRmsnormOverhead = number_param("rmsnorm_overhead", 0.09, 0, 10,
                                                  "post-reorder cost in the following RMSNorm, fraction (Table 5)");
const SchemeParam kSmMargin =
    bool_param("sm_margin", false,
               "cap the GEMM at wave_sms SMs so NCCL's SMs stay free (default: the GEMM takes every free SM and a "
               "group's collective waits for SMs, as on the GPU)")
        .tune({false, true})
        .production("TransformerEngine set_sm_margin");

FlashOverlapParams read_params(const BuildContext& ctx) {
  FlashOverlapParams p;
  const nlohmann::json g = ctx.param(kGroups);
  if (g.is_string()) {
    p.search = g.get<std::string>() == "optimal" ? FlashOverlapParams::Search::optimal
                                                 : FlashOverlapParams::Search::auto_search;
  } else if (g.is_number_integer()) {
    p.search = FlashOverlapParams::Search::equal;
    // Checked against the GEMM's wave count once the plan is known (choose_groups); this bound only
    // keeps the value an int.
    p.equal_size = static_cast<int>(std::min<std::int64_t>(g.get<std::int64_t>(), 1 << 30));
  } else {
    p.search = FlashOverlapParams::Search::list;
    for (const auto& v : g) p.groups.push_back(v.get<int>());
  }
  p.wave_sms = ctx.integer(kWaveSms);
  p.epilogue_overhead = ctx.number(kEpilogueOverhead);
  p.rmsnorm_overhead = ctx.number(kRmsnormOverhead);
  p.sm_margin = ctx.boolean(kSmMargin);
  return p;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Bytes of the collective of the whole output (nccl-tests S: each rank's buffer / input).
Bytes output_bytes(const GemmCollective& g) { return g.m * g.n * dtype_bytes(g.dtype); }

}  // namespace

WaveGroupProblem flashoverlap_problem(const BuildContext& ctx) {
  const FlashOverlapParams p = read_params(ctx);
  const GemmCollective g = gemm_collective_shape(ctx.workload);
  const overlap::GemmShape shape{g.m, g.n, g.k, g.dtype};
  const GemmPlan plan = plan_gemm(ctx.hardware, shape);
  WaveGroupProblem prob;
  prob.tiles = plan.tiles;
  prob.tiles_per_wave = static_cast<std::int64_t>(p.wave_sms) * plan.ctas_per_sm;
  prob.bytes_per_tile = ceil_div(output_bytes(g), plan.tiles);
  // Sec. 4.1.4 (line 237): "the latency of GEMM computation after overlap is derived by adjusting the
  // original latency according to the updated wave number": the GEMM alone on every SM, rescaled from
  // its waves there to its waves on wave_sms (the published predict_lat does the same, facts.md). No
  // term for the running collective's interference: the paper's predictor has none, and the engine
  // charges it only while a collective runs (Sec. 6.5, line 398: the actual latency is "always
  // slightly higher than the predicted").
  const std::int64_t all_waves = std::max<std::int64_t>(1, plan.waves(ctx.hardware.gpu.sm_count));
  const std::int64_t our_waves = std::max<std::int64_t>(1, plan.waves(p.wave_sms));
  prob.gemm_ps = static_cast<Ps>(static_cast<__int128>(gemm_time_ps(ctx.hardware, shape)) * our_waves / all_waves);
  // The curve the published predictor interpolates: the collective alone at each group's size
  // (GraphBuilder::collective_ps, what the engine's curve collectives take on an idle node).
  const auto hw = std::make_shared<const HardwareProfile>(ctx.hardware);
  const Primitive prim = g.primitive;
  const int T = ctx.workload.tp;
  prob.comm_ps = [hw, prim, T](Bytes bytes) -> Ps {
    if (T <= 1 || bytes <= 0) return 0;
    return plan_collective(*hw, to_collective_primitive(prim), bytes, T, collective_link_class(*hw, T)).time_ps;
  };
  return prob;
}

namespace {

struct GroupChoice {
  std::vector<int> groups;  // waves per group
  std::string how;          // "given", "equal", "predictive search, predicted ... us"
};

// Partition: given, equal, or searched with FlashOverlap's predictor on the bandwidth curve.
GroupChoice choose_groups(const BuildContext& ctx, const FlashOverlapParams& p, const GemmPlan& plan,
                          std::int64_t tiles_per_wave) {
  const int waves = wave_count(plan.tiles, tiles_per_wave);
  switch (p.search) {
    case FlashOverlapParams::Search::list: return {p.groups, "given"};
    case FlashOverlapParams::Search::equal:
      // A group larger than the GEMM is no partition the paper's Egs means (Fig. 14): refused like a
      // list whose sizes do not sum to the waves.
      if (p.equal_size > waves)
        throw InputError("", 0, "params.groups",
                         fmt::format("a group size of {} waves exceeds the GEMM's {} waves ({} tiles, {} per wave)",
                                     p.equal_size, waves, plan.tiles, tiles_per_wave));
      return {equal_wave_groups(waves, p.equal_size), "equal"};
    case FlashOverlapParams::Search::auto_search:
    case FlashOverlapParams::Search::optimal: break;
  }
  const bool predictive = p.search == FlashOverlapParams::Search::auto_search;
  const WaveGroupProblem prob = flashoverlap_problem(ctx);
  const WaveGroupSearchResult r = predictive ? flashoverlap_search(prob) : optimal_wave_groups(prob);
  return {r.groups, fmt::format("{} search, predicted {:.1f} us", predictive ? "predictive" : "optimal",
                                us_from_ps(r.predicted_ps))};
}

// The signalling GEMM on every rank (the pre-reorder's epilogue cost on every tile and one counter
// per group: tile i of dispatch order counts for the group holding it), then per group the wait and
// the group's collective on the comm stream. Returns each rank's last collective op.
std::vector<OpId> add_signalled_collectives(GraphBuilder& b, const RankStreams& st, const FlashOverlapParams& p,
                                            const GemmCollective& g, const GemmPlan& plan,
                                            const std::vector<TileRange>& ranges) {
  const int T = b.ranks();
  const overlap::GemmShape shape{g.m, g.n, g.k, g.dtype};
  std::vector<OpId> last_comm(static_cast<std::size_t>(T), kNoOp);
  std::vector<std::vector<CounterId>> rank_counters;
  for (int r = 0; r < T; ++r) {
    std::vector<CounterId> counters;
    for (std::size_t j = 0; j < ranges.size(); ++j) counters.push_back(b.add_counter(fmt::format("r{}.group{}", r, j)));
    GemmOptions o;
    o.name = "gemm.signalling";
    o.epilogue_overhead = p.epilogue_overhead;
    // With sm_margin the GEMM keeps to the wave width the groups were cut for, so NCCL never waits
    // for SMs (the published predictor's assumption, facts.md: "NCCL assumed to take 2 SMs").
    if (p.sm_margin) o.sm_budget = p.wave_sms;
    for (std::size_t j = 0; j < ranges.size(); ++j)
      for (std::int64_t t = 0; t < ranges[j].count; ++t) o.tile_counters.push_back(counters[j]);
    b.add_gemm(r, st.compute[static_cast<std::size_t>(r)], shape, o);
    rank_counters.push_back(std::move(counters));
  }
  for (std::size_t j = 0; j < ranges.size(); ++j) {
    // Sec. 5: for each group the signalling kernel stalls the comm stream until the count is reached,
    // then the group's collective is issued on the same (high-priority) stream.
    std::vector<OpId> waits;
    for (int r = 0; r < T; ++r)
      waits.push_back(b.add_wait(r, st.comm[static_cast<std::size_t>(r)], rank_counters[static_cast<std::size_t>(r)][j],
                                 ranges[j].count, fmt::format("wait.group{}", j)));
    CollectiveSpec c;
    c.name = fmt::format("{}.group{}", primitive_name(g.primitive), j);
    c.primitive = g.primitive;
    c.bytes = group_bytes(ranges[j], plan.tiles, output_bytes(g));
    c.streams = st.comm;
    for (int r = 0; r < T; ++r) c.deps.push_back({waits[static_cast<std::size_t>(r)]});
    last_comm = b.add_collective(c);
  }
  return last_comm;
}

// Sec. 6.4 bound: perfect overlap of the unmodified GEMM and NCCL's collective (+ a plain RMSNorm).
Ps flashoverlap_bound(GraphBuilder& b, const HardwareProfile& hw, const GemmCollective& g, const GemmPlan& plan,
                      Ps rmsnorm_ps) {
  const overlap::GemmShape shape{g.m, g.n, g.k, g.dtype};
  const Bytes total = output_bytes(g);
  auto comm_of = [&](Bytes bytes) { return b.collective_ps(g.primitive, bytes, b.ranks()); };
  const Ps gemm_ps = gemm_time_ps(hw, shape);
  const std::int64_t all_waves = std::max<std::int64_t>(1, plan.waves(hw.gpu.sm_count));
  // The last wave holds what is left after the full ones: a partial wave sends only its own tiles.
  const std::int64_t slots = static_cast<std::int64_t>(hw.gpu.sm_count) * plan.ctas_per_sm;
  const std::int64_t last_wave_first = (all_waves - 1) * slots;
  const Bytes last_wave_bytes = group_bytes({last_wave_first, plan.tiles - last_wave_first}, plan.tiles, total);
  return flashoverlap_bound_ps(gemm_ps, comm_of(total), gemm_ps / all_waves, comm_of(last_wave_bytes)) + rmsnorm_ps;
}

BuiltScheme build_flashoverlap(const BuildContext& ctx) {
  const FlashOverlapParams p = read_params(ctx);
  const Workload& w = ctx.workload;
  validate_workload(w);
  if (w.kind != "gemm_collective")
    throw InputError("", 0, "workload.kind", fmt::format("flashoverlap does not apply to '{}'", w.kind));
  const GemmCollective g = gemm_collective_shape(w);
  if (g.primitive == Primitive::all_gather)
    throw InputError("", 0, "workload.primitive", "flashoverlap needs the collective after the GEMM (all_reduce, reduce_scatter, all_to_all)");
  const HardwareProfile& hw = ctx.hardware;
  const int T = w.tp;
  GraphBuilder b(ctx);
  const RankStreams st = b.add_compute_and_comm_streams();

  const overlap::GemmShape shape{g.m, g.n, g.k, g.dtype};
  const GemmPlan plan = plan_gemm(hw, shape);
  const std::int64_t tiles_per_wave = static_cast<std::int64_t>(p.wave_sms) * plan.ctas_per_sm;
  const Bytes total = output_bytes(g);
  auto comm_of = [&](Bytes bytes) { return b.collective_ps(g.primitive, bytes, T); };

  const GroupChoice choice = choose_groups(ctx, p, plan, tiles_per_wave);
  std::vector<TileRange> ranges;
  try {
    ranges = wave_group_tiles(choice.groups, plan.tiles, tiles_per_wave);
  } catch (const std::invalid_argument& e) {
    throw InputError("", 0, "params.groups", fmt::format("{} ({} tiles, {} per wave)", e.what(), plan.tiles, tiles_per_wave));
  }
  const std::vector<OpId> last_comm = add_signalled_collectives(b, st, p, g, plan, ranges);

  // Post-reorder: the following RMSNorm reads the output back through the mapping table.
  Ps rmsnorm_ps = 0;
  if (g.rmsnorm_after) {
    Bytes out = total;
    if (g.primitive == Primitive::reduce_scatter) out /= T;
    const Bytes bytes = static_cast<Bytes>(static_cast<double>(2 * out) * (1.0 + p.rmsnorm_overhead));
    for (int r = 0; r < T; ++r)
      b.add_memory(r, st.compute[static_cast<std::size_t>(r)],
                   MemoryKernel{"rmsnorm.reorder", bytes, {last_comm[static_cast<std::size_t>(r)]}, 0});
    if (hw.gpu.hbm_bandwidth_gbps > 0)
      rmsnorm_ps = streaming_kernel_ps(hw, 2 * out) + hw.launch.gap_ps();
  }
  const Ps bound = flashoverlap_bound(b, hw, g, plan, rmsnorm_ps);

  // One line: the tail the partition leaves.
  const Ps last_comm_ps = comm_of(group_bytes(ranges.back(), plan.tiles, total));
  const Ps comp_ps = gemm_time_ps(hw, shape, p.wave_sms);
  const std::string tail = comm_of(total) > comp_ps ? "comm-bound: the collectives trail the GEMM"
                                                     : fmt::format("tail: last group's {} ({:.1f} us) exposed",
                                                                   primitive_name(g.primitive), us_from_ps(last_comm_ps));
  return b.finish(fmt::format("groups {} waves ({}); {}", choice.groups, choice.how, tail), bound);
}

bool flashoverlap_applies(const Workload& w) {
  if (w.tp < 2 || w.kind != "gemm_collective") return false;
  const auto* g = std::get_if<GemmCollective>(&w.shape);
  return g && g->primitive != Primitive::all_gather;
}

}  // namespace

SchemeInfo make_flashoverlap_scheme() {
  return {.name = "flashoverlap",
          .source = "flashoverlap-paper Sec. 3 (signaling, reordering), Sec. 4 (predictive search), Sec. 6.4 (bound)",
          .summary = "GEMM signals per wave group through a counting table; NCCL collective per group on a "
                     "high-priority stream",
          .params = {kGroups, kWaveSms, kEpilogueOverhead, kRmsnormOverhead, kSmMargin},
          .applies = flashoverlap_applies,
          .build = build_flashoverlap};
}

}  // namespace overlap::sim
