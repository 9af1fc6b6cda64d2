// The memory-bound kernels of a training step (step_kernels.hpp). Every count below is a kernel's
// tensors read + written, element by element; "passes" = how many times a tensor's bytes cross HBM.
#include "cost_model/step_kernels.hpp"

#include <algorithm>

namespace overlap::step {

const char* fusion_name(Fusion f) {
  switch (f) {
    case Fusion::none: return "none";
    case Fusion::te: return "te";
    case Fusion::compile: return "compile";
  }
  return "te";
}

std::optional<Fusion> parse_fusion(const std::string& s) {
  for (Fusion f : {Fusion::none, Fusion::te, Fusion::compile})
    if (s == fusion_name(f)) return f;
  return std::nullopt;
}

const char* fp8_scaling_name(Fp8Scaling s) { return s == Fp8Scaling::rowwise ? "rowwise" : "tensorwise"; }

std::optional<Fp8Scaling> parse_fp8_scaling(const std::string& s) {
  if (s == "tensorwise") return Fp8Scaling::tensorwise;
  if (s == "rowwise") return Fp8Scaling::rowwise;
  return std::nullopt;
}

namespace {

// Elements of the rank's sequence-parallel shard of one tokens x d_model activation.
std::int64_t shard_elements(const StepShape& s) { return s.tokens / std::max(1, s.tp) * s.d_model; }

// The rank's query and key widths: heads / tp query heads; key-value heads split over tp, or one
// replicated per rank when there are fewer than tp (Megatron-LM).
std::int64_t query_width(const StepShape& s) { return s.heads / std::max(1, s.tp) * s.head_dim; }
std::int64_t key_width(const StepShape& s) {
  const std::int64_t kv = s.kv_heads > 0 ? s.kv_heads : s.heads;
  return std::max<std::int64_t>(1, kv / std::max(1, s.tp)) * s.head_dim;
}

Bytes b(const StepShape& s) { return s.activation_bytes; }

// A kernel producing an FP8 GEMM input writes it twice at one byte (rowwise and the transposed copy
// wgrad reads: TE's cast_transpose); rowwise scaling reads its input once more for the columnwise scales.
Bytes fused_output_bytes(const StepShape& s) { return s.fp8 ? 2 : b(s); }
Bytes rowwise_extra_read(const StepShape& s) { return s.fp8 && s.scaling == Fp8Scaling::rowwise ? b(s) : 0; }
// A separate cast of `elements` to FP8: read the bf16 tensor (twice rowwise), write both copies.
MemoryBoundKernel cast(const StepShape& s, std::int64_t elements, const std::string& name) {
  return {name, elements * (b(s) + rowwise_extra_read(s) + 2)};
}

// RMSNorm's forward on the rank's shard: unfused, the fp32 variance (read x), x * rsqrt (read x, write)
// and * weight (read, write); fused, one kernel reading x and writing the GEMM's input (FP8 with TE).
void norm_forward(const StepShape& s, const std::string& name, Kernels& out) {
  const std::int64_t n = shard_elements(s);
  if (s.fusion == Fusion::none) {
    out.push_back({name + ".variance", n * b(s)});
    out.push_back({name + ".scale", 2 * n * b(s)});
    out.push_back({name + ".weight", 2 * n * b(s)});
    if (s.fp8) out.push_back(cast(s, n, name + ".fp8_cast"));
    return;
  }
  out.push_back({name, n * (b(s) + rowwise_extra_read(s) + fused_output_bytes(s))});
}

// RMSNorm's backward: unfused, autograd of the three kernels (the weight product's dX and dgamma
// reduction, the scale's and the variance's: read dY, x and the normalised x, write dX: 10 passes in
// four kernels); fused, one kernel reading dY and x and writing dX. `residual`: the residual stream's
// gradient is added to dX (a separate add except under compile, where the norm's kernel reads it too).
void norm_backward(const StepShape& s, const std::string& name, bool residual, Kernels& out) {
  const std::int64_t n = shard_elements(s);
  if (s.fusion == Fusion::none) {
    out.push_back({name + ".weight_backward", 3 * n * b(s)});
    out.push_back({name + ".dgamma", 2 * n * b(s)});
    out.push_back({name + ".scale_backward", 3 * n * b(s)});
    out.push_back({name + ".variance_backward", 2 * n * b(s)});
  } else {
    out.push_back({name + "_backward", (s.fusion == Fusion::compile && residual ? 4 : 3) * n * b(s)});
  }
  if (residual && s.fusion != Fusion::compile) out.push_back({name + ".residual_grad_add", 3 * n * b(s)});
}

// Rotary embedding on the rank's q and k (forward or backward: the backward rotates back, the same
// traffic): unfused, rotate_half (read, write), * cos (read, write), * sin (read, write) and the sum
// (read two, write one) per tensor; TE's fused_rope one kernel per tensor; compile one for both.
void rope(const StepShape& s, const std::string& name, Kernels& out) {
  const std::int64_t q = s.tokens * query_width(s), k = s.tokens * key_width(s);
  if (s.fusion == Fusion::none) {
    for (const auto& [tensor, n] : {std::pair<const char*, std::int64_t>{"q", q}, {"k", k}}) {
      const std::string t = name + "." + tensor;
      out.push_back({t + ".rotate_half", 2 * n * b(s)});
      out.push_back({t + ".cos", 2 * n * b(s)});
      out.push_back({t + ".sin", 2 * n * b(s)});
      out.push_back({t + ".add", 3 * n * b(s)});
    }
  } else if (s.fusion == Fusion::te) {
    out.push_back({name + ".q", 2 * q * b(s)});
    out.push_back({name + ".k", 2 * k * b(s)});
  } else {
    out.push_back({name, 2 * (q + k) * b(s)});
  }
}

// The residual add after a block on the rank's shard (with the dropout before it when configured, its
// one-byte mask written): unfused, dropout (read, write, mask) then the add (read two, write one);
// fused bias-dropout-add one kernel; compile also the next norm (the MLP's after attention; the next
// layer's, or the final norm, after the MLP): it writes the GEMM input beside the residual stream.
void residual_add(const StepShape& s, const std::string& name, Kernels& out) {
  const std::int64_t n = shard_elements(s);
  const Bytes mask = s.dropout ? n : 0;
  if (s.fusion == Fusion::none) {
    if (s.dropout) out.push_back({name + ".dropout", 2 * n * b(s) + mask});
    out.push_back({name + ".residual_add", 3 * n * b(s)});
  } else if (s.fusion == Fusion::te) {
    out.push_back({name + ".bias_dropout_add", 3 * n * b(s) + mask});
  } else {
    out.push_back({name + ".residual_add_norm", n * (3 * b(s) + rowwise_extra_read(s) + fused_output_bytes(s)) + mask});
  }
}

void dropout_backward(const StepShape& s, const std::string& name, Kernels& out) {
  if (!s.dropout) return;
  const std::int64_t n = shard_elements(s);
  out.push_back({name + ".dropout_backward", 2 * n * b(s) + n});
}

}  // namespace

Kernels layer_forward(const StepShape& s, Site site) {
  Kernels out;
  const std::int64_t ffn = s.d_ffn / std::max(1, s.tp);
  switch (site) {
    case Site::before_attention:
      if (s.fusion != Fusion::compile) norm_forward(s, "attn_norm", out);
      rope(s, "rope", out);
      // Core attention's output feeds the output projection straight from the attention kernel: no
      // elementwise kernel precedes it that could cast, so it is cast on its own under every fusion.
      if (s.fp8) out.push_back(cast(s, s.tokens * query_width(s), "attn.out_proj.fp8_cast"));
      break;
    case Site::after_attention: residual_add(s, "attn", out); break;
    case Site::before_mlp:
      if (s.fusion != Fusion::compile) norm_forward(s, "mlp_norm", out);
      break;
    case Site::after_mlp:
      // Eager SwiGLU: silu(gate) on its own (read, write) before the product the layer's activation
      // kernel already counts; its FP8 cast of fc2's input likewise (TE and compile fuse it there).
      if (s.fusion == Fusion::none && s.gated) out.push_back({"mlp.silu", 2 * s.tokens * ffn * b(s)});
      if (s.fusion == Fusion::none && s.fp8) out.push_back(cast(s, s.tokens * ffn, "mlp.fc2.fp8_cast"));
      residual_add(s, "mlp", out);
      break;
  }
  return out;
}

Kernels layer_backward(const StepShape& s, Site site) {
  Kernels out;
  const std::int64_t ffn = s.d_ffn / std::max(1, s.tp);
  switch (site) {
    case Site::after_mlp:
      dropout_backward(s, "mlp", out);
      // fc2's dY (the gathered tokens x d_model) is cast before its dgrad; fc1's (tokens x its outputs)
      // is cast by the fused SwiGLU backward under TE and compile, on its own unfused.
      if (s.fp8) out.push_back(cast(s, s.tokens * s.d_model, "mlp.fc2.grad_fp8_cast"));
      if (s.fusion == Fusion::none && s.gated) out.push_back({"mlp.silu_backward", 3 * s.tokens * ffn * b(s)});
      if (s.fusion == Fusion::none && s.fp8)
        out.push_back(cast(s, s.tokens * ffn * (s.gated ? 2 : 1), "mlp.fc1.grad_fp8_cast"));
      break;
    case Site::before_mlp: norm_backward(s, "mlp_norm", true, out); break;
    case Site::after_attention:
      dropout_backward(s, "attn", out);
      if (s.fp8) out.push_back(cast(s, s.tokens * s.d_model, "attn.out_proj.grad_fp8_cast"));
      break;
    case Site::before_attention:
      rope(s, "rope_backward", out);
      if (s.fp8 && s.fusion != Fusion::compile)
        out.push_back(cast(s, s.tokens * (query_width(s) + 2 * key_width(s)), "attn.qkv.grad_fp8_cast"));
      norm_backward(s, "attn_norm", true, out);
      break;
  }
  return out;
}

Kernels layer_fp8_weights(const StepShape& s, std::int64_t params_per_rank) {
  if (!s.fp8) return {};
  // bf16 weights read (twice rowwise), written as FP8 and its transpose (dgrad reads W^T).
  Kernels out{{"fp8.weight_cast", params_per_rank * (2 + (s.scaling == Fp8Scaling::rowwise ? 2 : 0) + 2)}};
  // TE DelayedScaling: each layer's FP8 tensors (input, weight, output gradient of its four linears)
  // keep an amax history of 1024 fp32 and a scale; the update reads and rewrites them.
  if (s.scaling == Fp8Scaling::tensorwise) out.push_back({"fp8.scale_update", 4 * 3 * 1024 * 4 * 2});
  return out;
}

Kernels embedding_forward(const StepShape& s) {
  const std::int64_t n = s.tokens * s.d_model;
  if (s.vocab <= 0) return {};
  if (s.fusion == Fusion::compile) return {{"embedding.gather", 2 * n * b(s)}};
  // F.embedding (read the rows, write them), then the tokens outside the shard zeroed (read, write).
  return {{"embedding.gather", 2 * n * b(s)}, {"embedding.mask", 2 * n * b(s)}};
}

Kernels embedding_backward(const StepShape& s) {
  if (s.vocab <= 0) return {};
  const std::int64_t rows = (s.vocab + s.tp - 1) / s.tp * s.d_model;
  const std::int64_t n = s.tokens * s.d_model;
  // The dense gradient of the shard zeroed; dY's rows read and added into their token's row (read,
  // write); the shard added into the fp32 main grad (read both, write fp32).
  return {{"embedding.grad_zero", rows * b(s)},
          {"embedding.scatter_add", 3 * n * b(s)},
          {"embedding.main_grad_add", rows * (b(s) + 8)}};
}

Kernels first_layer_norm(const StepShape& s) {
  Kernels out;
  if (s.fusion != Fusion::compile) return out;
  StepShape fused = s;
  fused.fusion = Fusion::te;  // one kernel, as TE's
  norm_forward(fused, "attn_norm", out);
  return out;
}

Kernels final_norm_forward(const StepShape& s) {
  Kernels out;
  if (s.fusion == Fusion::compile) return out;
  StepShape bf16 = s;
  bf16.fp8 = false;  // the output layer stays in bf16 (TE's FP8 recipes leave it out)
  norm_forward(bf16, "final_norm", out);
  return out;
}

Kernels final_norm_backward(const StepShape& s) {
  Kernels out;
  StepShape bf16 = s;
  bf16.fp8 = false;
  norm_backward(bf16, "final_norm", false, out);
  return out;
}

CrossEntropyKernels cross_entropy(const StepShape& s) {
  CrossEntropyKernels ce;
  if (s.vocab <= 0) return ce;
  const std::int64_t n = s.tokens * ((s.vocab + s.tp - 1) / s.tp);
  if (s.fusion == Fusion::none) {
    // cross_entropy.py: the logits to fp32 (read, write 4), the row max (read), minus the max in place,
    // exp in place, the row sum, the softmax (exp / sum in place) kept for the backward.
    ce.before_max = {{"loss.to_fp32", n * (b(s) + 4)}, {"loss.max", n * 4}};
    ce.after_max = {{"loss.sub_max", n * 8}, {"loss.exp", n * 8}, {"loss.sum", n * 4}};
    ce.after_sums = {{"loss.softmax", n * 8}};
    // Backward: the softmax times dL in place (read, write), then cast for the output layer's GEMMs.
    ce.backward = {{"loss.grad_scale", n * 8}, {"loss.grad_cast", n * (4 + b(s))}};
    ce.sum_all_reduces = 2;
  } else {
    // Megatron's fused cross-entropy: the max in one read, the shifted exp and its sum in one (writing
    // the fp32 exps), one all-reduce of the predicted logits and the sums together, the gradient in one
    // kernel (read the exps, write dLogits).
    ce.before_max = {{"loss.max", n * b(s)}};
    ce.after_max = {{"loss.exp_sum", n * (b(s) + 4)}};
    ce.backward = {{"loss.grad", n * (4 + b(s))}};
    ce.sum_all_reduces = 1;
  }
  return ce;
}

Bytes cross_entropy_all_reduce_bytes(const StepShape& s) { return s.tokens * 4; }

Kernels grad_norm(std::int64_t params, int grad_bytes) { return {{"optimizer.grad_norm", params * grad_bytes}}; }

Kernels clip_grads(std::int64_t params, int grad_bytes) { return {{"optimizer.clip", 2 * params * grad_bytes}}; }

Bytes adam_bytes_per_param(int grad_bytes, Fusion fusion) {
  // Fused: read master, grad, m, v (12 + g); write master, m, v (12); bf16 copy (read 4, write 2).
  if (fusion != Fusion::none) return 12 + grad_bytes + 12 + 6;
  // foreach: m.lerp_(g) (8 + g), v.mul_ (8), v.addcmul_(g, g) (8 + g), sqrt(v) (8), / bias correction
  // (8), + eps (8), p.addcdiv_(m, denom) (16), then the bf16 copy (6).
  return (8 + grad_bytes) + 8 + (8 + grad_bytes) + 8 + 8 + 8 + 16 + 6;
}

Kernels adam(std::int64_t params, int grad_bytes, Fusion fusion) {
  if (fusion != Fusion::none)
    return {{"optimizer.adam", params * (12 + grad_bytes + 12)}, {"optimizer.param_copy", params * 6}};
  return {{"optimizer.adam.exp_avg", params * (8 + grad_bytes)},
          {"optimizer.adam.exp_avg_sq_scale", params * 8},
          {"optimizer.adam.exp_avg_sq_add", params * (8 + grad_bytes)},
          {"optimizer.adam.sqrt", params * 8},
          {"optimizer.adam.bias_correction", params * 8},
          {"optimizer.adam.eps", params * 8},
          {"optimizer.adam.update", params * 16},
          {"optimizer.param_copy", params * 6}};
}

}  // namespace overlap::step
