// Pipeline and context parallelism from a scenario (workload.parallel.pp, vpp, micro_batches, schedule,
// cp, cp_algorithm; docs/guide/pipeline.md): what the loader refuses, with file, line and key, and what
// it reads into the workload's job.
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "cost_model/input_error.hpp"
#include "sim/pipeline_step.hpp"
#include "sim/scenario.hpp"
#include "tests/sim/pipeline_job_fixture.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

using pipeline_fixture::job_error;
using pipeline_fixture::kJobBase;
using pipeline_fixture::load_job;

}  // namespace

TEST_CASE("pipeline and context-parallel keys are read into the workload's job", "[pipeline][scenario]") {
  const Scenario sc = load_job("{pp: 4, vpp: 2, micro_batches: 8, schedule: interleaved, cp: 2, cp_algorithm: allgather_kv}");
  const JobParallel& j = sc.workload.training.job;
  CHECK(j.pp == 4);
  CHECK(j.vpp == 2);
  CHECK(j.micro_batches == 8);
  CHECK(j.schedule == PipelineSchedule::interleaved);
  CHECK(j.cp == 2);
  CHECK(j.cp_algorithm == ContextParallel::all_gather);
  CHECK(j.active());
  // vpp alone names the interleaved schedule, as Megatron-LM's --num-layers-per-virtual-pipeline-stage does.
  CHECK(load_job("{pp: 4, vpp: 2, micro_batches: 8}").workload.training.job.schedule == PipelineSchedule::interleaved);
  // Without the keys the workload is a step as before.
  CHECK_FALSE(load_job("{dp: 2}").workload.training.job.active());
  // The model config's vocabulary reaches the workload (the first and last stage's memory).
  CHECK(std::get<Transformer>(sc.workload.shape).vocab == 128256);
}

TEST_CASE("pipeline and context-parallel keys that cannot run are refused at their line and key", "[pipeline][scenario][errors]") {
  const auto key_of = [](const std::string& parallel) { return job_error(parallel).key_path(); };
  // 80 layers: pp 3 does not divide them.
  const InputError pp = job_error("{pp: 3, micro_batches: 6}");
  CHECK(pp.key_path() == "workload.parallel.pp");
  CHECK(pp.line() == 10);
  CHECK(pp.file() == "job.yaml");
  CHECK_THAT(std::string(pp.what()), Catch::Contains("80") && Catch::Contains("pp = 3"));
  // vpp without pp, and vpp not dividing layers / pp (80 / 4 = 20 is not a multiple of 3).
  CHECK(key_of("{vpp: 2}") == "workload.parallel.vpp");
  CHECK(key_of("{pp: 4, vpp: 3, micro_batches: 8}") == "workload.parallel.vpp");
  // vpp with a schedule that runs one chunk, and the interleaved schedule with one chunk.
  CHECK(key_of("{pp: 4, vpp: 2, micro_batches: 8, schedule: 1f1b}") == "workload.parallel.vpp");
  CHECK(key_of("{pp: 4, micro_batches: 8, schedule: interleaved}") == "workload.parallel.schedule");
  // Fewer micro-batches than stages for 1F1B and interleaved; interleaved's groups of pp.
  const InputError few = job_error("{pp: 4, micro_batches: 2}");
  CHECK(few.key_path() == "workload.parallel.micro_batches");
  CHECK_THAT(std::string(few.what()), Catch::Contains("fewer than pp = 4"));
  CHECK(key_of("{pp: 4, vpp: 2, micro_batches: 6}") == "workload.parallel.micro_batches");
  // An unknown schedule or algorithm names the known ones.
  const InputError schedule = job_error("{pp: 4, micro_batches: 8, schedule: zb_v}");
  CHECK(schedule.key_path() == "workload.parallel.schedule");
  CHECK_THAT(std::string(schedule.what()), Catch::Contains("gpipe, 1f1b, interleaved, zb_h1"));
  CHECK(key_of("{cp: 2, cp_algorithm: ulysses}") == "workload.parallel.cp_algorithm");
  // A schedule without stages, an algorithm without CP: keys that would change nothing.
  CHECK(key_of("{schedule: gpipe}") == "workload.parallel.schedule");
  CHECK(key_of("{cp_algorithm: ring}") == "workload.parallel.cp_algorithm");
  // CP must cut the sequence into 2 cp chunks (8192 / 6 is not whole).
  const InputError cp = job_error("{cp: 3}");
  CHECK(cp.key_path() == "workload.parallel.cp");
  CHECK_THAT(std::string(cp.what()), Catch::Contains("2 cp = 6"));
  // More GPUs than the profile has: 8 x 8 x 16 x 1 = 1024 > 512.
  const InputError gpus = job_error("{pp: 16, cp: 8, micro_batches: 16}");
  CHECK(gpus.key_path() == "workload.parallel.pp");
  CHECK_THAT(std::string(gpus.what()), Catch::Contains("1024 GPUs") && Catch::Contains("512"));
  // ZeRO-3 gathers parameters for every micro-batch: refused with pipeline stages.
  CHECK(key_of("{dp: 2, fsdp: zero3, pp: 4, micro_batches: 8}") == "workload.parallel.fsdp");
  // A forward pass has no schedule to run.
  const std::string forward = kJobBase.substr(0, kJobBase.find("  pass: step")) + "  pass: forward\n";
  CHECK(job_error("{pp: 4, micro_batches: 8}", forward).key_path() == "workload.parallel.pp");
  // Out of range.
  CHECK(key_of("{pp: 0}") == "workload.parallel.pp");
  CHECK(key_of("{cp: 100000}") == "workload.parallel.cp");
}

TEST_CASE("gpipe takes fewer micro-batches than stages", "[pipeline][scenario]") {
  // GPipe runs every forward then every backward: any micro-batch count is a schedule (its bubble grows).
  CHECK(load_job("{pp: 4, micro_batches: 2, schedule: gpipe}").workload.training.job.micro_batches == 2);
}

TEST_CASE("context parallelism on a workload without attention is refused", "[pipeline][scenario][errors]") {
  const std::string mlp =
      "hardware: h100-64node-ib400-rail\n"
      "workload:\n"
      "  kind: mlp_tpsp\n"
      "  tp: 8\n"
      "  model: llama3-70b\n"
      "  tokens: 8192\n"
      "  pass: step\n";
  ScenarioOptions o;
  o.hardware_dir = pipeline_fixture::kHardwareDir;
  try {
    (void)load_scenario_text(mlp + "  parallel: {cp: 2}\n", "mlp.yaml", o);
    FAIL("cp on mlp_tpsp was accepted");
  } catch (const InputError& e) {
    CHECK(e.key_path() == "workload.parallel.cp");
    CHECK(e.line() == 8);
    CHECK_THAT(std::string(e.what()), Catch::Contains("no attention"));
  }
}

TEST_CASE("1F1B from a scenario: the bubble is (pp - 1) / (m + pp - 1) of the step with free transfers",
          "[pipeline][scenario][closed_form]") {
  // Loaded as a user writes it, composed as `run` composes it (pipeline_parallel_of, evaluate_pipeline).
  // Every stage's chunk has the same forward F and backward B (the engine's runs of the same layers), so
  // with transfers taking no time 1F1B's makespan is (m + pp - 1)(F + B) against m (F + B) of work on
  // each stage: exact in integer picoseconds (Narayanan et al. SC'21 Sec. 2.2.1).
  const std::string small =
      "hardware: h100-sxm-8x-nvswitch\n"
      "workload:\n"
      "  kind: transformer\n"
      "  tp: 2\n"
      "  layers: 8\n"
      "  batch: 1\n"
      "  seq: 1024\n"
      "  d_model: 2048\n"
      "  d_ffn: 8192\n"
      "  heads: 16\n"
      "  kv_heads: 8\n"
      "  pass: step\n";
  for (const int m : {4, 8, 12}) {
    ScenarioOptions o;
    o.hardware_dir = pipeline_fixture::kHardwareDir;
    const Scenario sc = load_scenario_text(small + fmt::format("  parallel: {{pp: 4, micro_batches: {}}}\n", m), "job.yaml", o);
    const std::vector<SchemeRequest> schemes{{"no_overlap", nlohmann::json::object()}};
    const PipelineStepResult r =
        evaluate_pipeline(schemes, sc.workload, sc.hardware, sc.fidelity, pipeline_parallel_of(sc.workload)).front();
    INFO("m " << m);
    // The step's kernels around the layers are the same on every stage but the last, which also runs the
    // final norm: the first three stages take F + B, the last F_L + B_L, and the schedule runs the last
    // stage's m passes back to back between the others' one each (the closed form with even stages).
    REQUIRE(r.stage_kernels.size() == 4);
    const Ps pass = r.chunk_forward_ps + r.chunk_backward_ps + r.stage_kernels[0].forward_ps + r.stage_kernels[0].backward_ps;
    for (int s = 1; s < 3; ++s)
      CHECK(r.stage_kernels[static_cast<std::size_t>(s)].forward_ps + r.stage_kernels[static_cast<std::size_t>(s)].backward_ps ==
            r.stage_kernels[0].forward_ps + r.stage_kernels[0].backward_ps);
    const Ps last = r.chunk_forward_ps + r.chunk_backward_ps + r.stage_kernels[3].forward_ps + r.stage_kernels[3].backward_ps;
    CHECK(last > pass);
    const Ps free_makespan = r.pipeline_ps - r.exposed_p2p_ps;
    CHECK(free_makespan == (4 - 1) * pass + m * last);
    CHECK(r.exposed_bubble_ps == (4 - 1) * pass);
    // With last = pass this is (pp - 1) / (m + pp - 1); the heavier last stage only lowers it.
    CHECK(static_cast<double>(r.exposed_bubble_ps) / static_cast<double>(free_makespan) <= 3.0 / (m + 3));
    // The transfers only add (NVLink inside the node: small, never negative).
    CHECK(r.exposed_p2p_ps >= 0);
    CHECK(r.bubble_ps == r.exposed_bubble_ps + r.exposed_p2p_ps);
  }
}
