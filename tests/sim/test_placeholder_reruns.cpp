// The placeholder check re-runs only the schemes a changed profile value can reach
// (sim/placeholder_sensitivity.hpp). What it must equal is re-running every scheme at that value:
// these tests run both ways on shipped profiles and scenarios, at both ends of every range, and
// compare every row (latency and speedup exactly, as both are the same integer simulation).
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "sim/layer_composition.hpp"
#include "sim/metrics.hpp"
#include "sim/placeholder_sensitivity.hpp"
#include "sim/scenario.hpp"
#include "tests/support/corpus_sample.hpp"

#ifndef OVERLAP_SOURCE_DIR
#define OVERLAP_SOURCE_DIR "."
#endif

using namespace overlap;
using namespace overlap::sim;

namespace {

Scenario load(const std::string& file, std::vector<std::string> sets) {
  ScenarioOptions o;
  o.hardware_dir = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";
  o.sets = std::move(sets);
  o.validate_sweep = false;
  return load_scenario_file(std::string(OVERLAP_SOURCE_DIR) + "/scenarios/" + file, o);
}

struct Run {
  Scenario sc;
  std::vector<SchemeRequest> requests;
  std::vector<SchemeResult> results;
};

Run run(const std::string& file, const std::vector<std::string>& sets, const std::vector<std::string>& only = {}) {
  Run r{load(file, sets), {}, {}};
  for (const SchemeSpec& s : r.sc.schemes)
    if (only.empty() || std::find(only.begin(), only.end(), s.name) != only.end())
      r.requests.push_back(SchemeRequest{s.name, s.params});
  EvaluateOptions o;
  o.keep_going = true;
  r.results = evaluate_all(r.requests, r.sc.workload, r.sc.hardware, r.sc.fidelity, o);
  return r;
}

std::string text(double v) { return fmt::format("{}", v); }

// Every end of every range of the run's profile: the cheap re-run's rows equal the whole re-run's.
// Returns the scheme evaluations the cheap way took and the whole way took.
std::pair<int, int> check_every_end(const std::string& file, const std::vector<std::string>& sets,
                                    const std::vector<std::string>& only = {}) {
  const Run as_run = run(file, sets, only);
  REQUIRE_FALSE(as_run.sc.hardware.placeholders.empty());
  int cheap_runs = 0, all_runs = 0;
  for (const PlaceholderRange& ph : as_run.sc.hardware.placeholders)
    for (const double value : {ph.low, ph.high}) {
      if (value == ph.value) continue;
      INFO(file << " on " << as_run.sc.hardware.name << ": " << ph.key << " = " << value);
      std::vector<std::string> at_sets = sets;
      at_sets.push_back("hardware." + ph.key + "=" + text(value));
      const Scenario at = load(file, at_sets);
      int cheap = -1, all = -1;
      const auto a = rerun_schemes(as_run.sc, at, as_run.requests, as_run.results, SensitivityRuns::changed_inputs, &cheap);
      const auto b = rerun_schemes(as_run.sc, at, as_run.requests, as_run.results, SensitivityRuns::all, &all);
      REQUIRE(a.size() == b.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        INFO(b[i].scheme);
        CHECK(a[i].request == b[i].request);
        CHECK(a[i].scheme == b[i].scheme);
        CHECK(a[i].failed() == b[i].failed());
        CHECK(a[i].latency_ps == b[i].latency_ps);
        CHECK(a[i].speedup_vs_no_overlap == b[i].speedup_vs_no_overlap);
      }
      CHECK(cheap <= all);
      cheap_runs += cheap;
      all_runs += all;
    }
  // The whole check both ways: the same report.
  const auto reload = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> s = sets;
    s.insert(s.end(), extra.begin(), extra.end());
    return load(file, s);
  };
  const PlaceholderSensitivity cheap =
      placeholder_sensitivity(as_run.sc, as_run.requests, as_run.results, sets, reload, SensitivityRuns::changed_inputs);
  const PlaceholderSensitivity all =
      placeholder_sensitivity(as_run.sc, as_run.requests, as_run.results, sets, reload, SensitivityRuns::all);
  CHECK(placeholder_sensitivity_json(cheap) == placeholder_sensitivity_json(all));
  CHECK(format_placeholder_sensitivity(cheap) == format_placeholder_sensitivity(all));
  CHECK(cheap.scheme_runs == cheap_runs);
  CHECK(all.scheme_runs == all_runs);
  CHECK(all.scheme_runs == all.scheme_runs_if_all);
  return {cheap_runs, all_runs};
}

}  // namespace

TEST_CASE("placeholder re-runs: B200's SM-copy rate reaches only the schemes that copy with SMs",
          "[placeholders][sensitivity]") {
  // transports.sm_copy.cta_gbps is read only when an SM copy kernel moves bytes (fabric.hpp): at its
  // high end the schemes without one keep their latencies as run, and are not simulated again.
  const Run as_run = run("llama3-70b-tp8-mlp.yaml", {"hardware=b200-hgx-8x-nvswitch"});
  const Scenario at = load("llama3-70b-tp8-mlp.yaml", {"hardware=b200-hgx-8x-nvswitch", "hardware.transports.sm_copy.cta_gbps=75"});
  int evaluated = -1;
  const auto rows = rerun_schemes(as_run.sc, at, as_run.requests, as_run.results, SensitivityRuns::changed_inputs, &evaluated);
  CHECK(evaluated > 0);  // flux copies with SMs
  CHECK(evaluated < static_cast<int>(as_run.requests.size()));
  for (const SchemeResult& r : rows) {
    INFO(r.scheme);
    if (r.scheme == "no_overlap" || r.scheme == "flashoverlap") {
      // NCCL collectives only: the latency as run, exactly.
      const auto same = std::find_if(as_run.results.begin(), as_run.results.end(),
                                     [&](const SchemeResult& x) { return x.request == r.request; });
      REQUIRE(same != as_run.results.end());
      CHECK(r.latency_ps == same->latency_ps);
    }
  }
  // NCCL send/recv's latency: only CommFuse's point-to-point steps read it (the collectives here are
  // rings of NCCL steps with their own latency), so fewer schemes re-run, to the same rows.
  const Scenario unread = load("llama3-70b-tp8-mlp.yaml", {"hardware=b200-hgx-8x-nvswitch", "hardware.transports.nccl_p2p.latency_us=30"});
  int none = -1;
  const auto same = rerun_schemes(as_run.sc, unread, as_run.requests, as_run.results, SensitivityRuns::changed_inputs, &none);
  int all = -1;
  const auto whole = rerun_schemes(as_run.sc, unread, as_run.requests, as_run.results, SensitivityRuns::all, &all);
  CHECK(none < all);
  REQUIRE(same.size() == whole.size());
  for (std::size_t i = 0; i < same.size(); ++i) CHECK(same[i].latency_ps == whole[i].latency_ps);
}

TEST_CASE("placeholder re-runs: the cheap check equals re-running every scheme", "[placeholders][sensitivity]") {
  // The default layer on profiles whose ranges reach the graphs (GEMM efficiency, NCCL's busbw
  // fraction, channels), the links (NVLink and PCIe latency) and one transport's costs.
  for (const char* hw : {"b200-hgx-8x-nvswitch", "h100-sxm-8x-nvswitch", "rtx4090-8x-pcie", "a100-sxm-8x-nvswitch"}) {
    const auto [cheap, all] = check_every_end("llama3-70b-tp8-mlp.yaml", {std::string("hardware=") + hw});
    CHECK(cheap <= all);
  }
}

TEST_CASE("placeholder re-runs: the 70B step, whole and composed, equals re-running every scheme",
          "[placeholders][sensitivity][training]") {
  // The 80-layer step is simulated whole; at its published micro-batch (16 sequences, full
  // recomputation) it is composed from runs of fewer layers (layer_composition.hpp), where a scheme
  // the value reaches makes the whole step re-run.
  const std::vector<std::string> schemes = {"no_overlap", "async_tp", "flux"};
  if (overlap::test::corpus_sample_every() > 1) {
    // The sanitizer build (tests/CMakeLists.txt samples the corpus there) spent 420 s of CI on the
    // 80-layer runs below: there the same check runs on 8 layers, whole; the composition's own code
    // runs under the sanitizers in tests/sim/test_layer_composition.cpp. The release build runs all.
    check_every_end("llama3-70b-tp8-train-step.yaml", {"workload.layers=8"}, schemes);
    return;
  }
  check_every_end("llama3-70b-tp8-train-step.yaml", {}, schemes);
  const std::vector<std::string> real_size = {"workload.batch=16", "workload.recompute=full"};
  REQUIRE_FALSE(composition_depths(load("llama3-70b-tp8-train-step.yaml", real_size).workload).empty());
  check_every_end("llama3-70b-tp8-train-step.yaml", real_size, schemes);
}
