// Unfused core attention (workload.attention: unfused; sim/schemes/core_attention.hpp): the kernels a
// step runs per layer, priced from their shapes, and the activations they keep (Korthikanti et al.,
// "Reducing Activation Recomputation in Large Transformer Models", MLSys'23, Sec. 4 and Table 2) against
// FlashAttention's. Every expected figure is written from the shapes and the paper's formulas, not read
// back from the code under test.
#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cost_model/profile_loader.hpp"
#include "sim/metrics.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/step_memory.hpp"
#include "sim/workload_shapes.hpp"
#include "tests/schemes/ideal_profile.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

const std::string kHardwareDir = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";

// A small GPT-like layer at TP 2: 4 heads of 64, sequences of 256, 2 of them. Per rank: 2 heads, so
// batch x heads / tp = 4 score matrices of 256 x 256.
Workload small_step(AttentionImplementation a, Recompute recompute, double dropout) {
  Workload w;
  w.kind = WorkloadKind::transformer;
  w.tp = 2;
  Transformer t{.model = "custom", .layers = 1, .batch = 2, .seq = 256, .d_model = 256, .d_ffn = 512, .heads = 4,
                .kv_heads = 4, .dtype = DType::bf16};
  t.step_kernels = true;
  t.dropout = dropout;
  t.attention = a;
  w.shape = t;
  w.training.pass = Pass::step;
  w.training.recompute = recompute;
  return w;
}

std::vector<const Op*> ops_ending(const TaskGraph& g, int rank, const std::string& suffix) {
  std::vector<const Op*> out;
  for (const Op& op : g.ops())
    if (g.streams()[static_cast<std::size_t>(op.stream)].rank == rank && op.name.size() >= suffix.size() &&
        op.name.compare(op.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(&op);
  return out;
}

BuiltScheme build(const Workload& w, const HardwareProfile& hw) {
  const SchemeInfo* s = find_scheme("no_overlap");
  REQUIRE(s != nullptr);
  static const nlohmann::json params = nlohmann::json::object();
  return s->build(BuildContext{w, hw, params, Fidelity::curve});
}

constexpr std::int64_t kMatrices = 4;           // 2 sequences x 2 heads per rank
constexpr Bytes kMatrixBytes = kMatrices * 256 * 256 * 2;  // every score matrix in bf16
constexpr Bytes kMaskBytes = kMatrices * 256 * 256;        // one byte per score

}  // namespace

TEST_CASE("unfused attention runs Megatron-LM's kernels from their shapes", "[unfused_attention]") {
  const HardwareProfile hw = overlap::sim::test::ideal_profile(2);
  const BuiltScheme b = build(small_step(AttentionImplementation::unfused, Recompute::selective, 0.1), hw);
  const TaskGraph& g = b.graph;
  // Forward, then the selective recomputation's forward again before the backward: two of each.
  const auto scores = ops_ending(g, 0, "core.scores");
  REQUIRE(scores.size() == 2);
  // One launch per batched GEMM: 4 problems of 256 x 256 (over K = 64) in 128 x 128 tiles, 4 tiles each
  // (the grid of 16 is below the 132 SMs, so the model keeps 128 x 128 tiles).
  CHECK(scores[0]->kind == OpKind::tiled);
  CHECK(scores[0]->ctas == kMatrices * 4);
  // P V: 256 x 64 outputs per problem, 2 tiles of 128 x 128 (64 columns padded).
  const auto context = ops_ending(g, 0, "core.context");
  REQUIRE(context.size() == 2);
  CHECK(context[0]->ctas == kMatrices * 2);
  // The fused scale-mask-softmax reads the scores and writes the probabilities; dropout reads them and
  // writes the dropped probabilities and a byte-per-score mask.
  const auto softmax = ops_ending(g, 0, "core.softmax");
  REQUIRE(softmax.size() == 3);  // forward, recomputation, backward
  CHECK(softmax[0]->kind == OpKind::memory);
  CHECK(softmax[0]->bytes == 2 * kMatrixBytes);
  CHECK(softmax[2]->bytes == 3 * kMatrixBytes);  // backward: probabilities and dP read, dS written
  const auto dropout = ops_ending(g, 0, "core.dropout");
  REQUIRE(dropout.size() == 3);
  CHECK(dropout[0]->bytes == 2 * kMatrixBytes + kMaskBytes);
  CHECK(dropout[2]->bytes == 2 * kMatrixBytes + kMaskBytes);  // dP and the mask read, dP written
  // The backward: dP = dO V^T over the whole matrix, then dV, dQ, dK each 256 x 64 over K = 256.
  CHECK(ops_ending(g, 0, "core.dprobs").at(0)->ctas == kMatrices * 4);
  for (const char* grad : {"core.dv", "core.dq", "core.dk"}) {
    REQUIRE(ops_ending(g, 0, grad).size() == 1);
    CHECK(ops_ending(g, 0, grad)[0]->ctas == kMatrices * 2);
  }
  // No flash kernel is left.
  CHECK(ops_ending(g, 0, "attn.core").empty());
}

TEST_CASE("unfused attention without dropout has no dropout kernels", "[unfused_attention]") {
  const BuiltScheme b = build(small_step(AttentionImplementation::unfused, Recompute::none, 0), overlap::sim::test::ideal_profile(2));
  CHECK(ops_ending(b.graph, 0, "core.dropout").empty());
  CHECK(ops_ending(b.graph, 0, "core.softmax").size() == 2);
}

TEST_CASE("flash attention stays one tiled kernel per pass", "[unfused_attention]") {
  const BuiltScheme b = build(small_step(AttentionImplementation::flash, Recompute::none, 0.1), overlap::sim::test::ideal_profile(2));
  // Forward (named by the sliced emitter without the layer prefix) and backward.
  const auto core = ops_ending(b.graph, 0, "attn.core");
  REQUIRE(core.size() == 2);
  // Flash: batch x heads / tp x ceil(seq / 128) query blocks.
  CHECK(core[0]->ctas == 2 * 2 * 2);
  CHECK(ops_ending(b.graph, 0, "core.scores").empty());
}

TEST_CASE("unfused attention is slower than flash on an H100 step and counts the same model FLOPs", "[unfused_attention]") {
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", kHardwareDir);
  const SchemeInfo* s = find_scheme("no_overlap");
  REQUIRE(s != nullptr);
  static const nlohmann::json params = nlohmann::json::object();
  const Workload flash = small_step(AttentionImplementation::flash, Recompute::none, 0.1);
  const Workload unfused = small_step(AttentionImplementation::unfused, Recompute::none, 0.1);
  const SchemeResult f = evaluate(*s, BuildContext{flash, hw, params, Fidelity::curve});
  const SchemeResult u = evaluate(*s, BuildContext{unfused, hw, params, Fidelity::curve});
  // Twice the attention FLOPs (no causal skipping) and every score through HBM four times and more.
  CHECK(u.latency_ps > f.latency_ps);
  // Model FLOPs (PaLM App. B) are the model's, whatever the kernels compute.
  REQUIRE(u.step.present);
  CHECK(u.step.model_flops == f.step.model_flops);
}

// Korthikanti et al. Table 2, "tensor + sequence parallel": s b h (34 / t + 5 a s / (h t)) bytes per
// layer, and with selective recomputation s b h 34 / t. The workload's gated MLP of width 8h/3 keeps
// what the paper's 4h GeLU MLP keeps (SwiGLU's two projections 2 x 2 x 8h/3 and the down projection's
// input 2 x 8h/3 = 16 h, as the GeLU's input 8 h and the second linear's input 8 h), so the formula
// holds term for term. GPT-3 175B's layer (Table 3: a 96, h 12288, s 2048) at t = 8, b = 1.
TEST_CASE("the step's activations follow Korthikanti et al.'s per-layer formula for both implementations",
          "[unfused_attention][memory]") {
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", kHardwareDir);
  constexpr std::int64_t s = 2048, b = 1, h = 12288, a = 96, t = 8;
  auto gpt3 = [&](AttentionImplementation impl, Recompute recompute) {
    Workload w;
    w.kind = WorkloadKind::transformer;
    w.tp = t;
    Transformer tr{.model = "custom", .layers = 2, .batch = b, .seq = s, .d_model = h, .d_ffn = 8 * h / 3, .heads = a,
                   .kv_heads = a, .dtype = DType::bf16};
    tr.step_kernels = true;
    tr.dropout = 0.1;
    tr.attention = impl;
    w.shape = tr;
    w.training.pass = Pass::step;
    w.training.recompute = recompute;
    return w;
  };
  const Bytes linear_terms = s * b * h * 34 / t;    // 106,954,752
  const Bytes score_terms = 5 * a * s * s * b / t;  // 251,658,240
  const auto activations = [&](const Workload& w) { return step_memory(w, hw)->bytes.activations_bytes; };
  // Unfused: every term of the formula, two layers.
  CHECK(activations(gpt3(AttentionImplementation::unfused, Recompute::none)) == 2 * (linear_terms + score_terms));
  CHECK(activations(gpt3(AttentionImplementation::unfused, Recompute::selective)) == 2 * linear_terms);
  // FlashAttention keeps the 34 s b h / t and, instead of 5 a s^2 b / t, an fp32 log-sum-exp per head
  // and query (Dao, FlashAttention-2, Sec. 3.1.2).
  CHECK(activations(gpt3(AttentionImplementation::flash, Recompute::none)) == 2 * (linear_terms + 4 * (a / t) * s * b));
}
