// The memory-bound kernels of a training step (cost_model/step_kernels.hpp) against their byte counts,
// and what each fusion keeps: the lists are sums of tensors read and written, so every figure below is
// exact arithmetic on the shape.
#include <catch2/catch.hpp>

#include <cstdint>
#include <numeric>

#include "cost_model/step_kernels.hpp"

using namespace overlap;
using namespace overlap::step;

namespace {

// Llama 3 70B at TP 8 (Meta, "The Llama 3 Herd of Models", Table 3; config.json vocab_size 128256):
// one 8192-token sequence, bf16.
StepShape llama70b(Fusion f) {
  StepShape s;
  s.tokens = 8192;
  s.tp = 8;
  s.d_model = 8192;
  s.d_ffn = 28672;
  s.heads = 64;
  s.kv_heads = 8;
  s.head_dim = 128;
  s.vocab = 128256;
  s.fusion = f;
  return s;
}

Bytes total(const Kernels& k) {
  return std::accumulate(k.begin(), k.end(), Bytes{0}, [](Bytes a, const MemoryBoundKernel& m) { return a + m.bytes; });
}

Bytes layer_total(const StepShape& s, Kernels (*list)(const StepShape&, Site)) {
  Bytes out = 0;
  for (Site site : {Site::before_attention, Site::after_attention, Site::before_mlp, Site::after_mlp})
    out += total(list(s, site));
  return out;
}

std::size_t layer_launches(const StepShape& s, Kernels (*list)(const StepShape&, Site)) {
  std::size_t out = 0;
  for (Site site : {Site::before_attention, Site::after_attention, Site::before_mlp, Site::after_mlp})
    out += list(s, site).size();
  return out;
}

}  // namespace

TEST_CASE("a layer's forward kernels under TE: one norm, fused RoPE on q and k, one bias-dropout-add", "[step_kernels]") {
  const StepShape s = llama70b(Fusion::te);
  const Bytes shard = Bytes{8192} / 8 * 8192 * 2;  // the rank's sequence-parallel shard, bf16
  // RMSNorm reads x and writes its output on the shard: 2 passes.
  const Kernels before = layer_forward(s, Site::before_attention);
  REQUIRE(before.size() == 3);
  CHECK(before[0].bytes == 2 * shard);
  // RoPE reads and writes the rank's 8 query heads and its one key head (8 KV heads over 8 ranks).
  CHECK(before[1].bytes == 2 * Bytes{8192} * 8 * 128 * 2);
  CHECK(before[2].bytes == 2 * Bytes{8192} * 1 * 128 * 2);
  // The residual add reads two tensors and writes one.
  const Kernels after = layer_forward(s, Site::after_attention);
  REQUIRE(after.size() == 1);
  CHECK(after[0].bytes == 3 * shard);
  CHECK(layer_launches(s, layer_forward) == 6);
}

TEST_CASE("unfused kernels move more bytes in more launches; compile fewer than TE", "[step_kernels]") {
  const StepShape none = llama70b(Fusion::none), te = llama70b(Fusion::te), compile = llama70b(Fusion::compile);
  CHECK(layer_total(none, layer_forward) > layer_total(te, layer_forward));
  CHECK(layer_total(te, layer_forward) > layer_total(compile, layer_forward));
  CHECK(layer_launches(none, layer_forward) > layer_launches(te, layer_forward));
  CHECK(layer_launches(te, layer_forward) > layer_launches(compile, layer_forward));
  CHECK(layer_total(none, layer_backward) > layer_total(te, layer_backward));
  CHECK(layer_total(te, layer_backward) >= layer_total(compile, layer_backward));
  // Compile's residual add writes the next norm's input beside the residual stream (read 2, write 2).
  const Bytes shard = Bytes{8192} / 8 * 8192 * 2;
  const Kernels add = layer_forward(compile, Site::after_attention);
  REQUIRE(add.size() == 1);
  CHECK(add[0].bytes == 4 * shard);
  // Its layer 0 norm has no add before it: it runs alone, once per step.
  CHECK(total(first_layer_norm(compile)) == 2 * shard);
  CHECK(first_layer_norm(te).empty());
}

TEST_CASE("dropout adds its mask: one byte per element, forward and backward", "[step_kernels]") {
  StepShape s = llama70b(Fusion::te);
  const Bytes without = total(layer_forward(s, Site::after_mlp));
  s.dropout = true;
  const std::int64_t shard_elements = std::int64_t{8192} / 8 * 8192;
  CHECK(total(layer_forward(s, Site::after_mlp)) == without + shard_elements);
  // Backward: read dY and the mask, write dX.
  CHECK(total(layer_backward(s, Site::after_mlp)) == shard_elements * (2 * 2 + 1));
}

TEST_CASE("FP8: rowwise scaling reads every cast input twice, tensorwise keeps a scale history", "[step_kernels]") {
  StepShape tw = llama70b(Fusion::te);
  tw.fp8 = true;
  StepShape rw = tw;
  rw.scaling = Fp8Scaling::rowwise;
  // The attention output's cast (no fused kernel precedes the output projection): bf16 read once
  // (twice rowwise), two one-byte copies written.
  const std::int64_t attn_out = std::int64_t{8192} * 8 * 128;
  const Kernels t = layer_forward(tw, Site::before_attention);
  const Kernels r = layer_forward(rw, Site::before_attention);
  CHECK(t.back().bytes == attn_out * (2 + 2));
  CHECK(r.back().bytes == attn_out * (2 + 2 + 2));
  // Weights: tensorwise casts each once and updates 4 linears x 3 tensors' 1024-entry histories.
  const std::int64_t params = 1000;
  const Kernels wt = layer_fp8_weights(tw, params), wr = layer_fp8_weights(rw, params);
  REQUIRE(wt.size() == 2);
  CHECK(wt[0].bytes == params * 4);
  CHECK(wt[1].bytes == 4 * 3 * 1024 * 4 * 2);
  REQUIRE(wr.size() == 1);
  CHECK(wr[0].bytes == params * 6);
  // A bf16 run casts nothing.
  CHECK(layer_fp8_weights(llama70b(Fusion::te), params).empty());
}

TEST_CASE("the vocabulary-parallel cross-entropy: unfused, two sum all-reduces; fused, one", "[step_kernels]") {
  const std::int64_t logits = std::int64_t{8192} * (128256 / 8);
  const CrossEntropyKernels none = cross_entropy(llama70b(Fusion::none));
  const CrossEntropyKernels te = cross_entropy(llama70b(Fusion::te));
  CHECK(none.sum_all_reduces == 2);
  CHECK(te.sum_all_reduces == 1);
  // Fused: the max reads the bf16 logits; exp and sum read them and write fp32 exps; the backward reads
  // those and writes bf16 dLogits.
  CHECK(total(te.before_max) == logits * 2);
  CHECK(total(te.after_max) == logits * 6);
  CHECK(total(te.backward) == logits * 6);
  CHECK(total(none.before_max) + total(none.after_max) + total(none.after_sums) > total(te.before_max) + total(te.after_max));
  // The all-reduces carry one fp32 per token, never the logits.
  CHECK(cross_entropy_all_reduce_bytes(llama70b(Fusion::te)) == 8192 * 4);
  StepShape no_vocab = llama70b(Fusion::te);
  no_vocab.vocab = 0;
  CHECK(cross_entropy(no_vocab).before_max.empty());
  CHECK(embedding_forward(no_vocab).empty());
}

TEST_CASE("Adam's bytes per parameter: fused 30 + the gradient's, foreach 64 + twice it", "[step_kernels]") {
  // Fused (fp32 grads): read master, grad, m, v = 16; write master, m, v = 12; bf16 copy 4 + 2.
  CHECK(adam_bytes_per_param(4, Fusion::te) == 34);
  CHECK(total(adam(1000, 4, Fusion::te)) == 34 * 1000);
  CHECK(total(adam(1000, 4, Fusion::none)) == adam_bytes_per_param(4, Fusion::none) * 1000);
  CHECK(adam_bytes_per_param(4, Fusion::none) == 64 + 2 * 4 + 6);
  CHECK(total(grad_norm(1000, 4)) == 4000);
  CHECK(total(clip_grads(1000, 4)) == 8000);
}

TEST_CASE("the fusion and scaling names round-trip; unknown names are refused", "[step_kernels]") {
  for (Fusion f : {Fusion::none, Fusion::te, Fusion::compile}) CHECK(parse_fusion(fusion_name(f)) == f);
  CHECK_FALSE(parse_fusion("apex").has_value());
  CHECK(parse_fp8_scaling("rowwise") == Fp8Scaling::rowwise);
  CHECK_FALSE(parse_fp8_scaling("blockwise").has_value());
}
