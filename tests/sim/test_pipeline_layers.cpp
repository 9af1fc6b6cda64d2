// Uneven layers per pipeline stage (sim/pipeline_layers.hpp; workload.parallel.first_stage_layers and
// last_stage_layers, Megatron-Core's --decoder-first/last-pipeline-num-layers): the layout, its rules,
// the scenario errors at file, line and key, and the memory per stage that follows.
#include <catch2/catch.hpp>

#include <numeric>
#include <string>

#include "cost_model/input_error.hpp"
#include "cost_model/profile_loader.hpp"
#include "sim/pipeline_layers.hpp"
#include "sim/pipeline_step.hpp"
#include "sim/report.hpp"
#include "sim/scenario.hpp"
#include "sim/step_memory.hpp"
#include "tests/sim/pipeline_job_fixture.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

// The shared job (tests/sim/pipeline_job_fixture.hpp) with `parallel` at line 10.
Scenario load(const std::string& parallel) { return pipeline_fixture::load_job(parallel); }
InputError error_of(const std::string& parallel) { return pipeline_fixture::job_error(parallel); }

}  // namespace

TEST_CASE("stage layers: the first and last stages' counts, the rest split evenly", "[pipeline][layers]") {
  CHECK(pipeline_stage_layers(StageLayersRule{80, 4, 1, 0, 0}) == std::vector<int>{20, 20, 20, 20});
  // Llama 3 405B's 126 layers on 16 stages (Llama 3 report Sec. 3.3.2: one fewer layer on the first and
  // last stages): 7 + 14 x 8 + 7 = 126.
  const std::vector<int> llama = pipeline_stage_layers(StageLayersRule{126, 16, 1, 7, 7});
  CHECK(llama.front() == 7);
  CHECK(llama.back() == 7);
  CHECK(llama[1] == 8);
  CHECK(std::accumulate(llama.begin(), llama.end(), 0) == 126);
  // Only the first given: the other pp - 1 stages share the rest.
  CHECK(pipeline_stage_layers(StageLayersRule{80, 4, 1, 14, 0}) == std::vector<int>{14, 22, 22, 22});
  CHECK(pipeline_stage_layers(StageLayersRule{80, 2, 1, 38, 42}) == std::vector<int>{38, 42});
  // With a virtual pipeline every stage's count divides by vpp.
  CHECK(pipeline_stage_layers(StageLayersRule{80, 4, 2, 18, 18}) == std::vector<int>{18, 22, 22, 18});
}

TEST_CASE("stage layers: layouts Megatron-Core cannot build are refused, naming the key", "[pipeline][layers]") {
  const auto key = [](StageLayersRule r) {
    const auto p = stage_layers_problem(r);
    return p ? p->key : std::string("ok");
  };
  CHECK(key({80, 4, 1, 19, 19}) == "ok");                  // 42 over 2 stages: 21 each
  CHECK(key({80, 4, 1, 19, 20}) == "first_stage_layers");  // 41 over 2: uneven
  CHECK(key({80, 4, 1, 0, 21}) == "last_stage_layers");    // 59 over 3: uneven
  CHECK(key({80, 4, 1, 78, 0}) == "first_stage_layers");   // 2 layers for 3 stages
  CHECK(key({80, 2, 1, 38, 40}) == "first_stage_layers");  // 78 of 80 on two stages
  CHECK(key({80, 4, 2, 19, 19}) == "first_stage_layers");  // 19 not a multiple of vpp
  CHECK(key({80, 4, 2, 20, 19}) == "last_stage_layers");
  CHECK(key({80, 4, 4, 20, 20}) == "ok");                  // 20 on every stage, 5 per chunk
  CHECK(key({80, 4, 3, 18, 18}) == "vpp");                 // 22 each not a multiple of 3
  CHECK(key({80, 1, 1, 40, 0}) == "first_stage_layers");   // no stages
  CHECK(key({80, 4, 1, 18, 18}) == "ok");
  CHECK(key({80, 4, 4, 16, 16}) == "ok");                  // 16, 24, 24, 16
  CHECK_THROWS_AS(pipeline_stage_layers(StageLayersRule{80, 4, 1, 19, 20}), std::invalid_argument);
}

TEST_CASE("stage layers from a scenario: read, and refused at file, line and key", "[pipeline][layers][scenario]") {
  const JobParallel j = load("{pp: 4, micro_batches: 8, first_stage_layers: 18, last_stage_layers: 18}").workload.training.job;
  CHECK(j.first_stage_layers == 18);
  CHECK(j.last_stage_layers == 18);
  const InputError uneven = error_of("{pp: 4, micro_batches: 8, first_stage_layers: 19, last_stage_layers: 20}");
  CHECK(uneven.file() == "job.yaml");
  CHECK(uneven.line() == 10);
  CHECK(uneven.key_path() == "workload.parallel.first_stage_layers");
  CHECK_THAT(std::string(uneven.what()), Catch::Contains("41 layers"));
  CHECK(error_of("{pp: 4, micro_batches: 8, last_stage_layers: 21}").key_path() == "workload.parallel.last_stage_layers");
  CHECK(error_of("{pp: 4, vpp: 2, micro_batches: 8, first_stage_layers: 19, last_stage_layers: 19}").key_path() ==
        "workload.parallel.first_stage_layers");
  CHECK(error_of("{first_stage_layers: 40}").key_path() == "workload.parallel.first_stage_layers");
  CHECK(error_of("{pp: 4, micro_batches: 8, first_stage_layers: 0}").key_path() == "workload.parallel.first_stage_layers");
  CHECK(error_of("{pp: 4, micro_batches: 8, last_stage_layers: 2000}").key_path() == "workload.parallel.last_stage_layers");
}

TEST_CASE("stage layers: memory per stage follows each stage's layers", "[pipeline][layers][memory]") {
  const HardwareProfile hw = load_profile("h100-64node-ib400-rail", pipeline_fixture::kHardwareDir);
  Workload even = load("{pp: 4, micro_batches: 8}").workload;
  Workload uneven = even;
  uneven.training.job.first_stage_layers = 18;
  uneven.training.job.last_stage_layers = 18;
  const std::vector<StepMemory> a = stage_memories(even, hw), b = stage_memories(uneven, hw);
  REQUIRE(a.size() == 4);
  REQUIRE(b.size() == 4);
  // Stage 0 holds 4 micro-batches of 18 layers instead of 20: activations scale by 18 / 20 exactly.
  CHECK(b[0].bytes.activations_bytes * 20 == a[0].bytes.activations_bytes * 18);
  // The middle stages hold 22 layers' states and activations instead of 20.
  CHECK(b[1].bytes.activations_bytes * 20 == a[1].bytes.activations_bytes * 22);
  CHECK(b[1].bytes.params_bytes > a[1].bytes.params_bytes);
  CHECK(b[3].bytes.params_bytes < a[3].bytes.params_bytes);
  // The job's stages and chunks: what the schedule runs.
  const PipelineParallel pp = pipeline_parallel_of(uneven);
  CHECK(pipeline_stage_layers(uneven, pp) == std::vector<int>{18, 22, 22, 18});
  CHECK(pipeline_chunk_layers(uneven, pp) == std::vector<int>{18, 22, 22, 18});
}

TEST_CASE("stage layers are printed beside pp's other keys: the workload line and the memory's deciding keys",
          "[pipeline][layers][report]") {
  const Workload uneven = load("{pp: 4, micro_batches: 8, first_stage_layers: 18, last_stage_layers: 18}").workload;
  const Workload even = load("{pp: 4, micro_batches: 8}").workload;
  CHECK_THAT(step_memory_keys(uneven), Catch::Contains("workload.parallel.first_stage_layers = 18, "
                                                       "workload.parallel.last_stage_layers = 18"));
  CHECK_THAT(describe_workload(uneven), Catch::Contains("first_stage_layers=18 last_stage_layers=18"));
  // Not given (layers / pp): not printed, so the even jobs' lines stay as they were.
  CHECK_THAT(step_memory_keys(even), !Catch::Contains("stage_layers"));
  CHECK_THAT(describe_workload(even), !Catch::Contains("stage_layers"));
  Workload first_only = even;
  first_only.training.job.first_stage_layers = 17;
  CHECK_THAT(step_memory_keys(first_only), Catch::Contains("workload.parallel.first_stage_layers = 17"));
  CHECK_THAT(step_memory_keys(first_only), !Catch::Contains("last_stage_layers"));
}
