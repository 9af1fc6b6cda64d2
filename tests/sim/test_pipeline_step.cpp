// A transformer step under pipeline parallelism (sim/pipeline_step.hpp): the stage passes are the
// engine's runs of layers / (pp x vpp), the transfers the cost model's, and the composition the
// schedule's closed form.
#include <catch2/catch.hpp>

#include <string>

#include "cost_model/profile_loader.hpp"
#include "sim/pipeline_step.hpp"
#include "tests/support/transformer_fixtures.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

const std::string kProfiles = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";

// A small Llama-like model: 8 layers, TP 8, one 2048-token micro-batch.
Workload small_transformer() {
  return test::transformer_on(test::custom_transformer(8, 1, 2048, 4096, 14336, 32, 8), 8);
}

}  // namespace

TEST_CASE("pipeline step: stage passes from the engine, composed as the 1F1B closed form", "[pipeline]") {
  const HardwareProfile hw = load_profile("h100-2node-ib400", kProfiles);
  const Workload w = small_transformer();
  const PipelineParallel pp{2, 1, 8, PipelineSchedule::one_f_one_b};
  const std::vector<SchemeRequest> schemes{{"no_overlap", nlohmann::json::object()}};
  const std::vector<PipelineStepResult> results = evaluate_pipeline(schemes, w, hw, Fidelity::curve, pp);
  REQUIRE(results.size() == 1);
  const PipelineStepResult& r = results.front();

  // The chunk's passes are the engine's own runs of 8 / 2 = 4 layers.
  Workload chunk = w;
  std::get<Transformer>(chunk.shape).layers = 4;
  const Ps f = evaluate_all(schemes, test::with_pass(chunk, Pass::forward), hw, Fidelity::curve).front().latency_ps;
  const Ps b = evaluate_all(schemes, test::with_pass(chunk, Pass::backward), hw, Fidelity::curve).front().latency_ps;
  CHECK(r.chunk_forward_ps == f);
  CHECK(r.chunk_backward_ps == b);

  // TP 8 fills a node of 8: the stage boundary crosses the NIC. One TP rank's shard: 2048 / 8 tokens x
  // 4096 x 2 bytes, at 50 GB/s x 0.94 after NCCL's send/recv latency and the wire's.
  CHECK(r.p2p_bytes == 2048 / 8 * 4096 * 2);
  const double expected_p2p = (8.4 + 3.0) * 1e6 + static_cast<double>(r.p2p_bytes) / (50 * 0.94) * 1e3;
  CHECK(static_cast<double>(r.p2p_ps) == Approx(expected_p2p).margin(1));

  // One micro-batch crosses twice (pp - 1 = 1 transfer each way); with m = 8 the step is bounded by
  // the transfer-free closed form and that plus one transfer per pass.
  const int m = pp.micro_batches;
  CHECK(r.pipeline_ps >= (m + 1) * (f + b) + 2 * r.p2p_ps);
  CHECK(r.pipeline_ps <= (m + 1) * (f + b) + 2 * m * r.p2p_ps);
  CHECK(r.bubble_fraction > 0);
  CHECK(r.peak_micro_batches == std::vector<int>{2, 1});
  CHECK(r.step_ps == r.pipeline_ps);  // dp 1: no gradient reduction
  CHECK(r.tokens_per_s == Approx(2048.0 * m / (static_cast<double>(r.step_ps) / 1e12)));
}

TEST_CASE("pipeline step: more micro-batches shrink the bubble's share, interleaving shrinks the bubble",
          "[pipeline]") {
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", kProfiles);
  Workload w = test::transformer_on(test::custom_transformer(8, 1, 1024, 2048, 8192, 16, 8), 2);
  const std::vector<SchemeRequest> schemes{{"no_overlap", nlohmann::json::object()}};
  const auto run = [&](PipelineParallel pp) { return evaluate_pipeline(schemes, w, hw, Fidelity::curve, pp).front(); };
  const PipelineStepResult few = run({4, 1, 4, PipelineSchedule::one_f_one_b});
  const PipelineStepResult many = run({4, 1, 16, PipelineSchedule::one_f_one_b});
  CHECK(many.bubble_fraction < few.bubble_fraction);
  const PipelineStepResult interleaved = run({4, 2, 16, PipelineSchedule::interleaved});
  CHECK(interleaved.bubble_ps < many.bubble_ps);
  const PipelineStepResult zb = run({4, 1, 16, PipelineSchedule::zero_bubble_h1});
  CHECK(zb.bubble_ps < many.bubble_ps);
}

TEST_CASE("pipeline configurations that cannot run are refused, naming the rule", "[pipeline]") {
  using Catch::Matchers::Contains;
  const Workload w = small_transformer();
  CHECK_THROWS_WITH(check_pipeline_parallel(w, {3, 1, 6, PipelineSchedule::one_f_one_b}), Contains("does not divide"));
  CHECK_THROWS_WITH(check_pipeline_parallel(w, {2, 2, 3, PipelineSchedule::interleaved}), Contains("multiple of pp"));
  CHECK_THROWS_WITH(check_pipeline_parallel(w, {2, 2, 4, PipelineSchedule::one_f_one_b}), Contains("interleaved"));
  Workload fsdp = w;
  fsdp.training.parallel.dp = 2;
  fsdp.training.parallel.fsdp = Sharding::zero3;
  CHECK_THROWS_WITH(check_pipeline_parallel(fsdp, {2, 1, 4, PipelineSchedule::one_f_one_b}), Contains("ZeRO-3"));
  const Workload mlp{WorkloadKind::mlp_tpsp, 8, MlpTpSp{}};
  CHECK_THROWS_WITH(check_pipeline_parallel(mlp, {2, 1, 4, PipelineSchedule::one_f_one_b}), Contains("transformer"));
}
