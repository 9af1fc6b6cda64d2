// The configuration search of `overlap-sim plan` (sim/plan_search.hpp; docs/guide/plan.md "Speed"):
// candidates per second, the figure the search's target is stated in (1,000 candidates in under a
// minute on 2 cores). Two searches, each reported as items (candidates) per second:
//   - the whole search of a small model (Llama 3 8B cut to 8 layers at 2048 tokens) on one 8-GPU node,
//     every axis at its default: enumeration, loading each configuration as a scenario, the memory
//     pruning and the survivors' simulation;
//   - the same search up to the pruning only (every candidate loaded and sized, none simulated), the
//     cheap part that decides how much simulation is left.
// Threads: --benchmark_filter and the argument (1 or 2 threads). Run with --benchmark_repetitions=3
// --benchmark_report_aggregates_only=true for medians.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "sim/plan_search.hpp"
#include "sim/scenario.hpp"
#include "tools/bench/bench_scenarios.hpp"

namespace {

using overlap::sim::PlanAxes;
using overlap::sim::PlanQuery;
using overlap::sim::PlanResult;
using overlap::sim::ScenarioOptions;

// The base names both schemes, so its own tp is one they apply to (the candidates set their own).
const char* const kBase =
    "hardware: h100-sxm-8x-nvswitch\n"
    "workload:\n"
    "  {kind: transformer, tp: 8, model: llama3-8b, layers: 8, batch: 1, seq: 2048, dtype: bf16, pass: step}\n"
    "schemes: [no_overlap, te_userbuffers]\n";

PlanQuery query(int jobs, std::vector<std::string> sets = {}) {
  ScenarioOptions o;
  o.hardware_dir = overlap::bench::kHardwareDir;
  o.sets = std::move(sets);
  PlanQuery q;
  q.base = overlap::sim::load_scenario_text(kBase, "", o);
  q.hardware_dir = o.hardware_dir;
  q.gpus = 8;
  q.global_batch = 16;
  q.seq = 2048;
  q.axes = overlap::sim::resolve_plan_axes(PlanAxes{}, q.base, q.gpus);
  q.jobs = jobs;
  return q;
}

void BM_PlanSearch(benchmark::State& state) {
  const PlanQuery q = query(static_cast<int>(state.range(0)));
  std::size_t candidates = 0, simulated = 0;
  for (auto _ : state) {
    const PlanResult r = overlap::sim::plan_search(q);
    candidates += r.outcomes.size();
    simulated += static_cast<std::size_t>(r.simulated);
    benchmark::DoNotOptimize(r.ranking.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(candidates));
  state.counters["simulated"] = benchmark::Counter(static_cast<double>(simulated), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_PlanSearch)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

// HBM of 1 byte: every candidate is loaded and sized and none fits, so nothing is simulated.
void BM_PlanPruneOnly(benchmark::State& state) {
  const PlanQuery q = query(static_cast<int>(state.range(0)), {"hardware.gpu.hbm_bytes=1"});
  std::size_t candidates = 0;
  for (auto _ : state) {
    const PlanResult r = overlap::sim::plan_search(q);
    candidates += r.outcomes.size();
    benchmark::DoNotOptimize(r.outcomes.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(candidates));
}
BENCHMARK(BM_PlanPruneOnly)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
