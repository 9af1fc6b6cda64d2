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
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cost_model/closed_forms.hpp"
#include "cost_model/flashoverlap_predictor.hpp"
#include "cost_model/gemm_model.hpp"
#include "cost_model/input_error.hpp"
#include "sim/schemes/flashoverlap.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/schemes/training_step.hpp"
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
      .production("FlashOverlap's tuner output cSeg (tune/search.py); `overlap-sim tune --export flashoverlap` writes it");
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

FlashOverlapParams read_flashoverlap_params(const BuildContext& ctx) {
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


// Bytes of the collective of the whole output (nccl-tests S: each rank's buffer / input).
Bytes output_bytes(const GemmCollective& g) { return g.m * g.n * dtype_bytes(g.dtype); }

// The predictor's inputs for one GEMM whose `total` output bytes a `prim` over `tp` ranks reduces.
WaveGroupProblem problem_for(const HardwareProfile& hw, const FlashOverlapParams& p, const overlap::GemmShape& shape,
                             Primitive prim, int tp, Bytes total) {
  const GemmPlan plan = plan_gemm(hw, shape);
  WaveGroupProblem prob;
  prob.tiles = plan.tiles;
  prob.tiles_per_wave = static_cast<std::int64_t>(p.wave_sms) * plan.ctas_per_sm;
  prob.bytes_per_tile = ceil_div(total, plan.tiles);
  // Sec. 4.1.4 (line 237): "the latency of GEMM computation after overlap is derived by adjusting the
  // original latency according to the updated wave number": the GEMM alone on every SM, rescaled from
  // its waves there to its waves on wave_sms (the published predict_lat does the same, facts.md). No
  // term for the running collective's interference: the paper's predictor has none, and the engine
  // charges it only while a collective runs (Sec. 6.5, line 398: the actual latency is "always
  // slightly higher than the predicted").
  const std::int64_t all_waves = std::max<std::int64_t>(1, plan.waves(hw.gpu.sm_count));
  const std::int64_t our_waves = std::max<std::int64_t>(1, plan.waves(p.wave_sms));
  prob.gemm_ps = static_cast<Ps>(static_cast<__int128>(gemm_time_ps(hw, shape)) * our_waves / all_waves);
  // The curve the published predictor interpolates: the collective alone at each group's size
  // (GraphBuilder::collective_ps, what the engine's curve collectives take on an idle node).
  const auto shared_hw = std::make_shared<const HardwareProfile>(hw);
  prob.comm_ps = [shared_hw, prim, tp](Bytes bytes) -> Ps {
    if (tp <= 1 || bytes <= 0) return 0;
    return plan_collective(*shared_hw, to_collective_primitive(prim), bytes, tp, collective_link_class(*shared_hw, tp))
        .time_ps;
  };
  return prob;
}

}  // namespace

WaveGroupProblem flashoverlap_problem(const BuildContext& ctx) {
  const GemmCollective g = gemm_collective_shape(ctx.workload);
  return problem_for(ctx.hardware, read_flashoverlap_params(ctx), overlap::GemmShape{g.m, g.n, g.k, g.dtype}, g.primitive,
                     ctx.workload.tp, output_bytes(g));
}

namespace {

// One GEMM whose output a collective reduces, as FlashOverlap runs it: the GEMM signals per wave
// group and each group's slice is communicated as soon as the group's tiles are done.
struct SignalledGemm {
  overlap::GemmShape shape;
  Primitive primitive = Primitive::reduce_scatter;
  Bytes bytes = 0;          // nccl-tests S of the whole output
  std::string gemm_name;    // the GEMM op
  std::string wait_name;    // + ".group{j}": the signalling (wait) kernels
  std::string comm_name;    // + ".group{j}": the groups' collectives
  std::string counter_name; // + "r{rank}.tiles": the GEMM's tile counter on each rank
  std::string what;         // names the GEMM in an error ("" for the one GEMM of gemm_collective)
};

struct GroupChoice {
  std::vector<int> groups;  // waves per group
  std::string how;          // "given", "equal", "predictive search, predicted ... us"
};

// Partition: given, equal, or searched with FlashOverlap's predictor on the bandwidth curve, for this
// GEMM's own shape (FlashOverlap's tuner keys its cSeg by M, N, K, primitive and ranks: tune/search.py
// names each configuration m{M}n{N}k{K}_..., so every GEMM gets its own partition).
GroupChoice choose_groups(const HardwareProfile& hw, const FlashOverlapParams& p, const SignalledGemm& s, int tp,
                          const GemmPlan& plan, std::int64_t tiles_per_wave) {
  const int waves = wave_count(plan.tiles, tiles_per_wave);
  const std::string of = s.what.empty() ? std::string("the GEMM's") : s.what + "'s";
  switch (p.search) {
    case FlashOverlapParams::Search::list: return {p.groups, "given"};
    case FlashOverlapParams::Search::equal:
      // A group larger than the GEMM is no partition the paper's Egs means (Fig. 14): refused like a
      // list whose sizes do not sum to the waves.
      if (p.equal_size > waves)
        throw InputError("", 0, "params.groups",
                         fmt::format("a group size of {} waves exceeds {} {} waves ({} tiles, {} per wave)",
                                     p.equal_size, of, waves, plan.tiles, tiles_per_wave));
      return {equal_wave_groups(waves, p.equal_size), "equal"};
    case FlashOverlapParams::Search::auto_search:
    case FlashOverlapParams::Search::optimal: break;
  }
  const bool predictive = p.search == FlashOverlapParams::Search::auto_search;
  const WaveGroupProblem prob = problem_for(hw, p, s.shape, s.primitive, tp, s.bytes);
  const WaveGroupSearchResult r = predictive ? flashoverlap_search(prob) : optimal_wave_groups(prob);
  return {r.groups, fmt::format("{} search, predicted {:.1f} us", predictive ? "predictive" : "optimal",
                                us_from_ps(r.predicted_ps))};
}

std::vector<TileRange> group_tiles(const GroupChoice& choice, const SignalledGemm& s, const GemmPlan& plan,
                                   std::int64_t tiles_per_wave) {
  try {
    return wave_group_tiles(choice.groups, plan.tiles, tiles_per_wave);
  } catch (const std::invalid_argument& e) {
    const std::string of = s.what.empty() ? std::string() : " for " + s.what;
    throw InputError("", 0, "params.groups",
                     fmt::format("{}{} ({} tiles, {} per wave)", e.what(), of, plan.tiles, tiles_per_wave));
  }
}

// The signalling GEMM on every rank (the pre-reorder's epilogue cost on every tile; every tile done
// counts), after `start` (per rank, may be empty), then per group the wait and the group's collective on
// the comm stream. Returns each rank's last collective op.
// The paper's counting table has one counter per group (Sec. 3.2.4); here one counter per GEMM counts
// every tile and group j's wait targets the tiles of groups 0..j. The two are the same signal: a GEMM's
// tiles all take the same time and end in the order they were dispatched (sim/gpu_side.cpp retires a
// kernel's CTAs in start order), so the first tiles done are the first groups' tiles. One counter keeps
// the graph from holding a counter id per tile of every signalled GEMM of a step.
std::vector<OpId> add_signalled_collectives(GraphBuilder& b, const RankStreams& st, const FlashOverlapParams& p,
                                            const SignalledGemm& s, const GemmPlan& plan,
                                            const std::vector<TileRange>& ranges, const std::vector<OpId>& start) {
  const int T = b.ranks();
  std::vector<OpId> last_comm(static_cast<std::size_t>(T), kNoOp);
  std::vector<CounterId> counters;
  for (int r = 0; r < T; ++r) {
    counters.push_back(b.add_counter(fmt::format("{}r{}.tiles", s.counter_name, r)));
    GemmOptions o;
    o.name = s.gemm_name;
    o.epilogue_overhead = p.epilogue_overhead;
    if (!start.empty() && start[static_cast<std::size_t>(r)] != kNoOp) o.deps = {start[static_cast<std::size_t>(r)]};
    // With sm_margin the GEMM keeps to the wave width the groups were cut for, so NCCL never waits
    // for SMs (the published predictor's assumption, facts.md: "NCCL assumed to take 2 SMs").
    if (p.sm_margin) o.sm_budget = p.wave_sms;
    o.tile_counters = {counters.back()};
    b.add_gemm(r, st.compute[static_cast<std::size_t>(r)], s.shape, o);
  }
  std::int64_t done = 0;  // tiles of the groups so far
  for (std::size_t j = 0; j < ranges.size(); ++j) {
    done += ranges[j].count;
    // Sec. 5: for each group the signalling kernel stalls the comm stream until the count is reached,
    // then the group's collective is issued on the same (high-priority) stream.
    std::vector<OpId> waits;
    for (int r = 0; r < T; ++r)
      waits.push_back(b.add_wait(r, st.comm[static_cast<std::size_t>(r)], counters[static_cast<std::size_t>(r)], done,
                                 fmt::format("{}.group{}", s.wait_name, j)));
    CollectiveSpec c;
    c.name = fmt::format("{}.group{}", s.comm_name, j);
    c.primitive = s.primitive;
    c.bytes = group_bytes(ranges[j], plan.tiles, s.bytes);
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

SignalledGemm gemm_collective_signalled(const GemmCollective& g) {
  return {overlap::GemmShape{g.m, g.n, g.k, g.dtype}, g.primitive, output_bytes(g), "gemm.signalling", "wait",
          primitive_name(g.primitive), "", ""};
}

// The forward of a gemm_collective workload as FlashOverlap runs it, after `start`: the signalled
// GEMM, its groups' collectives and the RMSNorm that reads the output back through the mapping table
// (post-reorder). Returns each rank's last op and, through `out`, what the reason line and the bound
// need. The forward-only build and a step's forward share it, so both emit the same graph.
struct GemmCollectiveForward {
  std::vector<OpId> last;
  GroupChoice choice;
  std::vector<TileRange> ranges;
  GemmPlan plan;
  Ps rmsnorm_ps = 0;
};

GemmCollectiveForward emit_gemm_collective(GraphBuilder& b, const RankStreams& st, const FlashOverlapParams& p,
                                           const GemmCollective& g, const std::vector<OpId>& start,
                                           const std::string& prefix) {
  const HardwareProfile& hw = b.hardware();
  const int T = b.ranks();
  GemmCollectiveForward f;
  SignalledGemm s = gemm_collective_signalled(g);
  s.gemm_name = prefix + s.gemm_name;
  s.wait_name = prefix + s.wait_name;
  s.comm_name = prefix + s.comm_name;
  s.counter_name = prefix;
  f.plan = plan_gemm(hw, s.shape);
  const std::int64_t tiles_per_wave = static_cast<std::int64_t>(p.wave_sms) * f.plan.ctas_per_sm;
  f.choice = choose_groups(hw, p, s, T, f.plan, tiles_per_wave);
  f.ranges = group_tiles(f.choice, s, f.plan, tiles_per_wave);
  f.last = add_signalled_collectives(b, st, p, s, f.plan, f.ranges, start);

  // Post-reorder: the following RMSNorm reads the output back through the mapping table.
  if (g.rmsnorm_after) {
    Bytes out = output_bytes(g);
    if (g.primitive == Primitive::reduce_scatter) out /= T;
    const Bytes bytes = static_cast<Bytes>(static_cast<double>(2 * out) * (1.0 + p.rmsnorm_overhead));
    for (int r = 0; r < T; ++r)
      f.last[static_cast<std::size_t>(r)] =
          b.add_memory(r, st.compute[static_cast<std::size_t>(r)],
                       MemoryKernel{prefix + "rmsnorm.reorder", bytes, {f.last[static_cast<std::size_t>(r)]}, 0});
    if (hw.gpu.hbm_bandwidth_gbps > 0) f.rmsnorm_ps = streaming_kernel_ps(hw, 2 * out) + hw.launch.gap_ps();
  }
  return f;
}

// A training step (or a layer workload's forward) as FlashOverlap runs it (Sec. 2.3.2: GEMM+RS comes
// from TP training with sequence parallelism). FlashOverlap overlaps a collective AFTER a GEMM, so it
// takes every GEMM -> reduce-scatter / all-reduce / all-to-all of the pass:
//   forward: the row-parallel GEMMs and their reduce-scatter (attention out_proj, MLP fc2; a
//            gemm_collective's GEMM and its collective);
//   backward: a column-parallel linear's dgrad and its reduce-scatter (all-reduce without sequence
//            parallelism) (gemm_scatter).
// An all-gather before a GEMM is not its pattern: the forward's input all-gather, dY's all-gather before
// a row-parallel dgrad and the input's re-gather before wgrad run as no_overlap runs them (the base
// class). Each signalled GEMM gets the wave-group partition of its own shape (choose_groups): fc1's
// dgrad (tokens x d_model x 2 ffn/tp) has the output tiles, waves and reduce-scatter bytes of fc2's
// forward GEMM (tokens x d_model x ffn/tp) but twice its work per wave, and qkv's dgrad (K = (heads + 2
// kv_heads) x head_dim / tp) against out_proj's (K = d_model / tp) likewise, so a partition tuned for
// the forward GEMM would balance the wrong group times (Alg. 1 weighs each group's compute against its
// communication); FlashOverlap's tuner keys each configuration by M, N, K, primitive and ranks.
class FlashOverlapPass final : public PassEmitter {
 public:
  FlashOverlapPass(GraphBuilder& b, RankStreams streams, FlashOverlapParams p)
      : PassEmitter(b, std::move(streams)), p_(std::move(p)), tp_(std::max(1, b.workload().tp)) {}

  PerRank forward(Block block, const PerRank& start, const std::string& prefix) override {
    const Workload& w = b_.workload();
    if (const auto* t = std::get_if<Transformer>(&w.shape)) {
      if (block == Block::attention) return attention(transformer_attention(*t), start, prefix);
      return mlp(transformer_mlp(*t), start, prefix);
    }
    if (const auto* g = std::get_if<GemmCollective>(&w.shape)) return gemm_collective(*g, start, prefix);
    if (const auto* m = std::get_if<MlpTpSp>(&w.shape)) return mlp(*m, start, prefix);
    if (const auto* a = std::get_if<AttentionTpSp>(&w.shape)) return attention(*a, start, prefix);
    throw InputError("", 0, "workload.kind", fmt::format("flashoverlap does not apply to '{}'", workload_kind_name(w.kind)));
  }

  PerRank gemm_scatter(const GemmScatter& g, const PerRank& start) override {
    return signalled(SignalledGemm{g.gemm, g.primitive, g.bytes, g.name, g.name + ".wait",
                                   g.name + "." + primitive_name(g.primitive), g.name + ".", g.name},
                     start);
  }

  // One line per distinct signalled GEMM, in first-emitted order.
  std::string reason() const {
    std::string out;
    for (const Chosen& c : chosen_)
      out += fmt::format("{}{} {}x{}x{} groups {} ({})", out.empty() ? "" : "; ", c.name, c.shape.m, c.shape.n,
                         c.shape.k, c.choice.groups, c.choice.how);
    return out.empty() ? "no GEMM followed by a collective" : "wave groups per signalled GEMM: " + out;
  }

 private:
  // A signalled GEMM's shape, element type, collective and bytes: what its partition depends on.
  using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, int, int, Bytes>;
  static Key key_of(const SignalledGemm& s) {
    return {s.shape.m, s.shape.n, s.shape.k, static_cast<int>(s.shape.dtype), static_cast<int>(s.primitive), s.bytes};
  }
  struct Chosen {
    std::string name;  // the first op it was chosen for, layer prefix and "bwd." left out
    Key key;
    overlap::GemmShape shape;
    GroupChoice choice;
  };

  PerRank gemm_collective(const GemmCollective& g, const PerRank& start, const std::string& prefix) {
    if (g.primitive == Primitive::all_gather) {
      // An all-gather before the GEMM is not FlashOverlap's pattern: no_overlap's order (and its
      // RMSNorm on the whole output).
      const PerRank gathered = collective(Primitive::all_gather, activation_bytes(g.m, g.k, g.dtype), start, prefix + "all_gather");
      const PerRank mm = gemm(overlap::GemmShape{g.m, g.n, g.k, g.dtype}, gathered, prefix + "gemm");
      return g.rmsnorm_after ? memory(2 * output_bytes(g), mm, prefix + "rmsnorm") : mm;
    }
    const GemmCollectiveForward f = emit_gemm_collective(b_, streams_, p_, g, start, prefix);
    remember("gemm", gemm_collective_signalled(g), f.choice);
    return join({f.last}, prefix + "forward_end");
  }

  PerRank mlp(const MlpTpSp& m, const PerRank& start, const std::string& prefix) {
    const MlpShapes s = mlp_shapes(m, tp_);
    // The input's all-gather before fc1: not FlashOverlap's pattern (no_overlap's order).
    const PerRank gathered = m.gather_input ? collective(Primitive::all_gather, s.all_gather_bytes, start, prefix + "mlp.all_gather") : start;
    const PerRank fc1 = gemm(s.col, gathered, prefix + "mlp.fc1");
    const PerRank act = memory(s.activation_bytes, fc1, prefix + "mlp.act");
    const std::string base = prefix + "mlp.fc2";
    return signalled(SignalledGemm{s.row, Primitive::reduce_scatter, s.reduce_scatter_bytes, base, base + ".wait",
                                   prefix + "mlp.reduce_scatter", base + ".", base},
                     act);
  }

  PerRank attention(const AttentionTpSp& a, const PerRank& start, const std::string& prefix) {
    const AttentionShapes s = attention_shapes(a, tp_);
    const PerRank gathered = a.gather_input ? collective(Primitive::all_gather, s.all_gather_bytes, start, prefix + "attn.all_gather") : start;
    const PerRank qkv = gemm(s.qkv, gathered, prefix + "attn.qkv");
    const PerRank core = core_attention(s, a.dtype, qkv, prefix + "attn.core");
    const std::string base = prefix + "attn.out_proj";
    return signalled(SignalledGemm{s.out, Primitive::reduce_scatter, s.reduce_scatter_bytes, base, base + ".wait",
                                   prefix + "attn.reduce_scatter", base + ".", base},
                     core);
  }

  // The signalled GEMM and its groups' collectives after `start`; returns per rank a join of the GEMM's
  // end and the last group's collective (the GEMM's last tiles may end after the last group's signal
  // only when they belong to it, but the join keeps the next step behind both in any case).
  PerRank signalled(const SignalledGemm& s, const PerRank& start) {
    const Key key = key_of(s);
    auto it = plans_.find(key);
    if (it == plans_.end()) {
      Planned pl;
      pl.plan = plan_gemm(b_.hardware(), s.shape);
      pl.tiles_per_wave = static_cast<std::int64_t>(p_.wave_sms) * pl.plan.ctas_per_sm;
      const GroupChoice choice = choose_groups(b_.hardware(), p_, s, tp_, pl.plan, pl.tiles_per_wave);
      pl.ranges = group_tiles(choice, s, pl.plan, pl.tiles_per_wave);
      remember(s.what, s, choice);
      it = plans_.emplace(key, std::move(pl)).first;
    }
    const Planned& pl = it->second;
    const std::vector<OpId> last = add_signalled_collectives(b_, streams_, p_, s, pl.plan, pl.ranges, start);
    // The GEMM is the last op on each rank's compute stream; the next step follows both.
    std::vector<OpId> gemm_end;
    for (int r = 0; r < ranks(); ++r) gemm_end.push_back(b_.graph().last_on_stream(compute_stream(r)));
    return join({gemm_end, last}, s.gemm_name + ".end");
  }

  // Each distinct GEMM once, named as a layer names it: the first use's "bwd.", "recompute." and
  // "L<n>." prefixes left out.
  void remember(const std::string& what, const SignalledGemm& s, const GroupChoice& choice) {
    for (const Chosen& c : chosen_)
      if (c.key == key_of(s)) return;
    std::string name = what;
    for (const char* p : {"bwd.", "recompute."})
      if (name.rfind(p, 0) == 0) name = name.substr(std::string(p).size());
    const auto dot = name.find('.');
    if (name.size() > 1 && name[0] == 'L' && dot != std::string::npos &&
        name.find_first_not_of("0123456789", 1) == dot)
      name = name.substr(dot + 1);
    chosen_.push_back(Chosen{name, key_of(s), s.shape, choice});
  }

  struct Planned {
    GemmPlan plan;
    std::int64_t tiles_per_wave = 0;
    std::vector<TileRange> ranges;
  };
  FlashOverlapParams p_;
  int tp_ = 1;
  std::map<Key, Planned> plans_;
  std::vector<Chosen> chosen_;
};

BuiltScheme build_flashoverlap_pass(const BuildContext& ctx, const FlashOverlapParams& p) {
  GraphBuilder b(ctx);
  FlashOverlapPass pass(b, b.add_compute_and_comm_streams(), p);
  TrainingStepOptions o;
  o.column = column_backward(ctx);
  BuiltScheme built = build_training_step(ctx, pass, o);
  // The pass learns its partitions as it emits the GEMMs: its line goes in front once the step is built.
  built.reason = pass.reason() + (built.reason.empty() ? "" : "; " + built.reason);
  return built;
}

BuiltScheme build_flashoverlap(const BuildContext& ctx) {
  const FlashOverlapParams p = read_flashoverlap_params(ctx);
  const Workload& w = ctx.workload;
  validate_workload(w);
  if (is_training_step(w) || w.kind != WorkloadKind::gemm_collective) {
    if (w.kind != WorkloadKind::gemm_collective && !is_tpsp_block(w.kind))
      throw InputError("", 0, "workload.kind", fmt::format("flashoverlap does not apply to '{}'", workload_kind_name(w.kind)));
    return build_flashoverlap_pass(ctx, p);
  }
  const GemmCollective g = gemm_collective_shape(w);
  if (g.primitive == Primitive::all_gather)
    throw InputError("", 0, "workload.primitive", "flashoverlap needs the collective after the GEMM (all_reduce, reduce_scatter, all_to_all)");
  const HardwareProfile& hw = ctx.hardware;
  const int T = w.tp;
  GraphBuilder b(ctx);
  const RankStreams st = b.add_compute_and_comm_streams();

  const GemmCollectiveForward f = emit_gemm_collective(b, st, p, g, {}, "");
  const overlap::GemmShape shape{g.m, g.n, g.k, g.dtype};
  const Bytes total = output_bytes(g);
  auto comm_of = [&](Bytes bytes) { return b.collective_ps(g.primitive, bytes, T); };
  const Ps bound = flashoverlap_bound(b, hw, g, f.plan, f.rmsnorm_ps);

  // One line: the tail the partition leaves.
  const Ps last_comm_ps = comm_of(group_bytes(f.ranges.back(), f.plan.tiles, total));
  const Ps comp_ps = gemm_time_ps(hw, shape, p.wave_sms);
  const std::string tail = comm_of(total) > comp_ps ? "comm-bound: the collectives trail the GEMM"
                                                     : fmt::format("tail: last group's {} ({:.1f} us) exposed",
                                                                   primitive_name(g.primitive), us_from_ps(last_comm_ps));
  return b.finish(fmt::format("groups {} waves ({}); {}", f.choice.groups, f.choice.how, tail), bound);
}

// Whether a pass has a GEMM followed by a collective FlashOverlap can signal.
bool has_gemm_then_collective(const Workload& w) {
  if (is_tpsp_block(w.kind)) return true;
  const auto* g = std::get_if<GemmCollective>(&w.shape);
  if (!g) return false;
  // The forward's GEMM -> all-reduce / reduce-scatter / all-to-all; a step's backward of a forward
  // all-gather (column-parallel) has dgrad -> reduce-scatter.
  return g->primitive != Primitive::all_gather || has_backward(w);
}

bool flashoverlap_applies(const Workload& w) {
  if (w.tp < 2) return false;
  // Layer workloads only in a training step: their forward-only runs (the default MLP and transformer
  // scenarios, whose figures the README quotes) keep the schemes they had.
  if (!is_training_step(w) && w.kind != WorkloadKind::gemm_collective) return false;
  return has_gemm_then_collective(w);
}

}  // namespace

SchemeInfo make_flashoverlap_scheme() {
  return {.name = "flashoverlap",
          .source = "flashoverlap-paper Sec. 3 (signaling, reordering), Sec. 4 (predictive search), Sec. 6.4 (bound)",
          .summary = "GEMM signals per wave group through a counting table; NCCL collective per group on a "
                     "high-priority stream",
          .params = {kGroups, kWaveSms, kEpilogueOverhead, kRmsnormOverhead, kSmMargin, column_backward_param()},
          .backward = "dgrad -> reduce-scatter (all-reduce without SP) signalled per wave group, each GEMM shape with "
                      "its own partition (Sec. 2.3.2); the all-gathers before a GEMM (dY before dgrad, the input's "
                      "re-gather before wgrad) are not its pattern and run as no_overlap's",
          .applies = flashoverlap_applies,
          .build = build_flashoverlap};
}

}  // namespace overlap::sim
