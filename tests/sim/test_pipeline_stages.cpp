// Uneven pipeline stages (sim/pipeline_step.hpp pipeline_stage_kernels): the step's memory-bound kernels
// between every layer's blocks, the embedding on the first virtual stage, the output layer and loss on
// the last, the optimizer once per step per stage; what the engine simulates once and what it copies.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <string>

#include "sim/pipeline_step.hpp"
#include "sim/scenario.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

const std::string kHardware = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";

// A small dense step with a 32,000-token vocabulary on one 8-GPU node; `parallel` at the end.
Scenario small_job(const std::string& parallel, const std::string& extra = "") {
  const std::string text =
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
      "  vocab: 32000\n"
      "  pass: step\n" +
      extra + "  parallel: " + parallel + "\n";
  ScenarioOptions o;
  o.hardware_dir = kHardware;
  return load_scenario_text(text, "job.yaml", o);
}

const std::vector<SchemeRequest> kNoOverlap{{"no_overlap", nlohmann::json::object()}};

PipelineStepResult job(const Scenario& sc) {
  return evaluate_pipeline(kNoOverlap, sc.workload, sc.hardware, sc.fidelity, pipeline_parallel_of(sc.workload)).front();
}

}  // namespace

TEST_CASE("uneven stages: the embedding makes the first stage heavier, the output layer and loss the last",
          "[pipeline][stages]") {
  const Scenario sc = small_job("{pp: 4, micro_batches: 8}");
  const PipelineStepResult r = job(sc);
  REQUIRE(r.stage_kernels.size() == 4);
  const StageKernelTimes& first = r.stage_kernels[0];
  const StageKernelTimes& middle = r.stage_kernels[1];
  const StageKernelTimes& last = r.stage_kernels[3];
  // Every stage runs its layers' norms, rotary and residual adds.
  CHECK(middle.forward_ps > 0);
  CHECK(middle.backward_ps > 0);
  // Identical middle stages.
  CHECK(r.stage_kernels[2].forward_ps == middle.forward_ps);
  CHECK(r.stage_kernels[2].backward_ps == middle.backward_ps);
  CHECK(r.stage_kernels[2].once_per_step_ps == middle.once_per_step_ps);
  // The embedding's lookup and reduce-scatter, its backward's all-gather and scatter-add.
  CHECK(first.forward_ps > middle.forward_ps);
  CHECK(first.backward_ps > middle.backward_ps);
  // The output layer's GEMM (1024 tokens x 16,000 columns x 2048 per rank) dwarfs the embedding.
  CHECK(last.forward_ps > first.forward_ps);
  CHECK(last.backward_ps > first.backward_ps);
  // The optimizer: the first and last stages also update the embedding's or output layer's shard.
  CHECK(first.once_per_step_ps > middle.once_per_step_ps);
  CHECK(last.once_per_step_ps > middle.once_per_step_ps);
  CHECK(r.optimizer_ps == std::max(first.once_per_step_ps, last.once_per_step_ps));
  // The busiest stage is the last: it works m (F_L + B_L), the others m (F + B) or the first's.
  CHECK(r.timeline.busy_ps[3] > r.timeline.busy_ps[0]);
  CHECK(r.timeline.busy_ps[0] > r.timeline.busy_ps[1]);
  CHECK(r.step_ps == r.pipeline_ps + r.exposed_dp_ps + r.optimizer_ps);
}

TEST_CASE("uneven stages under 1F1B: with free transfers and the last stage the slowest, the step is the "
          "others' forward and backward once plus m of the last stage's",
          "[pipeline][stages][closed_form]") {
  // Micro-batch 0's forward reaches the last stage after sum_{s < pp-1} F_s; from then on the last
  // stage, the slowest, never waits (every other stage is one forward ahead of it in 1F1B's steady
  // state), runs m (F_L + B_L), and the last backward returns through sum_{s < pp-1} B_s. With even
  // stages this is (m + pp - 1)(F + B) (Narayanan et al. SC'21 Sec. 2.2.1); exact in integer ps.
  for (const int m : {4, 8, 12}) {
    const Scenario sc = small_job(fmt::format("{{pp: 4, micro_batches: {}}}", m));
    const PipelineStepResult r = job(sc);
    INFO("m " << m);
    Ps others = 0;
    for (int s = 0; s < 3; ++s)
      others += r.chunk_forward_ps + r.stage_kernels[static_cast<std::size_t>(s)].forward_ps + r.chunk_backward_ps +
                r.stage_kernels[static_cast<std::size_t>(s)].backward_ps;
    const Ps last = r.chunk_forward_ps + r.stage_kernels[3].forward_ps + r.chunk_backward_ps + r.stage_kernels[3].backward_ps;
    CHECK(r.pipeline_ps - r.exposed_p2p_ps == others + m * last);
    CHECK(r.exposed_bubble_ps == others);
  }
}

TEST_CASE("identical middle stages are simulated once: the composition equals simulating every stage",
          "[pipeline][stages]") {
  for (const std::string& parallel : {std::string("{pp: 4, micro_batches: 8}"),
                                      std::string("{pp: 4, vpp: 2, micro_batches: 8}")}) {
    for (const std::string& extra : {std::string(), std::string("  recompute: full\n")}) {
      const Scenario sc = small_job(parallel, extra);
      const PipelineParallel pp = pipeline_parallel_of(sc.workload);
      const auto once = pipeline_stage_kernels(sc.workload, sc.hardware, sc.fidelity, pp, true);
      const auto every = pipeline_stage_kernels(sc.workload, sc.hardware, sc.fidelity, pp, false);
      INFO(parallel << extra);
      REQUIRE(once.size() == every.size());
      for (std::size_t vs = 0; vs < once.size(); ++vs) {
        CHECK(once[vs].forward_ps == every[vs].forward_ps);
        CHECK(once[vs].backward_ps == every[vs].backward_ps);
        CHECK(once[vs].once_per_step_ps == every[vs].once_per_step_ps);
      }
    }
  }
}

TEST_CASE("one stage, one micro-batch: the composed step is the engine's whole step of the model",
          "[pipeline][stages]") {
  // With pp = 1 the stage is both first and last: forward = embedding + layers + loss, backward the
  // reverse, then the optimizer, which is the step's own graph (training_step.cpp) cut at the block
  // boundaries. The engine runs the chains apart, so each starts with an idle launch queue: they can
  // only be a little slower than the joint graph, whose host runs ahead during the GEMMs.
  const Scenario sc = small_job("{micro_batches: 1}");
  const PipelineStepResult r = job(sc);
  const SchemeResult whole = evaluate_all(kNoOverlap, sc.workload, sc.hardware, sc.fidelity).front();
  REQUIRE(!whole.failed());
  CHECK(static_cast<double>(r.step_ps) == Approx(static_cast<double>(whole.latency_ps)).epsilon(0.01));
  CHECK(r.step_ps >= whole.latency_ps);
}
