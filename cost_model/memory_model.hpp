#pragma once
// Memory per GPU of a dense transformer's training step, as pure functions of the model's shape, the
// parallelism and the precision (docs/guide/training.md "Memory per GPU"). Every figure is bytes.
//
// Sources:
// - Activations: Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models"
//   (MLSys'23), Sec. 4.1 (one layer, no parallelism: s b h (34 + 5 a s / h), eq. 1), Sec. 4.2.1 (tensor
//   parallelism: s b h (10 + 24 / t + 5 a s / (h t)), eq. 2), Sec. 4.2.2 (with sequence parallelism:
//   s b h / t (34 + 5 a s / h), eq. 3), Sec. 5 (selective recomputation drops the 5 a s / h term; full
//   recomputation keeps only each layer's input, 2 s b h) and Table 2, which lists the six forms.
// - Parameters, gradients and optimizer states by ZeRO stage: Rajbhandari et al., "ZeRO: Memory
//   Optimizations Toward Training Trillion Parameter Models" (SC'20), Sec. 3.1 (mixed-precision Adam:
//   2 + 2 + K bytes per parameter, K = 12: fp32 master weights, momentum and variance) and Sec. 5.1-5.3
//   (P_os, P_os+g, P_os+g+p divide the optimizer states, then the gradients, then the parameters by N_d).
#include <cstdint>

#include "cost_model/units.hpp"

namespace overlap::memory {

// ZeRO's stages (Rajbhandari et al. Sec. 5): none = DDP (every replica holds everything); optimizer =
// stage 1 (P_os); gradients = stage 2 (P_os+g); parameters = stage 3 (P_os+g+p, PyTorch FSDP's FULL_SHARD).
enum class ZeroStage : std::uint8_t { none = 0, optimizer = 1, gradients = 2, parameters = 3 };

// Megatron-LM's --recompute-granularity (Korthikanti et al. Sec. 5): selective recomputes core
// attention in the backward, full recomputes each layer from its stored input.
enum class RecomputePolicy : std::uint8_t { none, selective, full };

// How core attention (softmax(Q K^T) V) keeps what its backward needs: unfused, as Korthikanti et al.
// count it (the a s x s softmax output, its dropout mask and the dropout's output), or FlashAttention
// (Dao, "FlashAttention-2", Sec. 3.1.2: only the fp32 log-sum-exp of each query row beside Q, K, V and
// the output, which the linears around it store anyway; the dropout mask is regenerated from the RNG).
enum class CoreAttention : std::uint8_t { unfused, flash };

// Bytes per parameter of each model state.
struct StateBytesPerParam {
  int param_bytes = 2;       // the weights the GEMMs read (bf16 / fp16)
  int grad_bytes = 4;        // the gradient buffer (Megatron-LM's fp32 main_grad; ZeRO's paper: 2)
  int optimizer_bytes = 12;  // Adam: fp32 master weights, momentum and variance (ZeRO Sec. 3.1, K = 12)
};

struct ModelStateBytes {
  Bytes params_bytes = 0;
  Bytes grads_bytes = 0;
  Bytes optimizer_bytes = 0;
  Bytes total_bytes() const { return params_bytes + grads_bytes + optimizer_bytes; }
};

// The states of `params` parameters (those this GPU holds before data parallelism: its TP shard) over
// `dp` data-parallel replicas at ZeRO `stage`. A sharded state takes ceil(params / dp) parameters' bytes
// (ZeRO pads its partitions to equal sizes).
ModelStateBytes model_state_bytes(std::int64_t params, int dp, ZeroStage stage, const StateBytesPerParam& bytes);

// One transformer layer as its activations see it (Korthikanti et al.'s notation in the comments).
struct LayerShape {
  std::int64_t seq = 0;          // s
  std::int64_t micro_batch = 0;  // b
  std::int64_t d_model = 0;      // h
  std::int64_t heads = 0;        // a
  std::int64_t kv_heads = 0;     // grouped-query attention's key/value heads; 0 = heads
  std::int64_t head_dim = 0;     // 0 = h / a
  std::int64_t d_ffn = 0;        // the MLP's inner width (GPT: 4 h)
  bool gated = false;            // SwiGLU: the first linear writes 2 d_ffn (gate and up)
  int activation_bytes = 2;      // 16-bit activations
  int linear_input_bytes = 2;    // what a linear keeps of its input for its weight gradient (fp8: 1)
  bool dropout = true;           // dropout after attention and after the MLP (and on the softmax)
  CoreAttention attention = CoreAttention::unfused;
};

struct LayerParallel {
  int tp = 1;                      // t
  bool sequence_parallel = false;  // Korthikanti et al. Sec. 4.2.2
};

// One layer's stored activations without recomputation, in the paper's three groups.
struct LayerActivationBytes {
  // Held whole on every TP rank unless sequence parallelism splits them (the paper's "10 s b h"): both
  // layer norms' inputs, the two dropout masks, and the inputs of the QKV and first MLP linears.
  Bytes replicated_bytes = 0;
  // Split over the TP ranks by heads or by the MLP's width (the paper's "24 s b h / t"): Q and K for
  // Q K^T, V, the output projection's input, the activation function's input and the second linear's input.
  Bytes sharded_bytes = 0;
  // Core attention's own tensors (the paper's "5 a s^2 b / t"), what selective recomputation drops.
  Bytes core_attention_bytes = 0;
  Bytes total_bytes() const { return replicated_bytes + sharded_bytes + core_attention_bytes; }
};
LayerActivationBytes layer_activations(const LayerShape& shape, const LayerParallel& parallel);

// What one layer keeps from its forward until its backward under `policy` (Korthikanti et al. Table 2).
Bytes stored_activation_bytes_per_layer(const LayerShape& shape, const LayerParallel& parallel, RecomputePolicy policy);
// Full recomputation's checkpoint: the layer's input, s b h x activation bytes (/ t with SP).
Bytes layer_input_bytes(const LayerShape& shape, const LayerParallel& parallel);
// What the backward of one layer holds beyond the stored activations while it recomputes: full: the
// layer's whole forward; selective: core attention's tensors; none: nothing.
Bytes recompute_working_bytes(const LayerShape& shape, const LayerParallel& parallel, RecomputePolicy policy);

// Parameters one TP rank holds for one layer: QKV (column-parallel; key/value heads replicated when
// there are fewer than t), output projection (row-parallel), the MLP's two (or, gated, three) linears,
// and the two norms' weights (replicated). No biases (Llama); a GPT layer's 13 h biases are left out.
std::int64_t layer_params_per_rank(const LayerShape& shape, int tp);
// The token embedding and the output layer, vocabulary-parallel over t (Megatron-LM), plus the final
// norm; `tied`: one matrix for both. vocab 0: none.
std::int64_t embedding_params_per_rank(std::int64_t vocab, std::int64_t d_model, int tp, bool tied);

// Buffers the libraries allocate beside the model, as stated constants.
// NCCL_BUFFSIZE's default, 4 MiB (NCCL documentation, "Environment Variables", NCCL_BUFFSIZE): the
// Simple protocol's buffer per channel and peer connection. A ring communicator receives from one peer
// per channel, so it holds channels x 4 MiB; LL and LL128's smaller buffers are not counted.
inline constexpr Bytes kNcclBufferBytes = Bytes{4} << 20;
// cuBLAS's default workspace on Hopper, 32 MiB (cuBLAS documentation, "cublasSetWorkspace()": 32 MiB
// for compute capability 9.0, 4 MiB below it); Transformer Engine allocates the same for its GEMMs.
inline constexpr Bytes kCublasWorkspaceBytes = Bytes{32} << 20;
// Transformer Engine's DelayedScaling recipe keeps amax_history_len = 1024 fp32 amaxes per FP8 tensor
// (TE documentation, "transformer_engine.common.recipe.DelayedScaling"), plus a scale and its inverse.
inline constexpr std::int64_t kFp8AmaxHistoryLength = 1024;
// FP8 tensors per linear with an amax history: its input, its weight and the gradient of its output.
inline constexpr int kFp8TensorsPerLinear = 3;
// Linears per dense layer: QKV, output projection, and the MLP's two (gate and up are one linear).
inline constexpr int kLinearsPerLayer = 4;

// A dense transformer's training step on one GPU: one micro-batch in flight, or, on a pipeline stage,
// what its schedule holds (Narayanan et al. SC'21 Sec. 2.2: 1F1B keeps pp - s micro-batches' activations
// on stage s; the interleaved schedule more).
struct StepMemoryInput {
  LayerShape layer;
  LayerParallel parallel;
  int layers = 0;
  std::int64_t vocab = 0;        // 0: embedding and output layer not counted
  bool tied_embeddings = false;
  RecomputePolicy recompute = RecomputePolicy::none;
  int dp = 1;
  ZeroStage zero = ZeroStage::none;
  int zero3_prefetch = 1;        // stage 3: layers whose parameters are gathered ahead of the one running
  StateBytesPerParam state;
  bool fp8 = false;              // FP8 GEMMs (Transformer Engine): fp8 weight copies and amax histories
  int nccl_channels = 0;         // per communicator
  int communicators = 1;         // TP, and one more for each of DP, PP and CP in use
  // A pipeline stage: layer activations held at the peak, in layer-micro-batches (the schedule's
  // micro-batch chunks in flight x layers per chunk); 0 = `layers` (one micro-batch in flight).
  std::int64_t in_flight_layers = 0;
  // The first stage holds the token embedding, the last the output layer, the final norm and the
  // logits; a job of one stage is both.
  bool first_stage = true;
  bool last_stage = true;
};

struct StepMemoryBytes {
  std::int64_t params_per_gpu = 0;  // parameters this GPU owns before ZeRO (its TP shard)
  Bytes params_bytes = 0;
  Bytes grads_bytes = 0;
  Bytes optimizer_bytes = 0;
  Bytes activations_bytes = 0;   // every layer's stored activations of the micro-batch in flight
  Bytes fp8_bytes = 0;           // FP8 weight copies (and their transposes) and amax histories
  Bytes nccl_bytes = 0;
  Bytes workspace_bytes = 0;     // cuBLAS
  Bytes transient_bytes = 0;     // live at the peak beside the above (see step_memory)
  Bytes peak_bytes = 0;
  Bytes buffers_bytes() const { return fp8_bytes + nccl_bytes + workspace_bytes; }
};

// The step's memory per GPU. The peak is when the backward starts: every layer's activations are stored,
// and on top of them (transient_bytes) ZeRO-3's gathered parameters (this and `zero3_prefetch` more
// layers' TP shards) with one layer's unsharded gradients, plus the larger of the output layer's fp32
// logits (vocabulary-parallel: s b x vocab / t, live until the loss's backward) and the first layer's
// recomputation working set (recompute_working_bytes).
StepMemoryBytes step_memory(const StepMemoryInput& in);

}  // namespace overlap::memory
