// What the placeholder check (sim/placeholder_sensitivity.hpp) adds to `run`: the default scenario
// (Llama-3-70B MLP, TP 8) and the 80-layer Llama-3-70B TP 8 training step, each on H100 (whose
// guesses had no ranges before this check covered every shipped profile, so a run there was the
// evaluation alone) and on B200; three ways:
//   arg 0 = the evaluation alone (what `run` did where the profile had no ranges),
//   arg 1 = the evaluation and the check re-running every scheme at both ends of every range,
//   arg 2 = the evaluation and the check re-running only the schemes a guessed value reaches.
// The ratios between them are the cost of the check; docs/guide/profile.md quotes them. The check
// runs its re-runs side by side on every core (sweep_parallel.hpp), so read real time with the
// machine's core count in mind. Counters: scheme evaluations the check took.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "sim/metrics.hpp"
#include "sim/placeholder_sensitivity.hpp"
#include "sim/scenario.hpp"
#include "tools/bench/bench_scenarios.hpp"

using namespace overlap;
using namespace overlap::sim;
using bench::load_shipped_scenario;

namespace {

void run_with_check(benchmark::State& state, const std::string& file, const std::vector<std::string>& sets) {
  const Scenario sc = load_shipped_scenario(file, sets);
  std::vector<SchemeRequest> requests;
  for (const SchemeSpec& s : sc.schemes) requests.push_back(SchemeRequest{s.name, s.params});
  const auto reload = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> all = sets;
    all.insert(all.end(), extra.begin(), extra.end());
    return load_shipped_scenario(file, all);
  };
  const int mode = static_cast<int>(state.range(0));
  int evaluations = 0, if_all = 0;
  for (auto _ : state) {
    EvaluateOptions o;
    o.keep_going = true;
    const std::vector<SchemeResult> results = evaluate_all(requests, sc.workload, sc.hardware, sc.fidelity, o);
    if (mode > 0) {
      const PlaceholderSensitivity s = placeholder_sensitivity(
          sc, requests, results, sets, reload, mode == 1 ? SensitivityRuns::all : SensitivityRuns::changed_inputs);
      evaluations = s.scheme_runs;
      if_all = s.scheme_runs_if_all;
      benchmark::DoNotOptimize(s.deciding.data());
    }
    benchmark::DoNotOptimize(results.data());
  }
  state.counters["placeholders"] = static_cast<double>(sc.hardware.placeholders.size());
  state.counters["check_evaluations"] = static_cast<double>(evaluations);
  state.counters["evaluations_if_all"] = static_cast<double>(if_all);
}

void BM_DefaultScenarioH100(benchmark::State& state) { run_with_check(state, "llama3-70b-tp8-mlp.yaml", {}); }
BENCHMARK(BM_DefaultScenarioH100)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_DefaultScenarioB200(benchmark::State& state) {
  run_with_check(state, "llama3-70b-tp8-mlp.yaml", {"hardware=b200-hgx-8x-nvswitch"});
}
BENCHMARK(BM_DefaultScenarioB200)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Llama70bStepH100(benchmark::State& state) { run_with_check(state, "llama3-70b-tp8-train-step.yaml", {}); }
BENCHMARK(BM_Llama70bStepH100)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

void BM_Llama70bStepB200(benchmark::State& state) {
  run_with_check(state, "llama3-70b-tp8-train-step.yaml", {"hardware=b200-hgx-8x-nvswitch"});
}
BENCHMARK(BM_Llama70bStepB200)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
