// TransformerEngine userbuffers (sim/schemes/te_userbuffers.cpp) on the ideal profile: the methods run
// through async TP's and data slicing's builders with TE's knobs, so where the knobs coincide the
// graphs coincide and the latencies are equal to the picosecond:
//   - pipeline with num_splits = 1 and num_sm = NCCL's channel count is no_overlap (one slice: the
//     GEMM, then its collective);
//   - ring_exchange with use_ce (copy engine) is async TP's copy-engine Looped CollectiveEinsum on two
//     streams; with use_ce false and num_sm = k it is async TP's SM copies of copy_sms = k;
//   - bulk on a forward has nothing independent to overlap: no_overlap again.
// Whatever the method, the bytes every rank must send are no_overlap's (the same collectives, cut).
// set_sm_margin: the overlapped GEMM is a grid of exactly sm_count - num_sm CTAs per slot (TE's
// CommOverlapCore _math_sms), so a GEMM of exactly one full wave (132 tiles) takes two tile times.
#include <map>
#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "ideal_profile.hpp"
#include "tests/support/scheme_fixtures.hpp"

#include "cost_model/gemm_model.hpp"
#include "cost_model/input_error.hpp"
#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "sim/node_builder.hpp"
#include "sim/scenario.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/tune_schemes.hpp"

using namespace overlap;
using namespace overlap::sim;
using namespace overlap::sim::test;

namespace {

Workload mlp_workload(int tp) { return mlp_tpsp_workload(tp, 2048, 1024, 2048); }

BuiltScheme build(const std::string& scheme, const Workload& w, const HardwareProfile& hw,
                  const nlohmann::json& params) {
  return build_scheme(scheme, w, hw, params);
}
Ps latency(const std::string& scheme, const Workload& w, const HardwareProfile& hw, const nlohmann::json& params) {
  return scheme_latency(scheme, w, hw, params);
}
Bytes total(const std::vector<std::vector<Bytes>>& m) { return total_bytes(m); }

std::vector<Workload> workloads() {
  return {gemm_workload(4, Primitive::reduce_scatter, 2048, 1024, 1024),
          gemm_workload(4, Primitive::all_gather, 2048, 1024, 1024), mlp_workload(4)};
}

}  // namespace

TEST_CASE("te_userbuffers pipeline with num_splits = 1 is no_overlap", "[te][closed_form]") {
  const HardwareProfile hw = ideal_profile(4, 1000, 8);
  for (const Workload& w : workloads()) {
    INFO(workload_kind_name(w.kind));
    const Ps none = latency("no_overlap", w, hw, nlohmann::json::object());
    // num_sm = the profile's NCCL channels: the collective holds what NCCL's would.
    CHECK(latency("te_userbuffers", w, hw, {{"method", "pipeline"}, {"num_splits", 1}, {"num_sm", 8}}) == none);
    CHECK(latency("te_userbuffers", w, hw, {{"method", "bulk"}, {"num_sm", 8}}) == none);
  }
}

TEST_CASE("te_userbuffers ring_exchange is async TP's Looped CollectiveEinsum with TE's knobs", "[te][closed_form]") {
  const HardwareProfile hw = ideal_profile(4, 1000, 8);
  for (const Workload& w : workloads()) {
    INFO(workload_kind_name(w.kind));
    CHECK(latency("te_userbuffers", w, hw, {{"method", "ring_exchange"}, {"use_ce", true}}) ==
          latency("async_tp", w, hw, {{"transport", "copy_engine"}, {"streams", 2}}));
    CHECK(latency("te_userbuffers", w, hw, {{"method", "ring_exchange"}, {"use_ce", false}, {"num_sm", 12}}) ==
          latency("async_tp", w, hw, {{"transport", "sm"}, {"streams", 2}, {"copy_sms", 12}}));
  }
}

TEST_CASE("te_userbuffers moves no_overlap's bytes whatever the method", "[te][bytes]") {
  const HardwareProfile hw = ideal_profile(4, 1000, 8);
  const SchemeInfo* te = find_scheme("te_userbuffers");
  REQUIRE(te);
  for (const Workload& w : workloads()) {
    const Bytes want = total(build("no_overlap", w, hw, nlohmann::json::object()).required_bytes);
    REQUIRE(want > 0);
    for (const char* method : {"ring_exchange", "pipeline", "bulk"})
      for (bool ce : {true, false}) {
        INFO(workload_kind_name(w.kind) << " " << method << " use_ce=" << ce);
        const nlohmann::json p = {{"method", method}, {"use_ce", ce}, {"num_splits", 3}};
        CHECK(total(build("te_userbuffers", w, hw, p).required_bytes) == want);
        BuildContext ctx{w, hw, p, Fidelity::curve};
        CHECK_NOTHROW(evaluate(*te, ctx));  // the engine's byte accounting matches the graph's
      }
  }
}

TEST_CASE("te_userbuffers set_sm_margin takes exactly num_sm SMs from the GEMM", "[te][closed_form]") {
  const HardwareProfile hw = ideal_profile(2, 1000, 8);
  // 132 tiles of 128 x 128 over K = 1024: one full wave of 1 us on 132 SMs.
  const Workload w = gemm_workload(2, Primitive::reduce_scatter, 132 * 128, 128, 1024);
  const GemmPlan plan = plan_gemm(hw, overlap::GemmShape{132 * 128, 128, 1024, DType::bf16});
  REQUIRE(plan.tiles == 132);
  REQUIRE(plan.cta_ps == kPsPerUs);
  for (int num_sm : {1, 16, 66}) {
    INFO("num_sm " << num_sm);
    const nlohmann::json p = {{"method", "pipeline"}, {"num_splits", 1}, {"num_sm", num_sm}, {"set_sm_margin", true}};
    const BuiltScheme b = build("te_userbuffers", w, hw, p);
    int gemms = 0;
    for (const Op& op : b.graph.ops()) {
      if (op.name != "gemm") continue;
      ++gemms;
      CHECK(op.max_ctas == (hw.gpu.sm_count - num_sm) * plan.ctas_per_sm);
    }
    CHECK(gemms == 2);
    // 132 tiles on 132 - num_sm CTAs: two rounds of 1 us (num_sm < 66 leaves at most 131 per round).
    const Timeline t = run(b.graph, make_node(hw, 2));
    for (OpId i = 0; i < static_cast<OpId>(b.graph.ops().size()); ++i)
      if (b.graph.op(i).name == "gemm")
        CHECK(t.ops[static_cast<std::size_t>(i)].end_ps - t.ops[static_cast<std::size_t>(i)].start_ps == 2 * kPsPerUs);
  }
  // Without the margin the GEMM is an ordinary tiled kernel on every SM: one wave.
  const BuiltScheme plain = build("te_userbuffers", w, hw, {{"method", "pipeline"}, {"num_splits", 1}});
  for (const Op& op : plain.graph.ops())
    if (op.name == "gemm") CHECK(op.max_ctas == 0);
}

TEST_CASE("te_userbuffers applies to TP+SP linears, runs training steps and refuses what it does not model",
          "[te][params]") {
  const SchemeInfo* s = find_scheme("te_userbuffers");
  REQUIRE(s);
  CHECK_FALSE(s->backward.empty());
  CHECK(s->applies(mlp_workload(4)));
  CHECK_FALSE(s->applies(gemm_workload(4, Primitive::all_reduce, 4096, 1024, 1024)));
  CHECK_FALSE(s->applies(gemm_workload(1, Primitive::all_gather, 4096, 1024, 1024)));
  const HardwareProfile hw = ideal_profile(4, 1000, 8);
  const Workload w = mlp_workload(4);
  auto key_of = [&](const nlohmann::json& params) { return refused_key(*s, w, hw, params); };
  CHECK(key_of({{"atomic_gemm", true}}) == "params.atomic_gemm");  // bf16: TE allows it for FP8 only
  CHECK(key_of({{"method", "split"}}) == "params.method");
  CHECK(key_of({{"num_sm", 0}}) == "params.num_sm");
  CHECK(key_of({{"num_sm", 132}}) == "params.num_sm");
  CHECK(key_of({{"cga_size", 2}, {"num_splits", 8}, {"method", "pipeline"}}) == "none");

  // A training step of every method: byte accounting holds (checked inside evaluate).
  Workload step = w;
  step.training.pass = Pass::step;
  REQUIRE(s->applies(step));
  for (const char* method : {"ring_exchange", "pipeline", "bulk"}) {
    INFO(method);
    const nlohmann::json p = {{"method", method}};
    BuildContext ctx{step, hw, p, Fidelity::curve};
    const SchemeResult r = evaluate(*s, ctx);
    CHECK(r.latency_ps > 0);
    CHECK(r.compute_only_ps <= r.latency_ps);
  }
}

namespace {

// The latest end of the ops whose name starts with `prefix` (every rank): when that part of the
// layer is done.
ScenarioOptions scenario_options() {
  ScenarioOptions o;
  o.hardware_dir = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";
  return o;
}

Ps end_of(const BuiltScheme& b, const Timeline& t, const std::string& prefix) {
  Ps end = -1;
  for (OpId i = 0; i < static_cast<OpId>(b.graph.ops().size()); ++i)
    if (b.graph.op(i).name.rfind(prefix, 0) == 0) end = std::max(end, t.ops[static_cast<std::size_t>(i)].end_ps);
  return end;
}

}  // namespace

TEST_CASE("te_userbuffers pipeline: the last chunk's reduce-scatter on UB_MAX_SM CTAs, scalar and per name alike",
          "[te][per_name]") {
  // split_overlap_rs sets _ub_comm->sms = UB_MAX_SM (32) before the last chunk's reduce-scatter; the
  // other chunks' run on num_sm CTAs.
  const HardwareProfile hw = ideal_profile(4, 1000, 8);
  const Workload w = mlp_workload(4);
  auto rs_channels = [](const BuiltScheme& b) {
    std::map<std::string, std::set<int>> out;  // reduce-scatter slice -> the CTAs its members hold
    for (const Op& op : b.graph.ops())
      if (op.kind == OpKind::comm_kernel && op.name.find("reduce_scatter[") != std::string::npos)
        out[op.name].insert(op.channels);
    return out;
  };
  const std::map<std::string, std::set<int>> expected = {{"mlp.reduce_scatter[0]", {2}},
                                                         {"mlp.reduce_scatter[1]", {2}},
                                                         {"mlp.reduce_scatter[2]", {2}},
                                                         {"mlp.reduce_scatter[3]", {32}}};
  CHECK(rs_channels(build("te_userbuffers", w, hw, {{"method", "pipeline"}, {"num_splits", 4}, {"num_sm", 2}})) ==
        expected);
  std::map<std::string, std::set<int>> per_name;
  for (const auto& [name, channels] : rs_channels(build(
           "te_userbuffers", w, hw, {{"fc2_fprop.method", "pipeline"}, {"fc2_fprop.num_splits", 4}, {"fc2_fprop.num_sm", 2}})))
    per_name["mlp." + name.substr(name.find("reduce_scatter"))] = channels;
  CHECK(per_name == expected);
}

TEST_CASE("te_userbuffers per GEMM name: a name's setting changes only its linear", "[te][per_name]") {
  const HardwareProfile hw = ideal_profile(4, 1000, 8);
  const Workload w = mlp_workload(4);
  // fc1 runs first and depends on nothing of fc2: its ops end at the same time whatever fc2_fprop says.
  const nlohmann::json two = {{"fc2_fprop.method", "pipeline"}, {"fc2_fprop.num_splits", 2}};
  const nlohmann::json eight = {{"fc2_fprop.method", "pipeline"}, {"fc2_fprop.num_splits", 8}};
  const BuiltScheme a = build("te_userbuffers", w, hw, two), b = build("te_userbuffers", w, hw, eight);
  const Timeline ta = run(a.graph, make_node(hw, 4)), tb = run(b.graph, make_node(hw, 4));
  REQUIRE(end_of(a, ta, "fc1") > 0);
  CHECK(end_of(a, ta, "fc1") == end_of(b, tb, "fc1"));
  CHECK(ta.makespan_ps != tb.makespan_ps);  // fc2's split count is simulated
  int slices_a = 0, slices_b = 0;
  for (const Op& op : a.graph.ops()) slices_a += op.name.rfind("fc2.reduce_scatter[", 0) == 0;
  for (const Op& op : b.graph.ops()) slices_b += op.name.rfind("fc2.reduce_scatter[", 0) == 0;
  CHECK(slices_a == 2 * 4);  // one member op per rank per split
  CHECK(slices_b == 8 * 4);
  // And fc1_fprop's own setting is what moves fc1's end (bulk: the all-gather, then the whole GEMM,
  // where ring_exchange pulls shards beside sub-GEMMs).
  nlohmann::json fc1_bulk = two;
  fc1_bulk["fc1_fprop.method"] = "bulk";
  const BuiltScheme c = build("te_userbuffers", w, hw, fc1_bulk);
  const Timeline tc = run(c.graph, make_node(hw, 4));
  CHECK(end_of(c, tc, "fc1") != end_of(a, ta, "fc1"));
  int gathers = 0;
  for (const Op& op : c.graph.ops()) gathers += op.name == "fc1.all_gather";
  CHECK(gathers == 4);  // one NCCL all-gather member per rank
  for (const Op& op : a.graph.ops()) CHECK(op.name != "fc1.all_gather");
  // Every name at the scalar's setting is the scalar's schedule.
  CHECK(latency("te_userbuffers", w, hw, {{"fc1_fprop.method", "ring_exchange"}, {"fc2_fprop.method", "ring_exchange"}}) ==
        latency("te_userbuffers", w, hw, {{"method", "ring_exchange"}}));
}

TEST_CASE("te_userbuffers per GEMM name: mixed methods move no_overlap's bytes, forward and step",
          "[te][per_name][bytes]") {
  const HardwareProfile hw = ideal_profile(4, 1000, 8);
  const SchemeInfo* te = find_scheme("te_userbuffers");
  REQUIRE(te);
  Workload step = mlp_workload(4);
  step.training.pass = Pass::step;
  const std::vector<nlohmann::json> settings = {
      {{"fc1_fprop.method", "bulk"}, {"fc2_fprop.method", "pipeline"}, {"fc2_fprop.num_sm", 4}},
      {{"fc2_fprop.method", "pipeline"}, {"fc1_dgrad.method", "bulk"}, {"fc1_wgrad.num_sm", 4}},
      {{"fc2_dgrad.method", "bulk"}, {"fc1_dgrad.method", "pipeline"}, {"fc1_dgrad.num_splits", 3}},
      {{"fc1_dgrad.method", "ring_exchange"}, {"fc2_fprop.use_ce", false}}};
  for (const Workload& w : {mlp_workload(4), step}) {
    const Bytes want = total(build("no_overlap", w, hw, nlohmann::json::object()).required_bytes);
    for (const nlohmann::json& p : settings) {
      if (!has_backward(w) && p.dump().find("grad") != std::string::npos) continue;
      INFO(p.dump() << " step=" << has_backward(w));
      CHECK(total(build("te_userbuffers", w, hw, p).required_bytes) == want);
      BuildContext ctx{w, hw, p, Fidelity::curve};
      CHECK_NOTHROW(evaluate(*te, ctx));  // the engine's byte accounting matches the graph's
    }
  }
}

TEST_CASE("te_userbuffers per GEMM name: refused where TE refuses or the layer has no such GEMM", "[te][per_name]") {
  const SchemeInfo* s = find_scheme("te_userbuffers");
  REQUIRE(s);
  const HardwareProfile hw = ideal_profile(4, 1000, 8);
  Workload step = mlp_workload(4);
  step.training.pass = Pass::step;
  auto key_of = [&](const Workload& w, const nlohmann::json& params) { return refused_key(*s, w, hw, params); };
  CHECK(key_of(step, {{"qkv_fprop.method", "ring_exchange"}}) == "params.qkv_fprop.method");  // no attention
  CHECK(key_of(step, {{"fc1_fprop.method", "pipeline"}}) == "params.fc1_fprop.method");      // add_ub: not for AG
  CHECK(key_of(step, {{"fc2_fprop.num_sm", 0}}) == "params.fc2_fprop.num_sm");
  CHECK(key_of(step, {{"fc2_fprop.num_sm", 132}}) == "params.fc2_fprop.num_sm");
  // initialize_ub: a dgrad that is not bulk takes its wgrad entry out.
  CHECK(key_of(step, {{"fc1_dgrad.method", "pipeline"}, {"fc1_wgrad.num_sm", 4}}) == "params.fc1_wgrad.num_sm");
  CHECK(key_of(step, {{"fc1_dgrad.method", "bulk"}, {"fc1_wgrad.num_sm", 4}}) == "none");
  Workload gc = gemm_workload(4, Primitive::reduce_scatter, 2048, 1024, 1024);
  CHECK(key_of(gc, {{"fc2_fprop.method", "pipeline"}}) == "params.fc2_fprop.method");
  // A scenario names them as any knob; the loader checks each at its line.
  const char* yaml = R"(hardware: h100-sxm-8x-nvswitch
workload:
  kind: mlp_tpsp
  tp: 8
  model: llama3-70b
  tokens: 4096
schemes:
  - name: te_userbuffers
    params:
      fc2_fprop.method: pipeline
      fc2_fprop.num_splits: 0
)";
  try {
    load_scenario_text(yaml, "per-name.yaml", scenario_options());
    FAIL("accepted num_splits 0");
  } catch (const InputError& e) {
    CHECK(e.line() == 11);
    CHECK_THAT(e.key_path(), Catch::Contains("fc2_fprop.num_splits"));
  }
}

TEST_CASE("tune searches te_userbuffers' names one by one from the grid's best", "[te][per_name][tune]") {
  const char* yaml = R"(hardware: h100-sxm-8x-nvswitch
workload:
  kind: mlp_tpsp
  tp: 8
  model: llama3-70b
  tokens: 2048
schemes:
  - name: te_userbuffers
)";
  const Scenario sc = load_scenario_text(yaml, "tune.yaml", scenario_options());
  const SchemeTuneResult r = tune_schemes(sc, 1);
  REQUIRE(r.schemes.size() == 1);
  const SchemeTuneEntry& e = r.schemes.front();
  Ps grid_best = -1;
  int searched = 0;
  for (const SchemeTuneCandidate& c : e.candidates) {
    if (c.origin == "grid" && (grid_best < 0 || c.latency_ps < grid_best)) grid_best = c.latency_ps;
    if (c.origin == "per-name search") {
      ++searched;
      // Only this workload's names, and each candidate a real run.
      for (auto it = c.params.begin(); it != c.params.end(); ++it)
        if (it.key().find('.') != std::string::npos) CHECK((it.key().rfind("fc1_fprop.", 0) == 0 || it.key().rfind("fc2_fprop.", 0) == 0));
      CHECK(c.latency_ps > 0);
    }
  }
  CHECK(searched > 0);
  CHECK(e.candidates.front().latency_ps <= grid_best);  // the search starts from the grid's best
  // The grid itself holds no per-name knob: they are searched group by group, not multiplied.
  for (const nlohmann::json& c : scheme_knob_grid(*find_scheme("te_userbuffers"), sc.workload))
    for (auto it = c.begin(); it != c.end(); ++it) CHECK(it.key().find('.') == std::string::npos);
  CHECK(knob_groups(*find_scheme("te_userbuffers"), sc.workload) ==
        std::vector<std::string>{"qkv_fprop", "proj_fprop", "fc1_fprop", "fc2_fprop"});
}

TEST_CASE("te_userbuffers bulk: the backward's bulk collectives hold num_sm SMs, as TE's bulk kernels",
          "[te][bulk]") {
  const HardwareProfile hw = ideal_profile(4, 1000, 8);
  Workload step = mlp_workload(4);
  step.training.pass = Pass::step;
  for (const int num_sm : {2, 5}) {
    INFO("num_sm " << num_sm);
    // method bulk (every name), and per name: fc1_dgrad's all-gather on its own CTAs, fc1_wgrad's
    // reduce-scatter on its own.
    const BuiltScheme all = build("te_userbuffers", step, hw, {{"method", "bulk"}, {"num_sm", num_sm}});
    const BuiltScheme named = build("te_userbuffers", step, hw,
                                    {{"column_backward", "bulk"}, {"fc1_dgrad.num_sm", num_sm}, {"fc1_wgrad.num_sm", 7}});
    int gathers = 0, scatters = 0;
    for (const Op& op : all.graph.ops()) {
      if (op.name.ends_with("fc1.wgrad.input_all_gather")) {
        ++gathers;
        CHECK(op.channels == num_sm);
      }
      if (op.name.ends_with("fc1.dgrad.reduce_scatter")) {
        ++scatters;
        CHECK(op.channels == num_sm);
      }
    }
    CHECK(gathers == 4);
    CHECK(scatters == 4);
    for (const Op& op : named.graph.ops()) {
      if (op.name.ends_with("fc1.wgrad.input_all_gather")) CHECK(op.channels == num_sm);
      if (op.name.ends_with("fc1.dgrad.reduce_scatter")) CHECK(op.channels == 7);
    }
  }
}

namespace {

// The ideal node with an fp8 rate (TE's atomic GEMM is FP8 only): the tile time is the profile's
// gemm_tile_us whatever the dtype, so a 128 x 128 tile over K = 1024 still takes 1 us.
HardwareProfile fp8_profile(int gpus) {
  HardwareProfile hw = ideal_profile(gpus, 1000, 8);
  hw.gpu.peak_tflops["fp8"] = 2000;
  return hw;
}

Workload fp8(Workload w) {
  if (auto* g = std::get_if<GemmCollective>(&w.shape)) g->dtype = DType::fp8;
  if (auto* m = std::get_if<MlpTpSp>(&w.shape)) m->dtype = DType::fp8;
  return w;
}

std::vector<OpId> ops_named(const BuiltScheme& b, int rank, const std::string& suffix) {
  std::vector<OpId> out;
  for (OpId i = 0; i < static_cast<OpId>(b.graph.ops().size()); ++i)
    if (b.graph.rank_of(i) == rank && b.graph.op(i).name.ends_with(suffix)) out.push_back(i);
  return out;
}

}  // namespace

TEST_CASE("te_userbuffers atomic pipeline: one GEMM whose chunks' reduce-scatters wait on its tile counter",
          "[te][atomic][closed_form]") {
  const HardwareProfile hw = fp8_profile(4);
  // 160 tiles of 128 x 128 over K = 1024 (1 us each) on 132 SMs: unsplit, ceil(160 / 132) = 2 waves;
  // split in 4 (40 tiles each), 4 GEMMs of one partial wave each. The atomic GEMM is the unsplit one.
  const Workload w = fp8(gemm_workload(4, Primitive::reduce_scatter, 160 * 128, 128, 1024));
  const GemmPlan plan = plan_gemm(hw, overlap::GemmShape{160 * 128, 128, 1024, DType::fp8});
  REQUIRE(plan.tiles == 160);
  REQUIRE(plan.cta_ps == kPsPerUs);
  const nlohmann::json split = {{"method", "pipeline"}, {"num_splits", 4}};
  nlohmann::json atomic = split;
  atomic["atomic_gemm"] = true;
  const BuiltScheme a = build("te_userbuffers", w, hw, atomic), s = build("te_userbuffers", w, hw, split);
  const Timeline ta = run(a.graph, make_node(hw, 4)), ts = run(s.graph, make_node(hw, 4));
  for (int r = 0; r < 4; ++r) {
    const std::vector<OpId> gemm = ops_named(a, r, ".atomic_gemm");
    REQUIRE(gemm.size() == 1);  // one GEMM per rank, not num_splits
    const auto& g = ta.ops[static_cast<std::size_t>(gemm[0])];
    CHECK(g.end_ps - g.start_ps == plan.waves(hw.gpu.sm_count) * plan.cta_ps);  // 2 waves = 2 us
    // Chunk c's tiles are [40c, 40c + 40): chunks 0-2 are done with the first wave (1 us), chunk 3
    // with the second (2 us); each chunk's reduce-scatter starts no earlier, the first ones inside the
    // GEMM's run.
    int c = 0;
    for (OpId i = 0; i < static_cast<OpId>(a.graph.ops().size()); ++i) {
      const Op& op = a.graph.op(i);
      if (a.graph.rank_of(i) != r || op.name.find(".reduce_scatter[") == std::string::npos) continue;
      const Ps done = (c < 3 ? 1 : 2) * kPsPerUs;
      CHECK(ta.ops[static_cast<std::size_t>(i)].start_ps >= done);
      if (c == 0) CHECK(ta.ops[static_cast<std::size_t>(i)].start_ps == done);  // while the GEMM still runs
      ++c;
    }
    CHECK(c == 4);
  }
  // The split schedule pays a wave per split (4 x 1 us of GEMM); the atomic GEMM 2 us.
  CHECK(ta.makespan_ps < ts.makespan_ps);
  // The same collectives: no_overlap's bytes, and the engine's accounting agrees (evaluate checks it).
  CHECK(total(a.required_bytes) == total(s.required_bytes));
  BuildContext ctx{w, hw, atomic, Fidelity::curve};
  CHECK_NOTHROW(evaluate(*find_scheme("te_userbuffers"), ctx));
}

TEST_CASE("te_userbuffers atomic ring_exchange: one GEMM, tp - 1 sends each after its chunk, bytes unchanged",
          "[te][atomic][bytes]") {
  const HardwareProfile hw = fp8_profile(4);
  const SchemeInfo* te = find_scheme("te_userbuffers");
  const Workload rs = fp8(gemm_workload(4, Primitive::reduce_scatter, 2048, 1024, 1024));
  for (const bool ce : {true, false}) {
    INFO("use_ce " << ce);
    const nlohmann::json plain = {{"method", "ring_exchange"}, {"use_ce", ce}};
    nlohmann::json atomic = plain;
    atomic["atomic_gemm"] = true;
    const BuiltScheme a = build("te_userbuffers", rs, hw, atomic);
    CHECK(total(a.required_bytes) == total(build("te_userbuffers", rs, hw, plain).required_bytes));
    const Timeline t = run(a.graph, make_node(hw, 4));
    for (int r = 0; r < 4; ++r) {
      REQUIRE(ops_named(a, r, ".atomic_gemm").size() == 1);
      int sends = 0;
      for (OpId i = 0; i < static_cast<OpId>(a.graph.ops().size()); ++i)
        if (a.graph.rank_of(i) == r && a.graph.op(i).name.find(".send") != std::string::npos) ++sends;
      CHECK(sends == 3);
    }
    CHECK(t.makespan_ps > 0);
    BuildContext ctx{rs, hw, atomic, Fidelity::curve};
    CHECK_NOTHROW(evaluate(*te, ctx));
  }
  // A layer: the fc1_fprop / fc2_fprop pair both atomic ring_exchange, and fc2 atomic pipeline alone.
  const Workload mlp = fp8(mlp_workload(4));
  const Bytes want = total(build("no_overlap", mlp, hw, nlohmann::json::object()).required_bytes);
  for (const nlohmann::json& p : {nlohmann::json{{"atomic_gemm", true}},
                                  nlohmann::json{{"fc2_fprop.method", "pipeline"}, {"fc2_fprop.atomic_gemm", true}},
                                  nlohmann::json{{"method", "pipeline"}, {"atomic_gemm", true}}}) {
    INFO(p.dump());
    CHECK(total(build("te_userbuffers", mlp, hw, p).required_bytes) == want);
    BuildContext ctx{mlp, hw, p, Fidelity::curve};
    CHECK_NOTHROW(evaluate(*te, ctx));
  }
}

TEST_CASE("te_userbuffers atomic_gemm: TE's rules refused at their keys", "[te][atomic][params]") {
  const SchemeInfo* s = find_scheme("te_userbuffers");
  const HardwareProfile hw = fp8_profile(4);
  auto key_of = [&](const Workload& w, const nlohmann::json& params) { return refused_key(*s, w, hw, params); };
  const Workload bf16 = mlp_workload(4), f8 = fp8(mlp_workload(4));
  // add_ub: FP8 only.
  CHECK(key_of(bf16, {{"atomic_gemm", true}}) == "params.atomic_gemm");
  CHECK(key_of(bf16, {{"fc2_fprop.method", "pipeline"}, {"fc2_fprop.atomic_gemm", true}}) ==
        "params.fc2_fprop.atomic_gemm");
  CHECK(key_of(f8, {{"atomic_gemm", true}}) == "none");
  // add_ub: no atomic GEMM for a bulk overlap.
  CHECK(key_of(f8, {{"method", "bulk"}, {"atomic_gemm", true}}) == "params.atomic_gemm");
  CHECK(key_of(f8, {{"fc2_fprop.method", "bulk"}, {"fc2_fprop.atomic_gemm", true}}) == "params.fc2_fprop.atomic_gemm");
  // add_ub: the AG / RS pair of a TP block both atomic ring_exchange or neither.
  CHECK(key_of(f8, {{"fc2_fprop.atomic_gemm", true}}) == "params.fc2_fprop.atomic_gemm");
  CHECK(key_of(f8, {{"fc1_fprop.atomic_gemm", true}}) == "params.fc1_fprop.atomic_gemm");
  CHECK(key_of(f8, {{"fc1_fprop.atomic_gemm", true}, {"fc2_fprop.atomic_gemm", true}}) == "none");
  // An all-gather alone under pipeline (TE refuses pipeline for an all-gather): nothing can be atomic.
  CHECK(key_of(fp8(gemm_workload(4, Primitive::all_gather, 2048, 1024, 1024)),
               {{"method", "pipeline"}, {"atomic_gemm", true}}) == "params.atomic_gemm");
  CHECK(key_of(fp8(gemm_workload(4, Primitive::all_gather, 2048, 1024, 1024)), {{"atomic_gemm", true}}) == "none");
}

TEST_CASE("te_userbuffers pipeline per name: the last chunk's reduce-scatter on UB_MAX_SM CTAs", "[te][per_name]") {
  const HardwareProfile hw = ideal_profile(4, 1000, 8);
  const BuiltScheme b = build("te_userbuffers", mlp_workload(4),
                              hw, {{"fc2_fprop.method", "pipeline"}, {"fc2_fprop.num_splits", 3}, {"fc2_fprop.num_sm", 5}});
  int seen = 0;
  for (const Op& op : b.graph.ops()) {
    if (op.name.rfind("fc2.reduce_scatter[", 0) != 0) continue;
    ++seen;
    // comm_gemm_overlap.cpp split_overlap_rs: _ub_comm->sms = UB_MAX_SM (32) for the last chunk.
    CHECK(op.channels == (op.name == "fc2.reduce_scatter[2]" ? 32 : 5));
  }
  CHECK(seen == 3 * 4);
}

TEST_CASE("tune tries atomic_gemm on fp8 only, and picks it where one GEMM beats the split ones", "[te][atomic][tune]") {
  // The 160-tile GEMM of the closed-form case above: split in 2, 4 or 8 it pays a partial wave per
  // split; as one atomic GEMM it is 2 waves, and each chunk's reduce-scatter still starts as its
  // tiles are done.
  Scenario sc;
  sc.name = "atomic";
  sc.hardware_name = "ideal";
  sc.hardware = fp8_profile(4);
  sc.workload = fp8(gemm_workload(4, Primitive::reduce_scatter, 160 * 128, 128, 1024));
  sc.schemes = {SchemeSpec{"te_userbuffers"}};
  const SchemeTuneResult r = tune_schemes(sc, 1);
  REQUIRE(r.schemes.size() == 1);
  const std::vector<SchemeTuneCandidate>& c = r.schemes.front().candidates;
  auto atomic = [](const SchemeTuneCandidate& x) { return x.params.value("atomic_gemm", false); };
  int tried = 0;
  for (const SchemeTuneCandidate& x : c) {
    if (!atomic(x)) continue;
    ++tried;
    CHECK(x.params.at("method") == "pipeline");  // tune_when: method=pipeline
    // Its split twin (the same knobs without atomic_gemm) is never faster here.
    nlohmann::json twin = x.params;
    twin.erase("atomic_gemm");
    for (const SchemeTuneCandidate& y : c)
      if (y.params == twin) CHECK(x.latency_ps <= y.latency_ps);
  }
  CHECK(tried > 0);
  CHECK(atomic(c.front()));  // the best setting is an atomic GEMM
  // bf16: never tried (TE allows it for FP8 GEMMs only), nor listed as refused.
  sc.workload = gemm_workload(4, Primitive::reduce_scatter, 160 * 128, 128, 1024);
  const SchemeTuneResult b = tune_schemes(sc, 1);
  for (const SchemeTuneCandidate& x : b.schemes.front().candidates) CHECK_FALSE(atomic(x));
  CHECK(b.skipped.empty());
}
