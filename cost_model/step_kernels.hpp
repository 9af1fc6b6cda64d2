#pragma once
// The memory-bound kernels of a dense transformer's training step, as pure functions of its shape
// (docs/guide/training.md "The kernels of a step"): the norms, rotary embedding, residual adds, dropout,
// FP8 casts and scale updates of every layer, the token embedding and the vocabulary-parallel
// cross-entropy around the layers, and the gradient norm, clipping and Adam after the backward. Each
// kernel is its bytes read + written through HBM; the engine prices it as bytes over the profile's HBM
// rate plus its launch (sim/engine: gpu.hbm_bandwidth_gbps x hbm_efficiency, gpu.hbm_latency_us,
// launch.host_us and gap_us), so a list's length is its launch count.
//
// Which kernels exist depends on the fusion the framework applies (Fusion). The lists, per layer:
//   none (eager PyTorch, Megatron-LM's local implementations without --bias-dropout-fusion or the
//     persistent layer norm): RMSNorm as three kernels (the fp32 variance, x * rsqrt, * weight), rotary
//     embedding as four per tensor (rotate_half, * cos, * sin, +) on q and k, SwiGLU as silu then the
//     product, a residual add (and a dropout before it) per block, a separate FP8 cast before every
//     linear; the backward mirrors each.
//   te (Megatron-LM with TransformerEngine): TE's fused RMSNorm (one kernel, writing the FP8 GEMM input
//     directly: LayerNormLinear), TE's fused RoPE (one kernel each for q and k: fused_rope), TE's fused
//     SwiGLU (writing fc2's FP8 input: LayerNormMLP), Megatron's fused bias-dropout-add (one kernel per
//     block, megatron/core/fusions/fused_bias_dropout.py); separate casts only where no TE kernel
//     precedes the linear (the attention output before the output projection); cross-entropy by
//     Megatron's fused vocabulary-parallel kernels (megatron/core/fusions/fused_cross_entropy.py: one
//     all-reduce of the predicted logits and the sums instead of two); fused Adam (multi-tensor).
//   compile (torch.compile, torchtitan): Inductor fuses every pointwise chain into its neighbours: the
//     residual add with the next RMSNorm (one kernel reading two tensors and writing two), rotary on q
//     and k in one kernel, SwiGLU in one, the FP8 casts into the kernel producing the GEMM's input
//     (torchao float8 under compile); the loss and Adam as te.
// What is approximated: rotary is placed before the block's QKV projection (it runs between QKV and
// core attention, where no TP collective is in flight, so the step's time is the same) and the unfused
// SwiGLU's extra silu kernel after the MLP block; the fp32 norm statistics, masks of the embedding and
// RNG states are left out (a few bytes per token); multi-tensor kernels (grad norm, clipping, Adam) are
// one launch per layer (apex's multi_tensor_apply launches one per chunk of tensors).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cost_model/units.hpp"

namespace overlap::step {

enum class Fusion : std::uint8_t { none, te, compile };
const char* fusion_name(Fusion f);
std::optional<Fusion> parse_fusion(const std::string& s);

// How FP8 GEMM inputs are scaled (only for FP8 runs). tensorwise: one scale per tensor from the amax
// history (TE's DelayedScaling, its default recipe): the amax comes out of the cast kernel itself and
// one scale-update kernel per layer refreshes every tensor's history. rowwise: a scale per row
// (torchao's float8 rowwise, TE's per-block recipes): the transposed copy that wgrad reads needs its
// own scales per column, so every cast reads its input twice (a rowwise and a columnwise pass) and no
// history is kept.
enum class Fp8Scaling : std::uint8_t { tensorwise, rowwise };
const char* fp8_scaling_name(Fp8Scaling s);
std::optional<Fp8Scaling> parse_fp8_scaling(const std::string& s);

struct MemoryBoundKernel {
  std::string name;
  Bytes bytes = 0;  // read + written through HBM
};
using Kernels = std::vector<MemoryBoundKernel>;

// One TP group's micro-batch of a dense transformer with Megatron-LM's sequence parallelism.
struct StepShape {
  std::int64_t tokens = 0;  // b x s of the micro-batch (the TP group's, before SP sharding)
  int tp = 1;
  std::int64_t d_model = 0, d_ffn = 0, heads = 0, kv_heads = 0, head_dim = 0;  // head_dim resolved
  bool gated = true;
  std::int64_t vocab = 0;     // 0: no embedding or output layer
  int activation_bytes = 2;   // bf16 activations (fp32: 4)
  bool fp8 = false;           // FP8 GEMM inputs
  Fp8Scaling scaling = Fp8Scaling::tensorwise;
  bool dropout = false;       // dropout after attention and after the MLP (hidden_dropout > 0)
  Fusion fusion = Fusion::te;
};

// Where in a layer a list runs: before the attention block (its norm and rotary), after it (the
// residual add), before the MLP block (its norm) and after it (the residual add). The forward runs the
// four in this order; the backward runs each site's backward list in the reverse order.
enum class Site : std::uint8_t { before_attention, after_attention, before_mlp, after_mlp };

Kernels layer_forward(const StepShape& s, Site site);
Kernels layer_backward(const StepShape& s, Site site);

// FP8 weight casts (and transposes) of one layer's `params_per_rank` weights, in the forward, and one
// layer's scale update (tensorwise). Empty when the run is not FP8.
Kernels layer_fp8_weights(const StepShape& s, std::int64_t params_per_rank);

// Around the layers. The embedding's forward gathers the rank's rows of its vocabulary shard and masks
// the tokens outside it (then the TP group reduce-scatters the embedded tokens: sim); its backward zeroes
// the shard's gradient, scatter-adds the all-gathered dY into it and adds that to the fp32 main grad.
Kernels embedding_forward(const StepShape& s);
Kernels embedding_backward(const StepShape& s);
// Layer 0's attention norm under compile, where no residual add precedes it to fuse with (the other
// fusions run it in layer_forward); empty otherwise.
Kernels first_layer_norm(const StepShape& s);
// The final RMSNorm before the output layer (compile: fused into the last layer's residual add).
Kernels final_norm_forward(const StepShape& s);
Kernels final_norm_backward(const StepShape& s);
// Megatron-LM's vocabulary-parallel cross-entropy (megatron/core/tensor_parallel/cross_entropy.py) on
// the rank's tokens x vocab / tp logits, which are never gathered: `before_max` runs ahead of the
// all-reduce of the row maxima, `after_max` between it and the all-reduce(s) of the predicted logits
// and the exp sums, `after_sums` after them; `backward` the softmax gradient times dL.
struct CrossEntropyKernels {
  Kernels before_max, after_max, after_sums, backward;
  int sum_all_reduces = 2;  // unfused: predicted logits and exp sums apart; fused: one of both
};
CrossEntropyKernels cross_entropy(const StepShape& s);
// Bytes of one all-reduce of the cross-entropy: one fp32 per token of the micro-batch.
Bytes cross_entropy_all_reduce_bytes(const StepShape& s);

// The optimizer step over `params` parameters of this rank's shard (after ZeRO's division), gradients
// of `grad_bytes` each: the gradient norm's squares (multi_tensor_l2norm), the clipping scale
// (torch.nn.utils.clip_grad_norm_ always multiplies by min(1, max_norm / norm)) and Adam (fp32 master
// weights and two moments, then the bf16 copy the GEMMs read).
Kernels grad_norm(std::int64_t params, int grad_bytes);
Kernels clip_grads(std::int64_t params, int grad_bytes);
Kernels adam(std::int64_t params, int grad_bytes, Fusion fusion);

// Bytes per parameter of Adam: fused (apex / TE FusedAdam, Megatron's distributed optimizer): read the
// fp32 master, gradient and two moments, write them back but the gradient, then the bf16 copy (read 4,
// write 2). Unfused (torch.optim.Adam foreach, no fused kernel): the moments' updates, the denominator
// and the update as their own passes (exact sums in step_kernels.cpp).
Bytes adam_bytes_per_param(int grad_bytes, Fusion fusion);

}  // namespace overlap::step
