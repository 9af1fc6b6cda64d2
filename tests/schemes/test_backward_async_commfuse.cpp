// Training steps of async TP and CommFuse (sim/schemes/async_tp.cpp, commfuse.cpp: their backward
// forms; sim/schemes/training_step.hpp: the step driver). What must hold whatever the timings:
//   - the step's forward part is the forward-only run of the same scheme (the backward starts after
//     the forward's last ops, so nothing of it runs beside the forward);
//   - a decomposition moves the bytes the collectives it replaces move: every rank sends and
//     receives over the step what it does under no_overlap (Korthikanti et al. Sec. 4.2.2: the same
//     all-gathers and reduce-scatters, only cut into P2P steps);
//   - the same input gives the same result.
// And on the default Llama-3-70B MLP (TP=8, H100 SXM): both hide some of the step's communication,
// so their step is no slower than no_overlap's.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ideal_profile.hpp"

#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "sim/node_builder.hpp"
#include "sim/scenario.hpp"
#include "sim/schemes/scheme.hpp"

using namespace overlap;
using namespace overlap::sim;
using namespace overlap::sim::test;

namespace {

const std::string kSource = OVERLAP_SOURCE_DIR;

Workload with_pass(Workload w, Pass p) {
  w.training.pass = p;
  return w;
}

Workload mlp_workload() {
  Workload w;
  w.kind = WorkloadKind::mlp_tpsp;
  w.tp = 4;
  w.shape = MlpTpSp{4096, 1024, 2048, true, DType::bf16, true};
  return w;
}

Workload attention_workload() {
  Workload w;
  w.kind = WorkloadKind::attention_tpsp;
  w.tp = 4;
  w.shape = AttentionTpSp{1, 4096, 1024, 16, 4, true, DType::bf16, true};
  return w;
}

Workload transformer_workload() {
  Workload w;
  w.kind = WorkloadKind::transformer;
  w.tp = 4;
  Transformer t;
  t.model = "custom";
  t.layers = 2;
  t.batch = 1;
  t.seq = 4096;
  t.d_model = 1024;
  t.d_ffn = 2048;
  t.heads = 16;
  t.kv_heads = 4;
  w.shape = t;
  return w;
}

Workload ulysses_workload() {
  Workload w;
  w.kind = WorkloadKind::attention_ulysses;
  w.tp = 4;
  w.shape = AttentionUlysses{1, 8192, 1024, 16, true, DType::bf16};
  return w;
}

// What rank `rank` sends and receives over the whole graph (the byte accounting the engine checks the
// timeline against).
std::pair<Bytes, Bytes> rank_bytes(const BuiltScheme& b, int rank) {
  Bytes sent = 0, received = 0;
  const auto n = b.required_bytes.size();
  for (std::size_t peer = 0; peer < n; ++peer) {
    sent += b.required_bytes[static_cast<std::size_t>(rank)][peer];
    received += b.required_bytes[peer][static_cast<std::size_t>(rank)];
  }
  return {sent, received};
}

SchemeResult evaluate_named(const std::string& scheme, const Workload& w, const HardwareProfile& hw,
                            const nlohmann::json& params = nlohmann::json::object()) {
  const SchemeInfo* s = find_scheme(scheme);
  REQUIRE(s);
  REQUIRE(s->applies(w));
  return evaluate(*s, BuildContext{w, hw, params, Fidelity::curve});  // byte accounting checked inside
}

}  // namespace

TEST_CASE("async TP and CommFuse run training steps: forward part, bytes, determinism",
          "[async_tp][commfuse][training]") {
  const HardwareProfile hw = ideal_profile(4, 200);
  const nlohmann::json none = nlohmann::json::object();
  struct Case {
    std::string scheme;
    Workload workload;
    nlohmann::json params;
  };
  std::vector<Case> cases;
  for (const Workload& w : {mlp_workload(), attention_workload(), transformer_workload()}) {
    cases.push_back({"async_tp", w, none});
    cases.push_back({"async_tp", w, {{"transport", "sm"}, {"streams", 1}}});
    cases.push_back({"commfuse", w, none});
    cases.push_back({"commfuse", w, {{"schedule", "pairwise"}, {"m", 2}}});
    cases.push_back({"commfuse", w, {{"transport", "copy_engine"}, {"schedule", "circular"}}});
  }
  cases.push_back({"commfuse", ulysses_workload(), none});
  cases.push_back({"commfuse", ulysses_workload(), {{"schedule", "pairwise"}}});
  cases.push_back({"commfuse", ulysses_workload(), {{"transport", "copy_engine"}}});

  for (const Case& c : cases) {
    INFO(c.scheme << " " << workload_kind_name(c.workload.kind) << " " << c.params.dump());
    const Workload step = with_pass(c.workload, Pass::step);
    const SchemeResult fwd = evaluate_named(c.scheme, c.workload, hw, c.params);
    const SchemeResult r = evaluate_named(c.scheme, step, hw, c.params);
    REQUIRE(r.step.present);
    CHECK(r.step.pass == "step");
    // The forward part of the step is the forward-only run: the forward blocks are emitted as the
    // forward-only build emits them and the backward waits for their end ops.
    CHECK(r.step.forward.latency_ps == fwd.latency_ps);
    CHECK(r.step.forward.compute_only_ps == fwd.compute_only_ps);
    CHECK(r.step.backward.latency_ps > 0);
    CHECK(r.latency_ps == r.step.forward.latency_ps + r.step.backward.latency_ps);
    CHECK(r.exposed_comm_ps >= 0);
    CHECK(r.latency_ps >= r.bound_ps);
    CHECK(r.scheme_comm_ps <= r.latency_ps);

    // Bytes: per rank, what no_overlap's step moves (its NCCL collectives' algorithm bytes).
    const SchemeInfo* s = find_scheme(c.scheme);
    const SchemeInfo* base = find_scheme("no_overlap");
    const BuiltScheme built = s->build(BuildContext{step, hw, c.params, Fidelity::curve});
    const BuiltScheme reference = base->build(BuildContext{step, hw, none, Fidelity::curve});
    for (int rank = 0; rank < step.tp; ++rank) CHECK(rank_bytes(built, rank) == rank_bytes(reference, rank));

    // Determinism: a second build and run give the same graph and the same times.
    const BuiltScheme again = s->build(BuildContext{step, hw, c.params, Fidelity::curve});
    REQUIRE(again.graph.ops().size() == built.graph.ops().size());
    for (std::size_t i = 0; i < built.graph.ops().size(); ++i) {
      CHECK(again.graph.ops()[i].name == built.graph.ops()[i].name);
      CHECK(again.graph.ops()[i].pass == built.graph.ops()[i].pass);
    }
    const SchemeResult r2 = evaluate_named(c.scheme, step, hw, c.params);
    CHECK(r2.latency_ps == r.latency_ps);
    CHECK(r2.compute_only_ps == r.compute_only_ps);
    CHECK(r2.step.backward.latency_ps == r.step.backward.latency_ps);
    CHECK(r2.events == r.events);
  }
}

TEST_CASE("a backward pass alone runs too, and full recomputation redoes the decomposed forward",
          "[async_tp][commfuse][training]") {
  const HardwareProfile hw = ideal_profile(4, 200);
  for (const char* scheme : {"async_tp", "commfuse"}) {
    INFO(scheme);
    const SchemeResult bwd = evaluate_named(scheme, with_pass(mlp_workload(), Pass::backward), hw);
    REQUIRE(bwd.step.present);
    CHECK(bwd.step.forward.latency_ps == 0);
    CHECK(bwd.step.backward.latency_ps == bwd.latency_ps);

    Workload full = with_pass(mlp_workload(), Pass::step);
    full.training.recompute = Recompute::full;
    const SchemeInfo* s = find_scheme(scheme);
    const BuiltScheme plain = s->build(BuildContext{with_pass(mlp_workload(), Pass::step), hw, nlohmann::json::object(), Fidelity::curve});
    const BuiltScheme again = s->build(BuildContext{full, hw, nlohmann::json::object(), Fidelity::curve});
    const BuiltScheme fwd = s->build(BuildContext{mlp_workload(), hw, nlohmann::json::object(), Fidelity::curve});
    // The recomputed forward moves the forward's bytes once more.
    for (int rank = 0; rank < 4; ++rank) {
      const auto [ps, pr] = rank_bytes(plain, rank);
      const auto [fs, fr] = rank_bytes(fwd, rank);
      const auto [as, ar] = rank_bytes(again, rank);
      CHECK(as == ps + fs);
      CHECK(ar == pr + fr);
    }
    CHECK(evaluate_named(scheme, full, hw).latency_ps > evaluate_named(scheme, with_pass(mlp_workload(), Pass::step), hw).latency_ps);
  }
}

TEST_CASE("async TP's K-split wgrad: each partial adds to the one before it", "[async_tp][training]") {
  const HardwareProfile hw = ideal_profile(4, 200);
  const SchemeInfo* s = find_scheme("async_tp");
  REQUIRE(s);
  const BuiltScheme b = s->build(BuildContext{with_pass(mlp_workload(), Pass::step), hw, nlohmann::json::object(), Fidelity::curve});
  const TaskGraph& g = b.graph;
  // The wgrad of fc1 (the column-parallel linear): T partials per rank, named by the shard they use.
  int partials = 0;
  for (OpId i = 0; i < static_cast<OpId>(g.ops().size()); ++i) {
    const Op& op = g.op(i);
    if (op.name.rfind("bwd.mlp.fc1.wgrad.mm", 0) != 0 || g.rank_of(i) != 0) continue;
    ++partials;
    if (op.name == "bwd.mlp.fc1.wgrad.mm0") continue;  // rank 0's own shard: the first partial
    // Every later partial waits for its pulled shard and for the partial before it (beta = 1).
    bool after_partial = false;
    for (OpId d : op.deps) after_partial = after_partial || g.op(d).name.rfind("bwd.mlp.fc1.wgrad.mm", 0) == 0;
    CHECK(after_partial);
  }
  CHECK(partials == 4);
}

TEST_CASE("Llama-3-70B MLP step: async TP and CommFuse are no slower than no_overlap",
          "[async_tp][commfuse][training][scenario]") {
  ScenarioOptions o;
  o.hardware_dir = kSource + "/scenarios/hardware";
  o.validate_sweep = false;
  o.sets = {"workload.pass=step"};
  const Scenario sc = load_scenario_file(kSource + "/scenarios/llama3-70b-tp8-mlp.yaml", o);
  REQUIRE(is_training_step(sc.workload));
  const auto results = evaluate_all({SchemeRequest{"no_overlap", nlohmann::json::object()},
                                     SchemeRequest{"async_tp", nlohmann::json::object()},
                                     SchemeRequest{"commfuse", nlohmann::json::object()}},
                                    sc.workload, sc.hardware, sc.fidelity);
  REQUIRE(results.size() == 3);
  const SchemeResult& base = results[0];
  for (std::size_t i = 1; i < results.size(); ++i) {
    INFO(results[i].scheme << " " << results[i].latency_ps << " vs no_overlap " << base.latency_ps);
    REQUIRE_FALSE(results[i].failed());
    CHECK(results[i].latency_ps <= base.latency_ps);
    // The workload's communication is the same collectives: the same comm_ps.
    CHECK(results[i].comm_ps == base.comm_ps);
  }
}
