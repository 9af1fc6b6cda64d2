// Deep transformers composed from runs of a few layers (sim/layer_composition.hpp): on every case small
// enough to run whole, the composition equals the full simulation, figure for figure.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "cost_model/profile_loader.hpp"
#include "sim/layer_composition.hpp"
#include "sim/scenario.hpp"
#include "sim/schemes/training_step.hpp"
#include "tests/support/transformer_fixtures.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

const std::string kProfileDir = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";

std::vector<SchemeRequest> every_scheme(const Workload& w) {
  std::vector<SchemeRequest> out;
  for (const SchemeInfo& s : scheme_registry())
    if (!s.applies || s.applies(w)) out.push_back({s.name, nlohmann::json::object()});
  return out;
}

void check_same(const SchemeResult& full, const SchemeResult& composed) {
  INFO(full.scheme);
  CHECK(composed.scheme == full.scheme);
  CHECK(composed.latency_ps == full.latency_ps);
  CHECK(composed.compute_only_ps == full.compute_only_ps);
  CHECK(composed.exposed_comm_ps == full.exposed_comm_ps);
  CHECK(composed.comm_ps == full.comm_ps);
  CHECK(composed.scheme_comm_ps == full.scheme_comm_ps);
  CHECK(composed.bound_ps == full.bound_ps);
  // Engine statistics: composed, not held to the period (layer_composition.hpp).
  CHECK(static_cast<double>(composed.events) == Approx(static_cast<double>(full.events)).epsilon(0.02));
  CHECK(composed.sms_lost_to_comm == full.sms_lost_to_comm);
  CHECK(composed.overlap_efficiency == Approx(full.overlap_efficiency).epsilon(1e-12));
  CHECK(composed.speedup_vs_no_overlap == Approx(full.speedup_vs_no_overlap).epsilon(1e-12));
  CHECK(composed.pct_of_bound == Approx(full.pct_of_bound).epsilon(1e-12));
  REQUIRE(composed.utilization.size() == full.utilization.size());
  for (std::size_t i = 0; i < full.utilization.size(); ++i) {
    CHECK(composed.utilization[i].sm == Approx(full.utilization[i].sm).epsilon(1e-5));
    CHECK(composed.utilization[i].copy_engine == Approx(full.utilization[i].copy_engine).epsilon(1e-5).margin(1e-12));
  }
  CHECK(composed.step.present == full.step.present);
  if (full.step.present) {
    CHECK(composed.step.forward.latency_ps == full.step.forward.latency_ps);
    CHECK(composed.step.backward.latency_ps == full.step.backward.latency_ps);
    CHECK(composed.step.forward.exposed_comm_ps == full.step.forward.exposed_comm_ps);
    CHECK(composed.step.backward.comm_ps == full.step.backward.comm_ps);
    CHECK(composed.step.exposed_tp_ps == full.step.exposed_tp_ps);
    CHECK(composed.step.exposed_dp_ps == full.step.exposed_dp_ps);
    CHECK(composed.step.model_flops == Approx(full.step.model_flops).epsilon(1e-12));
    CHECK(composed.step.mfu == Approx(full.step.mfu).epsilon(1e-12));
    CHECK(composed.step.tokens_per_s == Approx(full.step.tokens_per_s).epsilon(1e-12));
  }
  CHECK(composed.composed_from_layers > 0);
  CHECK(full.composed_from_layers == 0);
}

void check_composes_exactly(const Workload& w, const HardwareProfile& hw) {
  const std::vector<SchemeRequest> schemes = every_scheme(w);
  const std::vector<SchemeResult> full = evaluate_all(schemes, w, hw, Fidelity::curve);
  const std::vector<SchemeResult> composed = evaluate_all_composed(schemes, w, hw, Fidelity::curve);
  REQUIRE(full.size() == composed.size());
  for (std::size_t i = 0; i < full.size(); ++i) check_same(full[i], composed[i]);
}

}  // namespace

TEST_CASE("layer composition equals the full simulation: a training step, every scheme", "[composition]") {
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", kProfileDir);
  const Transformer t = test::custom_transformer(9, 1, 2048, 4096, 14336, 32, 8);
  check_composes_exactly(test::with_pass(test::transformer_on(t, 8), Pass::step, Recompute::selective), hw);
  check_composes_exactly(test::with_pass(test::transformer_on(t, 8), Pass::step, Recompute::full), hw);
  check_composes_exactly(test::transformer_on(t, 8), hw);  // the forward alone
}

TEST_CASE("layer composition equals the full simulation: FSDP across two nodes", "[composition]") {
  // FSDP's prefetch alternates two buffers: the step repeats every second layer.
  const HardwareProfile hw = load_profile("h100-2node-ib400", kProfileDir);
  for (int layers : {14, 15}) {
    Workload w = test::with_pass(
        test::transformer_on(test::custom_transformer(layers, 1, 2048, 4096, 14336, 32, 8), 8), Pass::step,
        Recompute::selective);
    w.training.parallel.dp = 2;
    w.training.parallel.fsdp = Sharding::zero3;
    const std::vector<SchemeRequest> schemes{{"no_overlap", {}}, {"async_tp", {}}};
    const std::vector<SchemeResult> full = evaluate_all(schemes, w, hw, Fidelity::curve);
    INFO(layers << " layers");
    try {
      const std::vector<SchemeResult> composed = evaluate_all_composed(schemes, w, hw, Fidelity::curve);
      REQUIRE(composed.size() == full.size());
      for (std::size_t i = 0; i < full.size(); ++i) check_same(full[i], composed[i]);
    } catch (const std::invalid_argument& e) {
      // An odd depth: the "without TP" re-run behind exposed TP does not settle into a period there.
      CHECK(layers % 2 == 1);
      CHECK_THAT(e.what(), Catch::Matchers::Contains("do not repeat"));
    }
  }
}

TEST_CASE("layer composition equals the full simulation: a MoE model with a dense first layer", "[composition]") {
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", kProfileDir);
  const Transformer t = test::with_moe(test::custom_transformer(11, 1, 1024, 2048, 8192, 16, 8), 8, 16, 2, 1024, 1);
  check_composes_exactly(test::with_pass(test::transformer_on(t, 8), Pass::step), hw);
}

TEST_CASE("DDP and ZeRO-1/2 buckets straddle layers: not composed, with the reason", "[composition]") {
  Workload w = test::with_pass(test::transformer_on(test::custom_transformer(40, 1, 1024, 2048, 8192, 16, 8), 8),
                               Pass::step);
  w.training.parallel.dp = 2;
  for (Sharding s : {Sharding::none, Sharding::zero1, Sharding::zero2}) {
    w.training.parallel.fsdp = s;
    CHECK_FALSE(composition_base_layers(w));
    CHECK_THAT(composition_refusal(w), Catch::Matchers::Contains("straddle layers"));
  }
  w.training.parallel.fsdp = Sharding::none;
  CHECK_THAT(composition_refusal(w), Catch::Matchers::Contains("25 MiB"));
  // The whole model's fp32 gradients per rank are 40 x layer_gradient_elements x 4 bytes: a bucket of
  // exactly that closes at the last gradient, inside the backward; a larger one holds them all and is
  // reduced once after it.
  const double model_mib = 40.0 * static_cast<double>(layer_gradient_elements(w)) * 4 / (1024.0 * 1024.0);
  w.training.parallel.bucket_mb = model_mib;
  CHECK_FALSE(composition_base_layers(w));
  w.training.parallel.bucket_mb = model_mib * 1.001;
  CHECK(composition_base_layers(w) == 4);
  CHECK(composition_refusal(w).empty());
  w.training.parallel.fsdp = Sharding::zero3;
  CHECK(composition_base_layers(w) == 4);
  // Past the tile budget, the refusal says why the step is not composed; one bucket lifts it.
  Workload big = test::with_pass(
      test::transformer_on(test::custom_transformer(80, 16, 8192, 8192, 28672, 64, 8), 8), Pass::step, Recompute::full);
  big.training.parallel.dp = 2;
  const std::optional<WorkOverBudget> over = work_over_budget(big);
  REQUIRE(over);
  CHECK_THAT(over->message, Catch::Matchers::Contains("not composed from fewer layers") &&
                                Catch::Matchers::Contains("buckets of 25 MiB"));
  big.training.parallel.bucket_mb = 1 << 20;
  CHECK_FALSE(work_over_budget(big));
}

TEST_CASE("layer composition equals the full simulation: DDP reducing one bucket after the backward", "[composition]") {
  // Megatron-LM's local DDP: one contiguous gradient buffer all-reduced after the backward. The runs of
  // fewer layers reduce the whole model's gradients (DataParallel::gradient_layers), so the step repeats
  // layer by layer; with the step's own kernels (embedding, loss, optimizer) and without.
  const HardwareProfile hw = load_profile("h100-2node-ib400", kProfileDir);
  for (const std::int64_t vocab : {std::int64_t{0}, std::int64_t{32000}}) {
    Transformer t = test::custom_transformer(11, 1, 2048, 4096, 14336, 32, 8);
    t.vocab = vocab;
    Workload w = test::with_pass(test::transformer_on(t, 8), Pass::step, Recompute::full);
    w.training.parallel.dp = 2;
    w.training.parallel.bucket_mb = 1 << 20;
    w.training.parallel.grad_dtype = DType::fp16;
    REQUIRE(composition_base_layers(w) == 4);
    INFO("vocab " << vocab);
    const std::vector<SchemeRequest> schemes{{"no_overlap", {}}, {"async_tp", {}}};
    const std::vector<SchemeResult> full = evaluate_all(schemes, w, hw, Fidelity::curve);
    const std::vector<SchemeResult> composed = evaluate_all_composed(schemes, w, hw, Fidelity::curve);
    REQUIRE(composed.size() == full.size());
    for (std::size_t i = 0; i < full.size(); ++i) check_same(full[i], composed[i]);
    // The all-reduce is the whole model's: exposed DP is the same at every depth composition ran.
    CHECK(full[0].step.exposed_dp_ps > 0);
  }
}

TEST_CASE("Llama 3 70B at its real size: 80 layers of 131,072 tokens run, composed", "[composition]") {
  // The published run the whole simulation refused: TP 8, 16 x 8192 tokens a micro-batch.
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", kProfileDir);
  const Workload w = test::with_pass(
      test::transformer_on(test::custom_transformer(80, 16, 8192, 8192, 28672, 64, 8), 8), Pass::step,
      Recompute::full);
  CHECK(gemm_tiles_per_rank(w) > kMaxGemmTilesPerRank);
  CHECK_FALSE(work_over_budget(w));  // its composition's runs are inside the budget
  const std::vector<SchemeResult> r = evaluate_all({{"no_overlap", {}}, {"async_tp", {}}}, w, hw, Fidelity::curve);
  REQUIRE(r.size() == 2);
  for (const SchemeResult& s : r) {
    CHECK(s.composed_from_layers == 4);
    CHECK(s.latency_ps > 0);
    CHECK(s.step.mfu > 0);
    CHECK(s.step.mfu < 1);
  }
  CHECK(r[1].latency_ps < r[0].latency_ps);
}
