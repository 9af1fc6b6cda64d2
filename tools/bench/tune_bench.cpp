// Tuning and sweep benchmarks: FlashOverlap's exact wave-group DP at
// T = 64 and T = 1024 waves (targets < 1 ms and < 50 ms), the published search it is compared with,
// the engine-backed `simulate` search for one GEMM shape (target < 1 s), and one point of the default
// scenario's sweep with every scheme (its rate bounds a sweep's points/s per thread). The 10,000-point
// sweep itself is timed by tools/bench/sweep_bench.sh. Run with --benchmark_repetitions=5
// --benchmark_report_aggregates_only=true for medians.
#include <benchmark/benchmark.h>

#include <string>

#include "cost_model/profile_loader.hpp"
#include "sim/scenario.hpp"
#include "sim/sweep.hpp"
#include "sim/tune_wave_groups.hpp"
#include "tools/bench/bench_scenarios.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

using bench::kHardwareDir;

const HardwareProfile& h100() {
  static const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", kHardwareDir);
  return hw;
}

// An all-reduce GEMM on 8 H100s with exactly `waves` waves on SMs - 2 = 130 SMs: 256 x 128 tiles,
// N = 130 * 128 (130 tile columns, one wave per tile row), M = 256 * waves.
WaveGroupProblem problem_with_waves(int waves) {
  const GemmCollective g{static_cast<std::int64_t>(256) * waves, 130 * 128, 4096, DType::bf16, Primitive::all_reduce,
                         false};
  return published_wave_group_problem(h100(), g, 8);
}

void BM_OptimalDP(benchmark::State& state) {
  const WaveGroupProblem p = problem_with_waves(static_cast<int>(state.range(0)));
  if (p.waves() != state.range(0)) state.SkipWithError("the shape does not have the wave count asked for");
  for (auto _ : state) benchmark::DoNotOptimize(optimal_wave_groups(p).predicted_ps);
  state.counters["waves"] = p.waves();
}
BENCHMARK(BM_OptimalDP)->Arg(64)->Arg(1024)->Unit(benchmark::kMillisecond);

void BM_FlashOverlapSearch(benchmark::State& state) {
  const WaveGroupProblem p = problem_with_waves(static_cast<int>(state.range(0)));
  if (p.waves() != state.range(0)) state.SkipWithError("the shape does not have the wave count asked for");
  for (auto _ : state) benchmark::DoNotOptimize(flashoverlap_search(p).predicted_ps);
}
BENCHMARK(BM_FlashOverlapSearch)->Arg(64)->Arg(1024)->Unit(benchmark::kMillisecond);

void BM_ExhaustiveSearch(benchmark::State& state) {
  const WaveGroupProblem p = problem_with_waves(static_cast<int>(state.range(0)));
  if (p.waves() != state.range(0)) state.SkipWithError("the shape does not have the wave count asked for");
  for (auto _ : state) benchmark::DoNotOptimize(exhaustive_wave_groups(p).predicted_ps);
}
BENCHMARK(BM_ExhaustiveSearch)->Arg(16)->Arg(20)->Unit(benchmark::kMillisecond);

Workload gemm(int tp, Primitive p, std::int64_t m, std::int64_t n, std::int64_t k, DType dt) {
  Workload w;
  w.kind = WorkloadKind::gemm_collective;
  w.tp = tp;
  w.shape = GemmCollective{m, n, k, dt, p, false};
  return w;
}

// `overlap-sim tune --search simulate` on one shape: arg 0 picks the shape, arg 1 the threads.
void BM_SimulateSearch(benchmark::State& state) {
  static const HardwareProfile a800 = load_profile("a800-8x-nvlink", kHardwareDir);
  const bool big = state.range(0) == 1;
  // 0: the A800 AllReduce scenario's shape (T = 20, 4 ranks); 1: 16384x8192x8192 all-reduce on 8
  // H100s (T = 32).
  const Workload w = big ? gemm(8, Primitive::all_reduce, 16384, 8192, 8192, DType::bf16)
                         : gemm(4, Primitive::all_reduce, 8192, 8192, 4096, DType::fp16);
  const HardwareProfile& hw = big ? h100() : a800;
  WaveGroupTuneOptions o;
  o.search = WaveGroupSearch::simulate;
  o.jobs = static_cast<int>(state.range(1));
  int runs = 0;
  for (auto _ : state) {
    const WaveGroupTuneResult r = tune_wave_groups(w, hw, Fidelity::curve, o);
    runs = r.engine_runs;
    benchmark::DoNotOptimize(r.simulated_ps);
  }
  state.counters["engine_runs"] = runs;
}
BENCHMARK(BM_SimulateSearch)->Args({0, 1})->Args({0, 2})->Args({1, 1})->Args({1, 2})->Unit(benchmark::kMillisecond)->UseRealTime();

// One point of `overlap-sim sweep` on the default scenario (every scheme that applies; no byte
// self-check, as sweeps run), after the point is loaded and checked.
void BM_SweepPointDefaultScenario(benchmark::State& state) {
  ScenarioOptions load;
  load.hardware_dir = kHardwareDir;
  load.check_sweep_values = false;
  const Scenario sc = load_scenario_file(std::string(OVERLAP_SOURCE_DIR) + "/scenarios/llama3-70b-tp8-mlp.yaml", load);
  const SweepGrid grid = make_sweep_grid(sc.sweep);
  const std::vector<PreparedPoint> points = prepare_sweep(sc, grid, load, 1);
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(evaluate_sweep_point(sc, grid, i, points[i], SweepFormat::csv, false));
    i = (i + 1) % points.size();
  }
  state.counters["points_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SweepPointDefaultScenario)->Unit(benchmark::kMillisecond)->Iterations(27);

}  // namespace

BENCHMARK_MAIN();
