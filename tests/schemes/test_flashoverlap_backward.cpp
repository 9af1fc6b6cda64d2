// FlashOverlap in a training step (sim/schemes/flashoverlap.cpp FlashOverlapPass; flashoverlap-paper
// Sec. 2.3.2: GEMM+ReduceScatter comes from TP training). It signals every GEMM whose output a
// collective reduces: the forward's row-parallel GEMM -> reduce-scatter and, in the backward, a
// column-parallel dgrad -> reduce-scatter, each GEMM with the wave-group partition of its own shape;
// the all-gathers before a GEMM run as no_overlap runs them. Checked here: it runs for every layer kind
// it applies to, its forward part is its forward pass alone, it moves exactly no_overlap's TP bytes,
// the dgrad's groups are the predictive search's for the dgrad shape, the communication-alone re-run
// still sees every signal, and it is deterministic.
#include <map>
#include <string>

#include <catch2/catch.hpp>

#include "cost_model/flashoverlap_predictor.hpp"
#include "cost_model/gemm_model.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/profile_loader.hpp"
#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "sim/node_builder.hpp"
#include "sim/schemes/flashoverlap.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/schemes/wave_groups.hpp"
#include "sim/workload_shapes.hpp"
#include "tests/support/transformer_fixtures.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

const std::string kHardwareDir = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";

const HardwareProfile& h100() {
  static const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", kHardwareDir);
  return hw;
}

// Llama-3-70B's MLP (d_model 8192, SwiGLU FFN 28672), TP 8 + SP.
Workload mlp_70b(std::int64_t tokens, Pass pass) {
  Workload w;
  w.kind = WorkloadKind::mlp_tpsp;
  w.tp = 8;
  w.shape = MlpTpSp{tokens, 8192, 28672, true, DType::bf16, true};
  w.training.pass = pass;
  return w;
}

// Llama-3-70B's attention (64 heads, 8 KV heads), TP 8 + SP.
Workload attention_70b(Pass pass) {
  Workload w;
  w.kind = WorkloadKind::attention_tpsp;
  w.tp = 8;
  w.shape = AttentionTpSp{1, 4096, 8192, 64, 8, true, DType::bf16, true};
  w.training.pass = pass;
  return w;
}

Workload transformer_70b(int layers, Pass pass) {
  return test::with_pass(test::transformer_on(test::custom_transformer(layers, 1, 4096, 8192, 28672, 64, 8), 8), pass);
}

SchemeResult evaluate_scheme(const std::string& scheme, const Workload& w, const nlohmann::json& params = nlohmann::json::object()) {
  const BuildContext ctx{w, h100(), params, Fidelity::curve};
  return evaluate(*find_scheme(scheme), ctx);
}

// The scheme's graph run on its own (no applicability check): what a forward-only run of it takes.
Ps build_and_run(const std::string& scheme, const Workload& w, BuiltScheme* out = nullptr) {
  const nlohmann::json params = nlohmann::json::object();
  const BuildContext ctx{w, h100(), params, Fidelity::curve};
  BuiltScheme b = find_scheme(scheme)->build(ctx);
  const Ps t = run(b.graph, make_node(h100(), w.tp)).makespan_ps;
  if (out) *out = std::move(b);
  return t;
}

// Bytes per primitive of the TP communicator's collectives.
std::map<std::string, Bytes> tp_bytes(const SchemeResult& r) {
  std::map<std::string, Bytes> out;
  for (const CollectiveFigure& c : r.collectives)
    if (c.communicator == "tp") out[c.primitive] += c.bytes;
  return out;
}

int count_named(const SchemeResult& r, const std::string& prefix) {
  int n = 0;
  for (const CollectiveFigure& c : r.collectives)
    if (c.name.rfind(prefix, 0) == 0) ++n;
  return n;
}

}  // namespace

TEST_CASE("flashoverlap has a backward form and applies to the layer workloads' steps", "[flashoverlap][step]") {
  const SchemeInfo& fo = *find_scheme("flashoverlap");
  CHECK_FALSE(fo.backward.empty());
  CHECK(fo.backward.find("no_overlap") != std::string::npos);  // says which patterns are not its own
  CHECK(fo.applies(mlp_70b(8192, Pass::step)));
  CHECK(fo.applies(attention_70b(Pass::step)));
  CHECK(fo.applies(transformer_70b(2, Pass::backward)));
  // Forward-only layer workloads keep the schemes they had; Ulysses has no GEMM before a collective.
  CHECK_FALSE(fo.applies(mlp_70b(8192, Pass::forward)));
  Workload ulysses;
  ulysses.kind = WorkloadKind::attention_ulysses;
  ulysses.tp = 8;
  ulysses.shape = AttentionUlysses{1, 4096, 8192, 64, true, DType::bf16};
  ulysses.training.pass = Pass::step;
  CHECK_FALSE(fo.applies(ulysses));
  // A GEMM after an all-gather has no signalled forward, but its backward's dgrad -> reduce-scatter is.
  Workload ag;
  ag.kind = WorkloadKind::gemm_collective;
  ag.tp = 8;
  ag.shape = GemmCollective{8192, 1024, 8192, DType::bf16, Primitive::all_gather, false};
  CHECK_FALSE(fo.applies(ag));
  ag.training.pass = Pass::step;
  CHECK(fo.applies(ag));
}

TEST_CASE("flashoverlap steps: forward part = forward alone, TP bytes = no_overlap's, deterministic",
          "[flashoverlap][step]") {
  const std::vector<std::pair<std::string, std::function<Workload(Pass)>>> cases = {
      {"mlp_tpsp", [](Pass p) { return mlp_70b(4096, p); }},
      {"attention_tpsp", [](Pass p) { return attention_70b(p); }},
      {"transformer (2 layers)", [](Pass p) { return transformer_70b(2, p); }},
  };
  for (const auto& [what, make] : cases) {
    INFO(what);
    const SchemeResult step = evaluate_scheme("flashoverlap", make(Pass::step));
    REQUIRE(step.step.present);
    CHECK(step.latency_ps > 0);
    CHECK(step.step.forward.latency_ps + step.step.backward.latency_ps == step.latency_ps);
    // The step's forward is the same graph as the forward pass alone: the same end, to the picosecond.
    CHECK(step.step.forward.latency_ps == build_and_run("flashoverlap", make(Pass::forward)));
    // Wave groups cut the collectives, never add or drop a byte.
    const SchemeResult base = evaluate_scheme("no_overlap", make(Pass::step));
    CHECK(tp_bytes(step) == tp_bytes(base));
    CHECK(step.step.model_flops == base.step.model_flops);
    // Signalled GEMMs in both passes: the forward's row-parallel reduce-scatter, the backward's dgrad's.
    CHECK(count_named(step, "bwd.") > 0);
    // The communication-alone re-run still sees every tile's signal: it ends, and no later than the step.
    CHECK(step.scheme_comm_ps > 0);
    CHECK(step.scheme_comm_ps <= step.latency_ps);
    CHECK(step.compute_only_ps <= step.latency_ps);
    // Deterministic: the same step twice gives the same figures.
    const SchemeResult again = evaluate_scheme("flashoverlap", make(Pass::step));
    CHECK(again.latency_ps == step.latency_ps);
    CHECK(again.scheme_comm_ps == step.scheme_comm_ps);
    CHECK(again.reason == step.reason);
  }
}

TEST_CASE("a gemm_collective step's forward equals flashoverlap's forward-only run", "[flashoverlap][step]") {
  Workload w;
  w.kind = WorkloadKind::gemm_collective;
  w.tp = 8;
  w.shape = GemmCollective{16384, 8192, 3584, DType::bf16, Primitive::reduce_scatter, true};
  const SchemeResult fwd = evaluate_scheme("flashoverlap", w);
  w.training.pass = Pass::step;
  const SchemeResult step = evaluate_scheme("flashoverlap", w);
  CHECK(step.step.forward.latency_ps == fwd.latency_ps);
  // The backward of a row-parallel GEMM is dY's all-gather before dgrad: not FlashOverlap's pattern,
  // so the step signals the forward's GEMM alone and the backward moves no_overlap's all-gather.
  CHECK(count_named(step, "bwd.gemm.dgrad.all_gather") == 1);
}

TEST_CASE("the dgrad's wave groups are the predictive search's for the dgrad shape", "[flashoverlap][step]") {
  // Llama-3-70B's MLP backward, TP 8 + SP: fc1's dgrad is tokens x d_model x 2 ffn/tp (16384 x 8192 x 7168),
  // with the same output tiles as fc2's forward (16384 x 8192 x 3584) and twice the work per wave.
  const Workload w = mlp_70b(16384, Pass::step);
  const SchemeResult r = evaluate_scheme("flashoverlap", w);
  auto groups_for = [&](const GemmCollective& g) {
    Workload one;
    one.kind = WorkloadKind::gemm_collective;
    one.tp = 8;
    one.shape = g;
    const nlohmann::json params = nlohmann::json::object();
    const BuildContext ctx{one, h100(), params, Fidelity::curve};
    return flashoverlap_search(flashoverlap_problem(ctx)).groups;
  };
  const std::vector<int> dgrad = groups_for(GemmCollective{16384, 8192, 7168, DType::bf16, Primitive::reduce_scatter, false});
  const std::vector<int> fc2 = groups_for(GemmCollective{16384, 8192, 3584, DType::bf16, Primitive::reduce_scatter, false});
  CHECK(count_named(r, "bwd.mlp.fc1.dgrad.reduce_scatter.group") == static_cast<int>(dgrad.size()));
  CHECK(count_named(r, "mlp.reduce_scatter.group") == static_cast<int>(fc2.size()));
  // Each group's bytes are its tiles' share of dX (16384 x 8192 bf16).
  const GemmPlan plan = plan_gemm(h100(), overlap::GemmShape{16384, 8192, 7168, DType::bf16});
  const std::vector<TileRange> ranges =
      wave_group_tiles(dgrad, plan.tiles, static_cast<std::int64_t>(h100().gpu.sm_count - 2) * plan.ctas_per_sm);
  const Bytes dx = 16384LL * 8192 * 2;
  for (std::size_t j = 0; j < ranges.size(); ++j) {
    INFO("group " << j);
    bool found = false;
    for (const CollectiveFigure& c : r.collectives)
      if (c.name == "bwd.mlp.fc1.dgrad.reduce_scatter.group" + std::to_string(j)) {
        found = true;
        CHECK(c.bytes == group_bytes(ranges[j], plan.tiles, dx));
      }
    CHECK(found);
  }
  CHECK(r.reason.find("mlp.fc1.dgrad") != std::string::npos);
}

TEST_CASE("the 70B MLP step: flashoverlap no slower than no_overlap, in either column-parallel backward",
          "[flashoverlap][step]") {
  const Workload w = mlp_70b(8192, Pass::step);
  for (const char* column : {"scheme", "bulk"}) {
    INFO(column);
    const nlohmann::json params = {{"column_backward", column}};
    const SchemeResult fo = evaluate_scheme("flashoverlap", w, params);
    const SchemeResult base = evaluate_scheme("no_overlap", w, params);
    CHECK(fo.latency_ps <= base.latency_ps);
    CHECK(fo.step.forward.latency_ps <= base.step.forward.latency_ps);
    CHECK(tp_bytes(fo) == tp_bytes(base));
  }
  // bulk: the dgrad's reduce-scatter runs beside wgrad (Megatron's asynchronous backward), unsignalled.
  const SchemeResult bulk = evaluate_scheme("flashoverlap", w, {{"column_backward", "bulk"}});
  CHECK(count_named(bulk, "bwd.mlp.fc1.dgrad.reduce_scatter.group") == 0);
  CHECK(count_named(bulk, "bwd.mlp.fc1.dgrad.reduce_scatter") == 1);
}

TEST_CASE("an all-reduce after dgrad without sequence parallelism is signalled too", "[flashoverlap][step]") {
  Workload w = mlp_70b(4096, Pass::backward);
  std::get<MlpTpSp>(w.shape).gather_input = false;
  const SchemeResult r = evaluate_scheme("flashoverlap", w);
  CHECK(count_named(r, "bwd.mlp.fc1.dgrad.all_reduce.group") > 0);
  CHECK(tp_bytes(r) == tp_bytes(evaluate_scheme("no_overlap", w)));
}

TEST_CASE("a list of wave counts that fits no signalled GEMM of a step is refused naming params.groups",
          "[flashoverlap][step][errors]") {
  const Workload w = mlp_70b(4096, Pass::step);
  const nlohmann::json params = {{"groups", {1, 1}}};
  const BuildContext ctx{w, h100(), params, Fidelity::curve};
  try {
    find_scheme("flashoverlap")->build(ctx);
    FAIL("a two-wave list was accepted for GEMMs of more waves");
  } catch (const InputError& e) {
    CHECK(e.key_path() == "params.groups");
    CHECK(std::string(e.what()).find("mlp.fc2") != std::string::npos);
  }
}
