// The configuration search of `overlap-sim plan` (sim/plan_search.hpp): its enumeration counted by hand,
// its best configuration against `run` of that configuration as a scenario, the memory pruning against
// `run --fit-only` on every candidate, and its output independent of the thread count.
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "sim/plan_report.hpp"
#include "sim/plan_search.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"

namespace {

using namespace overlap;
using namespace overlap::sim;

// Llama 3 8B cut to 4 layers at 1024 tokens on one 8-GPU node: every candidate runs in milliseconds.
const std::string kPlanSearchBase =
    "hardware: h100-sxm-8x-nvswitch\n"
    "workload:\n"
    "  {kind: transformer, tp: 1, model: llama3-8b, layers: 4, batch: 1, seq: 1024, dtype: bf16, pass: step}\n"
    "schemes: [no_overlap]\n";

// The small search of the enumeration test: 4 GPUs, a global batch of 4 sequences.
PlanQuery tiny_query(const std::string& file, std::vector<std::string> sets = {}) {
  PlanQuery q;
  ScenarioOptions o;
  o.sets = std::move(sets);
  q.base = load_scenario_file(file, o);
  q.gpus = 4;
  q.global_batch = 4;
  q.seq = 1024;
  PlanAxes a;
  a.tp = {1, 2};
  a.cp = {1, 2};
  a.vpp = {1, 2};
  a.micro_batch_size = {1, 2};
  a.fsdp = {Sharding::none, Sharding::zero1};
  a.recompute = {Recompute::none};
  a.schedules = {PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved};
  q.axes = resolve_plan_axes(a, q.base, q.gpus);
  q.jobs = 2;
  return q;
}

}  // namespace

TEST_CASE("plan: the enumeration is exactly the configurations counted by hand", "[plan]") {
  const test::TempDir dir("plan");
  const PlanQuery q = tiny_query(dir.write("tiny.yaml", kPlanSearchBase));
  const std::vector<PlanCandidate> c = plan_candidates(q);
  // By hand, 4 GPUs, global batch 4, one scheme, one recompute policy. (tp, cp) -> pp from the divisors
  // of 4 / (tp cp), dp = what is left; pp = 1 takes vpp 1 and no schedule, pp > 1 takes vpp 1 (1f1b) or
  // vpp 2 (interleaved): 2 ways; dp = 1 takes fsdp none, dp > 1 none or zero1: 2 ways; micro-batch size
  // 1 or 2 where dp x size divides 4.
  //   (1,1): pp 1 dp 4: 1 x 2 x 1 (size 1 only) = 2; pp 2 dp 2: 2 x 2 x 2 = 8; pp 4 dp 1: 2 x 1 x 2 = 4
  //   (1,2): pp 1 dp 2: 1 x 2 x 2 = 4; pp 2 dp 1: 2 x 1 x 2 = 4
  //   (2,1): the same as (1,2): 8
  //   (2,2): pp 1 dp 1: 1 x 1 x 2 = 2
  //   2 + 8 + 4 + 4 + 4 + 8 + 2 = 32.
  REQUIRE(c.size() == 32);
  int interleaved = 0, with_cp = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    CHECK(c[i].index == static_cast<int>(i));
    CHECK(c[i].tp * c[i].cp * c[i].pp * c[i].dp == 4);
    CHECK(c[i].dp * c[i].micro_batch_size * c[i].micro_batches == 4);
    if (c[i].schedule == PipelineSchedule::interleaved) ++interleaved;
    if (c[i].cp_algorithm) ++with_cp;
  }
  // Interleaved: (1,1) pp 2: 1 x 2 x 2 = 4, pp 4: 2; (1,2) and (2,1) pp 2: 2 each: 10. With cp: 4 + 4 + 2.
  CHECK(interleaved == 10);
  CHECK(with_cp == 10);
}

TEST_CASE("plan: the best configuration's step is what `run` reports for it as a scenario", "[plan]") {
  const test::TempDir dir("plan");
  const std::string file = dir.write("tiny.yaml", kPlanSearchBase);
  const PlanResult r = plan_search(tiny_query(file));
  REQUIRE(!r.ranking.empty());
  for (std::size_t k = 0; k < 2 && k < r.ranking.size(); ++k) {
    const PlanOutcome& best = r.outcomes[static_cast<std::size_t>(r.ranking[k])];
    std::vector<std::string> args = {"run", file, "--format", "json", "--placeholder-check", "never"};
    for (const std::string& s : plan_candidate_sets(best.candidate, 1024)) {
      args.push_back("--set");
      args.push_back(s);
    }
    const test::CliResult run = test::cli(args);
    REQUIRE(run.rc == 0);
    const nlohmann::json j = nlohmann::json::parse(run.out);
    // The same scenario through the same engine: equal to the picosecond, printed in microseconds.
    const double step_us = best.job ? j.at("job").at("results").at(0).at("step_us").get<double>()
                                    : static_cast<double>(j.at("results").at(0).at("latency_ps").get<std::int64_t>()) / 1e6;
    CHECK(step_us == Approx(static_cast<double>(best.step_ps) / 1e6).epsilon(1e-9));
  }
}

TEST_CASE("plan: memory pruning drops exactly the candidates `run --fit-only` refuses", "[plan]") {
  const test::TempDir dir("plan");
  const std::string file = dir.write("tiny.yaml", kPlanSearchBase);
  // HBM cut to 12 GiB: the 4-layer model with its 128k vocabulary needs about 9 to 34 GiB per GPU across
  // the candidates, so some fit and some do not.
  const std::vector<std::string> small_hbm = {"hardware.gpu.hbm_bytes=12884901888"};
  PlanOptions all;
  all.simulate_all = true;
  const PlanResult pruned = plan_search(tiny_query(file, small_hbm));
  const PlanResult everything = plan_search(tiny_query(file, small_hbm), all);
  int fits = 0, refused = 0;
  for (std::size_t i = 0; i < pruned.outcomes.size(); ++i) {
    const PlanOutcome& o = pruned.outcomes[i];
    if (o.verdict == PlanVerdict::invalid) continue;
    std::vector<std::string> args = {"run", file, "--fit-only", "--set", small_hbm.front()};
    for (const std::string& s : plan_candidate_sets(o.candidate, 1024)) {
      args.push_back("--set");
      args.push_back(s);
    }
    const bool run_fits = test::cli(args).rc == 0;
    (run_fits ? fits : refused)++;
    CHECK((o.verdict != PlanVerdict::out_of_memory) == run_fits);
    // Simulating every candidate changes no verdict and no figure of one that fits.
    CHECK(everything.outcomes[i].verdict == o.verdict);
    if (o.verdict == PlanVerdict::ranked) CHECK(everything.outcomes[i].step_ps == o.step_ps);
  }
  CHECK(fits > 0);
  CHECK(refused > 0);
  CHECK(pruned.ranking == everything.ranking);
  CHECK(pruned.simulated < everything.simulated);
}

TEST_CASE("plan: the report does not depend on the thread count", "[plan]") {
  const test::TempDir dir("plan");
  const std::string file = dir.write("tiny.yaml", kPlanSearchBase);
  PlanQuery one = tiny_query(file);
  one.jobs = 1;
  PlanQuery two = tiny_query(file);
  two.jobs = 2;
  const PlanResult a = plan_search(one), b = plan_search(two);
  CHECK(plan_report_json(a, 32).dump() == plan_report_json(b, 32).dump());
  CHECK(format_plan_report(a, 5) == format_plan_report(b, 5));
}
