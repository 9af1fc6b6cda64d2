// Scheme-level tuning (sim/tune_schemes.hpp): the knob grid from the parameter tables and the search.
#include <catch2/catch.hpp>

#include <set>

#include "cost_model/input_error.hpp"
#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "sim/node_builder.hpp"
#include "sim/tune_schemes.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

ScenarioOptions options() {
  ScenarioOptions o;
  o.hardware_dir = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";
  return o;
}

const std::string kScenario =
    "hardware: a800-8x-nvlink\n"
    "workload: {kind: gemm_collective, tp: 4, m: 4096, n: 4096, k: 2048, dtype: fp16, primitive: all_reduce}\n"
    "schemes: [no_overlap, {name: data_slicing, params: {chunks: 3}}, flashoverlap]\n";

Ps engine_latency(const Scenario& sc, const std::string& scheme, const nlohmann::json& params) {
  const BuildContext ctx{sc.workload, sc.hardware, params, sc.fidelity};
  const BuiltScheme built = find_scheme(scheme)->build(ctx);
  return run(built.graph, make_node(sc.hardware, built.graph.num_ranks())).makespan_ps;
}

}  // namespace

TEST_CASE("the knob grid comes from the parameter tables, conditional knobs only where they apply", "[tune][schemes]") {
  const Workload forward = load_scenario_text(kScenario, "t.yaml", options()).workload;
  const auto ds = scheme_knob_grid(*find_scheme("data_slicing"), forward);
  REQUIRE(!ds.empty());
  CHECK(ds.front().empty());  // every default first
  std::set<std::int64_t> chunks;
  for (std::size_t i = 1; i < ds.size(); ++i) chunks.insert(ds[i].at("chunks").get<std::int64_t>());
  // The table's values, the default (4) stated once as {}.
  CHECK(chunks == std::set<std::int64_t>{1, 2, 8, 16});
  CHECK(ds.size() == 5);

  const auto at = scheme_knob_grid(*find_scheme("async_tp"), forward);
  // transport x streams, and copy_sms (4 values) only with transport sm: 2 + 2 x 4 = 10 settings.
  CHECK(at.size() == 10);
  std::set<std::string> seen;
  for (const auto& c : at) {
    CHECK(seen.insert(c.dump()).second);
    if (c.contains("copy_sms")) CHECK(c.value("transport", "copy_engine") == "sm");
  }
  // A forward pass has no backward: no_overlap's one knob (column_backward, training only) is not
  // tuned there, so it has one configuration.
  CHECK(scheme_knob_grid(*find_scheme("no_overlap"), forward).size() == 1);
  // A training step tunes it: defaults (scheme) and bulk. data_slicing: chunks x column_backward.
  Workload step = forward;
  step.training.pass = Pass::step;
  const auto no_overlap_step = scheme_knob_grid(*find_scheme("no_overlap"), step);
  REQUIRE(no_overlap_step.size() == 2);
  CHECK(no_overlap_step[1] == nlohmann::json{{"column_backward", "bulk"}});
  CHECK(scheme_knob_grid(*find_scheme("data_slicing"), step).size() == 5 * 2);
  // No workload key is searched for a forward pass or a step without data parallelism.
  CHECK(workload_knob_grid(forward) == std::vector<nlohmann::json>{nlohmann::json::object()});
  CHECK(workload_knob_grid(step) == std::vector<nlohmann::json>{nlohmann::json::object()});
  // Every tuned value is one the scheme accepts: each configuration builds.
  for (const SchemeInfo& s : scheme_registry())
    for (const SchemeParam& p : s.params) {
      for (const auto& v : p.tune_values) CHECK(!v.is_null());
      if (!p.tune_when.empty()) CHECK(p.tune_when.find('=') != std::string::npos);
    }
}

TEST_CASE("tune SCENARIO: each scheme's best is the fastest of its candidates, and real", "[tune][schemes]") {
  const Scenario sc = load_scenario_text(kScenario, "t.yaml", options());
  const SchemeTuneResult r = tune_schemes(sc, 2);
  REQUIRE(r.schemes.size() == 3);
  CHECK(r.schemes[0].scheme == "no_overlap");
  CHECK(r.schemes[1].scheme == "data_slicing");
  CHECK(r.schemes[2].scheme == "flashoverlap");
  CHECK(r.baseline == "no_overlap");
  CHECK(r.baseline_ps == engine_latency(sc, "no_overlap", nlohmann::json::object()));
  Ps best = -1;
  for (const auto& e : r.schemes) {
    INFO(e.scheme);
    REQUIRE(!e.candidates.empty());
    for (std::size_t i = 1; i < e.candidates.size(); ++i) CHECK(e.candidates[i - 1].latency_ps <= e.candidates[i].latency_ps);
    // The reported latency is what the engine gives that configuration.
    CHECK(e.candidates.front().latency_ps == engine_latency(sc, e.scheme, e.candidates.front().params));
    CHECK(e.best.latency_ps == e.candidates.front().latency_ps);
    if (best < 0 || e.candidates.front().latency_ps < best) best = e.candidates.front().latency_ps;
  }
  CHECK(r.schemes[r.best].candidates.front().latency_ps == best);
  // The scenario's own setting (chunks 3) and the table's values were all tried.
  std::set<std::int64_t> chunks;
  for (const auto& c : r.schemes[1].candidates) chunks.insert(c.params.value("chunks", std::int64_t{4}));
  CHECK(chunks == std::set<std::int64_t>{1, 2, 3, 4, 8, 16});
  // The engine-backed wave-group partition is one of FlashOverlap's candidates, and the tuned
  // FlashOverlap is at least as fast as its default (the published search).
  bool searched = false;
  for (const auto& c : r.schemes[2].candidates) searched |= c.origin == "wave-group search (simulate)";
  CHECK(searched);
  CHECK(r.schemes[2].candidates.front().latency_ps <= engine_latency(sc, "flashoverlap", nlohmann::json::object()));
  // Same answer on one thread.
  const SchemeTuneResult one = tune_schemes(sc, 1);
  for (std::size_t i = 0; i < r.schemes.size(); ++i) {
    CHECK(one.schemes[i].candidates.front().params == r.schemes[i].candidates.front().params);
    CHECK(one.schemes[i].candidates.front().latency_ps == r.schemes[i].candidates.front().latency_ps);
  }
}

TEST_CASE("tune SCENARIO: grid settings the GPU cannot run are listed, not fatal; the scenario's own are errors",
          "[tune][schemes]") {
  // async_tp's grid has copy_sms 8..32; on a 32-SM GPU the SM copy kernel may hold at most 31.
  const std::string text =
      "hardware: a800-8x-nvlink\n"
      "workload: {kind: gemm_collective, tp: 4, m: 4096, n: 4096, k: 2048, dtype: fp16, primitive: reduce_scatter}\n"
      "schemes: [no_overlap, async_tp]\n";
  ScenarioOptions o = options();
  o.sets = {"hardware.gpu.sm_count=32"};
  const Scenario sc = load_scenario_text(text, "t.yaml", o);
  const SchemeTuneResult r = tune_schemes(sc, 1);
  REQUIRE(r.schemes.size() == 2);
  REQUIRE(r.skipped.size() == 2);  // copy_sms=32 with streams 1 and 2
  for (const std::string& s : r.skipped) {
    CHECK(s.find("copy_sms=32") != std::string::npos);
    CHECK(s.find("must be an integer in [1, 31] (got 32)") != std::string::npos);
  }
  for (const auto& c : r.schemes[1].candidates) CHECK(c.params.value("copy_sms", 16) < 32);
  CHECK(format_scheme_tune_table(r, sc, 5).find("not run here (2 grid settings") != std::string::npos);
  CHECK(to_json(r, sc, 5)["skipped"].size() == 2);
  // The same setting written in the scenario is the user's: the loader refuses it, naming its line and key.
  const std::string own = text.substr(0, text.rfind("schemes:")) +
                          "schemes: [no_overlap, {name: async_tp, params: {transport: sm, copy_sms: 32}}]\n";
  CHECK_THROWS_WITH(load_scenario_text(own, "t.yaml", o),
                    "t.yaml:3: schemes.1.params.copy_sms: must be an integer in [1, 31] (got 32) "
                    "(with --set hardware.gpu.sm_count=32)");
}

TEST_CASE("tune SCENARIO on a training step: chunks, column_backward and the DDP bucket, best of its own grid",
          "[tune][schemes][training]") {
  // TP 8 x DP 2 (DDP: gradient all-reduce per bucket) on two nodes; a short sequence keeps it quick.
  const std::string text =
      "hardware: h100-2node-ib400\n"
      "workload: {kind: mlp_tpsp, tp: 8, model: llama3-70b, tokens: 2048, dtype: bf16, pass: step,\n"
      "           parallel: {dp: 2, fsdp: none}}\n"
      "schemes: [no_overlap, data_slicing]\n";
  const Scenario sc = load_scenario_text(text, "t.yaml", options());
  const auto buckets = workload_knob_grid(sc.workload);
  // The scenario's bucket (the default, 25 MiB) as {}, then 10, 100 and 400 MiB.
  REQUIRE(buckets.size() == 4);
  CHECK(buckets[0].empty());
  for (std::size_t i = 1; i < buckets.size(); ++i) CHECK(buckets[i].contains("parallel.bucket_mb"));
  const SchemeTuneResult r = tune_schemes(sc, 2);
  REQUIRE(r.schemes.size() == 2);
  const SchemeTuneEntry& ds = r.schemes[1];
  REQUIRE(ds.scheme == "data_slicing");
  // Every chunks x column_backward x bucket setting was tried: 5 x 2 x 4.
  CHECK(ds.candidates.size() == 40);
  std::set<std::string> tried;
  for (const auto& c : ds.candidates) tried.insert(c.params.dump() + c.workload.dump());
  CHECK(tried.size() == 40);
  // The best is the fastest of its own grid, and its latency is what the engine gives that setting on
  // that workload (an independent build and run).
  for (const auto& c : ds.candidates) CHECK(ds.candidates.front().latency_ps <= c.latency_ps);
  const SchemeTuneCandidate& best = ds.candidates.front();
  Scenario at = sc;
  at.workload = with_workload_knobs(sc.workload, best.workload);
  CHECK(best.latency_ps == engine_latency(at, "data_slicing", best.params));
  CHECK(ds.best.step.present);
  CHECK(ds.best.step.forward.latency_ps + ds.best.step.backward.latency_ps == ds.best.latency_ps);
  // A bucket setting changes the step (the DP all-reduces are cut differently): not every bucket ties.
  std::set<Ps> by_bucket;
  for (const auto& c : ds.candidates)
    if (c.params.empty()) by_bucket.insert(c.latency_ps);
  CHECK(by_bucket.size() > 1);
  // The table names the workload key it set.
  const std::string table = format_scheme_tune_table(r, sc, 50);
  CHECK(table.find(" parallel.bucket_mb=") != std::string::npos);
  CHECK(table.find("parallel.* = workload.parallel.*") != std::string::npos);
  CHECK(to_json(r, sc, 5)["schemes"][1]["candidates"].size() == 40);
}

TEST_CASE("tune SCENARIO refuses a training-only knob in a forward pass, at its line", "[tune][schemes][training]") {
  const std::string text =
      "hardware: a800-8x-nvlink\n"
      "workload: {kind: gemm_collective, tp: 4, m: 4096, n: 4096, k: 2048, dtype: fp16, primitive: reduce_scatter}\n"
      "schemes:\n"
      "  - no_overlap\n"
      "  - name: data_slicing\n"
      "    params: {column_backward: bulk}\n";
  // The loader refuses it, so tune (and every command that loads the scenario) never sees it.
  CHECK_THROWS_WITH(load_scenario_text(text, "t.yaml", options()),
                    Catch::StartsWith("t.yaml:6: schemes.1.params.column_backward: scheme "
                                      "'data_slicing': shapes the training backward only"));
}
