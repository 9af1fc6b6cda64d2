// Training-step benchmarks (docs/guide/training.md; the figures belong in docs/performance.md): what
// `overlap-sim run` does for a step, after the scenario is loaded: every scheme's main run, its
// compute-only and communication-alone re-runs, the per-communicator re-runs and the byte check.
//   - the Llama-3-70B TP 8 training step (scenarios/llama3-70b-tp8-train-step.yaml: 80 layers,
//     forward + backward, selective recomputation), every scheme with a backward form; target < 2 s;
//   - the same model at TP 8 x DP 16 with FSDP (ZeRO-3), the two-node FSDP scenario moved to the
//     64-node rail-optimised profile (128 of its 512 GPUs); target < 10 s; every scheme, and
//     no_overlap alone;
//   - the same model at its published training size (16 x 8192 tokens a micro-batch), composed;
//   - pipeline jobs (docs/guide/pipeline.md): each stage's chunk passes and stage step from the engine,
//     composed by the schedule (evaluate_pipeline), for the shipped 70B PP and 405B 4D jobs.
// One thread (evaluate_all runs the schemes one after another). Run with --benchmark_repetitions=3
// --benchmark_report_aggregates_only=true for medians; each iteration is seconds long, so one
// iteration per repetition.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "sim/metrics.hpp"
#include "sim/pipeline_step.hpp"
#include "sim/scenario.hpp"
#include "tools/bench/bench_scenarios.hpp"

using namespace overlap;
using namespace overlap::sim;
using bench::load_shipped_scenario;

namespace {

// Every scheme the scenario lists (all that run a step, the file naming none), or only `only`.
void run_step(benchmark::State& state, const Scenario& sc, const std::string& only) {
  std::vector<SchemeRequest> requests;
  for (const SchemeSpec& s : sc.schemes)
    if (only.empty() || s.name == only) requests.push_back(SchemeRequest{s.name, s.params});
  std::uint64_t events = 0;
  for (auto _ : state) {
    const std::vector<SchemeResult> results = evaluate_all(requests, sc.workload, sc.hardware, sc.fidelity);
    events = 0;
    for (const SchemeResult& r : results) events += r.events;
    benchmark::DoNotOptimize(results.data());
  }
  state.counters["schemes"] = static_cast<double>(requests.size());
  state.counters["events_main_runs"] = static_cast<double>(events);
}

void BM_Llama70bTp8StepAllSchemes(benchmark::State& state) {
  static const Scenario sc = load_shipped_scenario("llama3-70b-tp8-train-step.yaml");
  run_step(state, sc, "");
}
BENCHMARK(BM_Llama70bTp8StepAllSchemes)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

// arg 0: 0 = every scheme, 1 = no_overlap alone.
void BM_Llama70bTp8xDp16FsdpStep(benchmark::State& state) {
  static const Scenario sc = load_shipped_scenario("llama3-70b-tp8xdp2-fsdp-step.yaml",
                                                   {"hardware=h100-64node-ib400-rail", "workload.parallel.dp=16"});
  run_step(state, sc, state.range(0) == 1 ? "no_overlap" : "");
}
BENCHMARK(BM_Llama70bTp8xDp16FsdpStep)->Arg(0)->Arg(1)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

// Llama 3 70B at the size its published runs train it (issue of the real sizes): TP 8, 80 layers of
// 16 x 8192 tokens, full recomputation, composed from a few layers (sim/layer_composition.hpp); with
// FSDP over 32 replicas on the 64-node profile (256 GPUs), every second layer repeating. Target < 10 s.
// arg 0: 0 = one TP group, 1 = TP 8 x FSDP 32.
void BM_Llama70bRealSizeStep(benchmark::State& state) {
  static const Scenario tp =
      load_shipped_scenario("llama3-70b-tp8-train-step.yaml", {"workload.batch=16", "workload.recompute=full"});
  static const Scenario fsdp = load_shipped_scenario(
      "llama3-70b-tp8xdp2-fsdp-step.yaml",
      {"hardware=h100-64node-ib400-rail", "workload.parallel.dp=32", "workload.batch=16", "workload.recompute=full"});
  run_step(state, state.range(0) == 1 ? fsdp : tp, "");
}
BENCHMARK(BM_Llama70bRealSizeStep)->Arg(0)->Arg(1)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

// A large pipeline job as `run` composes it: every scheme's chunk forward and backward, the stage step
// with its DP tail, ring attention's blocks and the schedule. arg 0: Llama 3 70B, TP 8 x PP 4
// (interleaved, 2 chunks, 8 micro-batches) x DP 2; arg 1: Llama 3.1 405B, TP 8 x CP 2 x PP 14
// (interleaved, 3 chunks, 14 micro-batches) x DP 2, 448 GPUs. Target: a few seconds on one core.
void BM_PipelineJob(benchmark::State& state) {
  static const Scenario llama70 = load_shipped_scenario("llama3-70b-tp8xpp4-interleaved-step.yaml");
  static const Scenario llama405 = load_shipped_scenario("llama3-405b-4d-step.yaml");
  const Scenario& sc = state.range(0) == 1 ? llama405 : llama70;
  std::vector<SchemeRequest> requests;
  for (const SchemeSpec& s : sc.schemes) requests.push_back(SchemeRequest{s.name, s.params});
  for (auto _ : state) {
    const std::vector<PipelineStepResult> results =
        evaluate_pipeline(requests, sc.workload, sc.hardware, sc.fidelity, pipeline_parallel_of(sc.workload));
    benchmark::DoNotOptimize(results.data());
  }
  state.counters["schemes"] = static_cast<double>(requests.size());
}
BENCHMARK(BM_PipelineJob)->Arg(0)->Arg(1)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
