// The training step's memory per GPU (cost_model/memory_model.hpp) against the closed forms of its
// sources: Korthikanti et al. (MLSys'23) Table 2 and Sec. 5, ZeRO (SC'20) Sec. 5 and Figure 1, and
// Llama 3 70B's published parameter count.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "cost_model/memory_model.hpp"

using namespace overlap;
using namespace overlap::memory;

namespace {

// Korthikanti et al. Table 3's models at their sequence length 2048, micro-batch 1: the layer as the
// paper counts it (GPT: d_ffn = 4 h, no gate, dropout, unfused attention, 16-bit activations).
LayerShape gpt_layer(std::int64_t h, std::int64_t a) {
  LayerShape s;
  s.seq = 2048;
  s.micro_batch = 1;
  s.d_model = h;
  s.heads = a;
  s.d_ffn = 4 * h;
  return s;
}
const LayerShape kGpt3_175b = gpt_layer(12288, 96);
const LayerShape kMtNlg_530b = gpt_layer(20480, 128);
const LayerShape kGpt_1t = gpt_layer(25600, 160);

// Llama 3 70B (Meta, "The Llama 3 Herd of Models", Table 3; config.json): GQA with 8 KV heads, SwiGLU
// 28672 wide, no dropout, FlashAttention.
LayerShape llama3_70b_layer(std::int64_t seq) {
  LayerShape s;
  s.seq = seq;
  s.micro_batch = 1;
  s.d_model = 8192;
  s.heads = 64;
  s.kv_heads = 8;
  s.d_ffn = 28672;
  s.gated = true;
  s.dropout = false;
  s.attention = CoreAttention::flash;
  return s;
}

Bytes per_layer(const LayerShape& s, int t, bool sp, RecomputePolicy r) {
  return stored_activation_bytes_per_layer(s, LayerParallel{t, sp}, r);
}

}  // namespace

TEST_CASE("activations per layer: Korthikanti et al. Table 2, every row, exactly", "[memory_model]") {
  // Each row of Table 2 is a whole number of bytes for these shapes: s b h is divisible by t = 8, and
  // 5 a s / h is an integer (80 for GPT-3 175B, 64 for the 530B and 1T models), so the model must give
  // the table's expression to the byte.
  for (const LayerShape& s : {kGpt3_175b, kMtNlg_530b, kGpt_1t}) {
    const std::int64_t sbh = s.seq * s.micro_batch * s.d_model;
    const std::int64_t t = 8;
    REQUIRE((5 * s.heads * s.seq) % s.d_model == 0);
    const std::int64_t as_h = 5 * s.heads * s.seq / s.d_model;  // 5 a s / h
    CAPTURE(s.d_model, as_h);
    // no parallelism: s b h (34 + 5 a s / h)  (eq. 1)
    CHECK(per_layer(s, 1, false, RecomputePolicy::none) == sbh * (34 + as_h));
    // tensor parallel: s b h (10 + 24 / t + 5 a s / (h t))  (eq. 2)
    CHECK(per_layer(s, 8, false, RecomputePolicy::none) == sbh * 10 + sbh * 24 / t + sbh * as_h / t);
    // tensor + sequence parallel: s b h (34 / t + 5 a s / (h t))  (eq. 3)
    CHECK(per_layer(s, 8, true, RecomputePolicy::none) == sbh * 34 / t + sbh * as_h / t);
    // tensor parallel + selective recompute: s b h (10 + 24 / t)
    CHECK(per_layer(s, 8, false, RecomputePolicy::selective) == sbh * 10 + sbh * 24 / t);
    // tensor + sequence parallel + selective recompute: s b h (34 / t)
    CHECK(per_layer(s, 8, true, RecomputePolicy::selective) == sbh * 34 / t);
    // full recompute: s b h (2); with sequence parallelism the stored input is the rank's shard.
    CHECK(per_layer(s, 8, false, RecomputePolicy::full) == 2 * sbh);
    CHECK(per_layer(s, 8, true, RecomputePolicy::full) == 2 * sbh / t);
    // The paper's split: the 10 s b h that tensor parallelism leaves whole on every rank.
    const LayerActivationBytes tp = layer_activations(s, LayerParallel{8, false});
    CHECK(tp.replicated_bytes == 10 * sbh);
    CHECK(tp.sharded_bytes == 24 * sbh / t);
    CHECK(tp.core_attention_bytes == 5 * s.heads * s.seq * s.seq * s.micro_batch / t);
  }
}

TEST_CASE("selective recomputation saves what Korthikanti et al. Sec. 5 report", "[memory_model]") {
  // Sec. 5: "5 a s / h" is 80 for GPT-3 and 64 for MT-NLG, so keeping only the 34 saves 70 % and 65 % of
  // the activation memory.
  auto saved_pct = [](const LayerShape& s) {
    const double none = static_cast<double>(per_layer(s, 8, true, RecomputePolicy::none));
    const double sel = static_cast<double>(per_layer(s, 8, true, RecomputePolicy::selective));
    return std::lround(100.0 * (1.0 - sel / none));
  };
  CHECK(saved_pct(kGpt3_175b) == 70);
  CHECK(saved_pct(kMtNlg_530b) == 65);
  // Abstract and Sec. 6.1: sequence parallelism with selective recomputation needs about 5x less
  // activation memory than tensor parallelism alone (Table 2's row 2 over row 5).
  for (const LayerShape& s : {kGpt3_175b, kMtNlg_530b, kGpt_1t}) {
    const double ratio = static_cast<double>(per_layer(s, 8, false, RecomputePolicy::none)) /
                         static_cast<double>(per_layer(s, 8, true, RecomputePolicy::selective));
    CHECK(ratio > 4.9);
    CHECK(ratio < 5.5);
  }
}

TEST_CASE("activations per layer: GQA and SwiGLU from the same per-tensor accounting", "[memory_model]") {
  // Llama 3 70B, one 8192-token sequence: per token, 4 h (norm inputs) + 2 h (QKV input) + 2 h (Q) +
  // 2 x 2 x 1024 (K and V: 8 heads of 128) + 2 h (output projection's input) + 2 h (MLP input) +
  // 2 x 2 x 28672 (gate and up, SwiGLU's input) + 2 x 28672 (down projection's input); no dropout masks.
  // FlashAttention keeps an fp32 log-sum-exp per head and token instead of the a s^2 terms.
  const LayerShape s = llama3_70b_layer(8192);
  const std::int64_t h = 8192, f = 28672, kv = 1024, T = 8192;
  const std::int64_t per_token = 4 * h + 2 * h + 2 * h + 2 * 2 * kv + 2 * h + 2 * h + 2 * 2 * f + 2 * f;
  CHECK(per_layer(s, 1, false, RecomputePolicy::selective) == T * per_token);
  CHECK(per_layer(s, 1, false, RecomputePolicy::none) == T * per_token + 4 * 64 * T);
  // TP 8 with SP: every term divides by 8 (8 KV heads over 8 ranks: one each).
  CHECK(per_layer(s, 8, true, RecomputePolicy::none) * 8 == per_layer(s, 1, false, RecomputePolicy::none));
  // With 16 ranks the 8 KV heads cannot be split: each rank keeps one head's K and V (as
  // sim/workload_shapes.cpp's attention_shapes replicates them).
  const LayerActivationBytes t16 = layer_activations(s, LayerParallel{16, true});
  CHECK(t16.sharded_bytes == T * (2 * 4 * 128 + 2 * 2 * 128 + 2 * 4 * 128 + 2 * 2 * (f / 16) + 2 * (f / 16)));
  // An FP8 run keeps its linears' inputs in one byte: the QKV, output, gate/up and down inputs.
  LayerShape fp8 = s;
  fp8.linear_input_bytes = 1;
  CHECK(per_layer(s, 1, false, RecomputePolicy::selective) - per_layer(fp8, 1, false, RecomputePolicy::selective) ==
        T * (h + 64 * 128 + h + f));
}

TEST_CASE("sequence parallelism divides every stored activation by t", "[memory_model]") {
  for (const LayerShape& base : {kGpt3_175b, llama3_70b_layer(4096)})
    for (int t : {2, 4, 8})
      for (RecomputePolicy r : {RecomputePolicy::none, RecomputePolicy::selective, RecomputePolicy::full}) {
        CAPTURE(base.d_model, t, static_cast<int>(r));
        CHECK(per_layer(base, t, true, r) * t == per_layer(base, 1, false, r));
        // Without SP tensor parallelism leaves the replicated part whole: never less than with SP.
        CHECK(per_layer(base, t, false, r) >= per_layer(base, t, true, r));
      }
}

TEST_CASE("more recomputation never stores more activations, nor peaks higher", "[memory_model]") {
  std::vector<LayerShape> shapes = {kGpt3_175b, kMtNlg_530b, llama3_70b_layer(8192), llama3_70b_layer(2048)};
  LayerShape no_dropout_unfused = kGpt3_175b;
  no_dropout_unfused.dropout = false;
  shapes.push_back(no_dropout_unfused);
  for (const LayerShape& s : shapes)
    for (int t : {1, 8})
      for (bool sp : {false, true}) {
        const Bytes none = per_layer(s, t, sp, RecomputePolicy::none);
        const Bytes sel = per_layer(s, t, sp, RecomputePolicy::selective);
        const Bytes full = per_layer(s, t, sp, RecomputePolicy::full);
        CHECK(full < sel);
        CHECK(sel < none);
        // The peak adds the working set the backward recomputes; with two or more layers it is still ordered.
        StepMemoryInput in;
        in.layer = s;
        in.parallel = LayerParallel{t, sp};
        in.layers = 4;
        auto peak = [&](RecomputePolicy r) {
          in.recompute = r;
          return step_memory(in).peak_bytes;
        };
        CHECK(peak(RecomputePolicy::full) <= peak(RecomputePolicy::selective));
        CHECK(peak(RecomputePolicy::selective) <= peak(RecomputePolicy::none));
      }
}

TEST_CASE("model states by ZeRO stage: ZeRO's Figure 1 example", "[memory_model]") {
  // Rajbhandari et al. Figure 1: 7.5 B parameters, N_d = 64, K = 12, fp16 parameters and gradients:
  // 120 GB for DDP, 31.4 GB with P_os, 16.6 GB with P_os+g, 1.9 GB with P_os+g+p. 7.5e9 / 64 is not an
  // integer; the shard is ceil(7.5e9 / 64) = 117,187,500 parameters (exact: 7.5e9 = 64 x 117,187,500).
  const std::int64_t psi = 7'500'000'000;
  const StateBytesPerParam fp16{2, 2, 12};
  REQUIRE(psi % 64 == 0);
  const std::int64_t shard = psi / 64;
  CHECK(model_state_bytes(psi, 64, ZeroStage::none, fp16).total_bytes() == 16 * psi);
  CHECK(model_state_bytes(psi, 64, ZeroStage::optimizer, fp16).total_bytes() == 4 * psi + 12 * shard);
  CHECK(model_state_bytes(psi, 64, ZeroStage::gradients, fp16).total_bytes() == 2 * psi + 14 * shard);
  CHECK(model_state_bytes(psi, 64, ZeroStage::parameters, fp16).total_bytes() == 16 * shard);
  // The figure's rounded gigabytes.
  auto gb = [&](ZeroStage z) { return std::round(10.0 * static_cast<double>(model_state_bytes(psi, 64, z, fp16).total_bytes()) / 1e9) / 10.0; };
  CHECK(gb(ZeroStage::none) == 120.0);
  CHECK(gb(ZeroStage::optimizer) == 31.4);
  CHECK(gb(ZeroStage::gradients) == 16.6);
  CHECK(gb(ZeroStage::parameters) == 1.9);
}

TEST_CASE("model states by ZeRO stage: 70 B parameters, Adam, bf16, stage 3 over 32 ranks", "[memory_model]") {
  // bf16 weights (2), fp32 gradients (4), fp32 master weights and Adam's two moments (12): 18 bytes per
  // parameter, every one sharded 32 ways: 70e9 x 18 / 32 = 39.375e9 bytes (70e9 / 32 is an integer).
  const std::int64_t psi = 70'000'000'000;
  const ModelStateBytes m = model_state_bytes(psi, 32, ZeroStage::parameters, StateBytesPerParam{});
  CHECK(m.params_bytes == 2 * psi / 32);
  CHECK(m.grads_bytes == 4 * psi / 32);
  CHECK(m.optimizer_bytes == 12 * psi / 32);
  CHECK(m.total_bytes() == 39'375'000'000);
  // Each stage shards one more state, so the total never grows with the stage, and dp = 1 shards nothing.
  Bytes previous = model_state_bytes(psi, 32, ZeroStage::none, StateBytesPerParam{}).total_bytes();
  for (ZeroStage z : {ZeroStage::optimizer, ZeroStage::gradients, ZeroStage::parameters}) {
    const Bytes now = model_state_bytes(psi, 32, z, StateBytesPerParam{}).total_bytes();
    CHECK(now < previous);
    previous = now;
    CHECK(model_state_bytes(psi, 1, z, StateBytesPerParam{}).total_bytes() == 18 * psi);
  }
}

TEST_CASE("parameters: Llama 3 70B's published count", "[memory_model]") {
  // 80 layers of 855,654,400 parameters plus untied embedding and output matrices (128256 x 8192) and
  // the final norm: 70,553,706,496, the count of Meta's released checkpoint (Hugging Face model card).
  const LayerShape s = llama3_70b_layer(8192);
  const std::int64_t total = 80 * layer_params_per_rank(s, 1) + embedding_params_per_rank(128256, 8192, 1, false);
  CHECK(total == 70'553'706'496);
  // TP 8: the linears split 8 ways, the norms' 2 h weights stay whole on every rank.
  CHECK(layer_params_per_rank(s, 8) == (layer_params_per_rank(s, 1) - 2 * 8192) / 8 + 2 * 8192);
  CHECK(embedding_params_per_rank(128256, 8192, 8, true) == 128256 / 8 * 8192 + 8192);
}

TEST_CASE("step memory: the peak is the sum of its parts, buffers as stated", "[memory_model]") {
  StepMemoryInput in;
  in.layer = llama3_70b_layer(8192);
  in.parallel = LayerParallel{8, true};
  in.layers = 80;
  in.recompute = RecomputePolicy::selective;
  in.dp = 32;
  in.zero = ZeroStage::parameters;
  in.zero3_prefetch = 1;
  in.nccl_channels = 24;
  in.communicators = 2;
  const StepMemoryBytes m = step_memory(in);
  const std::int64_t layer = layer_params_per_rank(in.layer, 8);
  CHECK(m.params_per_gpu == 80 * layer);
  CHECK(m.activations_bytes == 80 * per_layer(in.layer, 8, true, RecomputePolicy::selective));
  CHECK(m.nccl_bytes == 2 * 24 * (Bytes{4} << 20));
  CHECK(m.workspace_bytes == Bytes{32} << 20);
  CHECK(m.fp8_bytes == 0);
  // ZeRO-3 at the backward's start: this layer and the prefetched one gathered in bf16, one layer's fp32
  // gradients before their reduce-scatter, and selective recomputation's core-attention tensors.
  CHECK(m.transient_bytes == 2 * layer * 2 + layer * 4 + layer_activations(in.layer, in.parallel).core_attention_bytes);
  CHECK(m.peak_bytes == m.params_bytes + m.grads_bytes + m.optimizer_bytes + m.activations_bytes + m.buffers_bytes() +
                            m.transient_bytes);
  // FP8: the weights' fp8 copies and transposes (2 bytes per parameter held), and 4 linears x 3 tensors of
  // 1024 amaxes with a scale and its inverse, fp32, per layer.
  in.fp8 = true;
  const StepMemoryBytes f = step_memory(in);
  CHECK(f.fp8_bytes == 2 * ((80 * layer + 31) / 32) + 80 * 4 * 3 * (1024 + 2) * 4);
  // The output layer's fp32 logits over the vocabulary shard, when a vocabulary is given, are the larger
  // transient here (8192 x 16032 x 4 bytes against the core attention's log-sum-exp).
  in.fp8 = false;
  in.vocab = 128256;
  CHECK(step_memory(in).transient_bytes == 2 * layer * 2 + layer * 4 + Bytes{8192} * (128256 / 8) * 4);
}
