#include "cost_model/memory_model.hpp"

#include <algorithm>
#include <stdexcept>

namespace overlap::memory {

namespace {

// Per-token widths of one TP rank's share of a layer.
struct RankWidths {
  std::int64_t tokens = 0;             // s b
  std::int64_t replicated_tokens = 0;  // s b, or s b / t with sequence parallelism
  std::int64_t h = 0;
  std::int64_t q = 0;    // query (and attention output) width: a / t heads
  std::int64_t kv = 0;   // key and value width each: kv_heads / t heads, at least one head (replicated)
  std::int64_t ffn = 0;  // d_ffn / t
  std::int64_t heads = 0;  // a / t
};

RankWidths rank_widths(const LayerShape& s, const LayerParallel& p) {
  if (p.tp < 1) throw std::invalid_argument("memory model: tp must be >= 1");
  if (s.seq < 1 || s.micro_batch < 1 || s.d_model < 1 || s.heads < 1 || s.d_ffn < 1)
    throw std::invalid_argument("memory model: a layer dimension is not positive");
  const std::int64_t t = p.tp;
  const std::int64_t head_dim = s.head_dim > 0 ? s.head_dim : s.d_model / s.heads;
  const std::int64_t kv_heads = s.kv_heads > 0 ? s.kv_heads : s.heads;
  RankWidths w;
  w.tokens = checked_mul(s.seq, s.micro_batch);
  w.replicated_tokens = p.sequence_parallel ? ceil_div(w.tokens, t) : w.tokens;
  w.h = s.d_model;
  w.heads = ceil_div(s.heads, t);
  w.q = w.heads * head_dim;
  w.kv = std::max<std::int64_t>(1, kv_heads / t) * head_dim;
  w.ffn = ceil_div(s.d_ffn, t);
  return w;
}

}  // namespace

ModelStateBytes model_state_bytes(std::int64_t params, int dp, ZeroStage stage, const StateBytesPerParam& bytes) {
  if (params < 0 || dp < 1) throw std::invalid_argument("memory model: params must be >= 0 and dp >= 1");
  const std::int64_t shard = ceil_div(params, dp);
  const int s = static_cast<int>(stage);
  ModelStateBytes m;
  // ZeRO Sec. 5: stage 1 partitions the optimizer states, stage 2 the gradients too, stage 3 the parameters.
  m.optimizer_bytes = checked_mul(s >= 1 ? shard : params, bytes.optimizer_bytes);
  m.grads_bytes = checked_mul(s >= 2 ? shard : params, bytes.grad_bytes);
  m.params_bytes = checked_mul(s >= 3 ? shard : params, bytes.param_bytes);
  return m;
}

// Korthikanti et al. Sec. 4.1 count, tensor by tensor, what each op of a layer keeps for its backward,
// with 2-byte activations and 1-byte dropout masks:
//   attention block, 11 s b h + 5 a s^2 b: the QKV linears' shared input (2), Q and K for Q K^T (4), the
//     softmax output (2 a s^2 b), its dropout mask (a s^2 b) and the dropout's output with V for the
//     product with the values (2 a s^2 b + 2), the output projection's input (2), its dropout mask (1);
//   MLP block, 19 s b h: the first linear's input (2), the GeLU's input (8: 4 h wide), the second
//     linear's input (8), the dropout mask (1);
//   the two layer norms' inputs, 4 s b h.
// 11 + 19 + 4 = 34. The same accounting with the widths of grouped-query attention (K and V are
// kv_heads x head_dim wide), a gated MLP (SwiGLU's backward reads both the gate and the up projection:
// 2 x 2 d_ffn, and the second linear's input is d_ffn wide) and FP8 linears (their saved inputs 1 byte)
// gives the general form below; with kv_heads = heads, head_dim = h / a, d_ffn = 4 h, no gate and 2-byte
// linear inputs it is the paper's, term for term.
LayerActivationBytes layer_activations(const LayerShape& s, const LayerParallel& p) {
  const RankWidths w = rank_widths(s, p);
  const std::int64_t act = s.activation_bytes;
  const std::int64_t lin = s.linear_input_bytes;
  const std::int64_t mask = s.dropout ? 1 : 0;
  LayerActivationBytes out;
  // Layer norms' inputs (2 x act), the dropout masks after attention and the MLP, the QKV and first MLP
  // linears' inputs: the paper's 10 s b h.
  const std::int64_t replicated_per_token = 2 * act * w.h + 2 * mask * w.h + 2 * lin * w.h;
  out.replicated_bytes = checked_mul(w.replicated_tokens, replicated_per_token);
  // Q, K, V, the output projection's input, the activation function's input and the second linear's
  // input: the paper's 24 s b h / t.
  const std::int64_t sharded_per_token =
      act * (w.q + 2 * w.kv) + lin * w.q + act * (s.gated ? 2 : 1) * w.ffn + lin * w.ffn;
  out.sharded_bytes = checked_mul(w.tokens, sharded_per_token);
  if (s.attention == CoreAttention::unfused) {
    // softmax output (act), and with dropout its mask (1) and output (act): 5 a s^2 b / t.
    const std::int64_t per_score = act + (s.dropout ? 1 + act : 0);
    out.core_attention_bytes = checked_mul(checked_mul(checked_mul(w.heads, s.seq), s.seq),
                                           checked_mul(s.micro_batch, per_score));
  } else {
    out.core_attention_bytes = checked_mul(w.heads * 4, w.tokens);  // fp32 log-sum-exp per head and query
  }
  return out;
}

Bytes layer_input_bytes(const LayerShape& s, const LayerParallel& p) {
  const RankWidths w = rank_widths(s, p);
  return checked_mul(w.replicated_tokens, s.activation_bytes * w.h);
}

Bytes stored_activation_bytes_per_layer(const LayerShape& s, const LayerParallel& p, RecomputePolicy policy) {
  const LayerActivationBytes a = layer_activations(s, p);
  switch (policy) {
    case RecomputePolicy::none: return a.total_bytes();
    case RecomputePolicy::selective: return a.replicated_bytes + a.sharded_bytes;
    case RecomputePolicy::full: return layer_input_bytes(s, p);
  }
  return a.total_bytes();
}

Bytes recompute_working_bytes(const LayerShape& s, const LayerParallel& p, RecomputePolicy policy) {
  switch (policy) {
    case RecomputePolicy::none: return 0;
    case RecomputePolicy::selective: return layer_activations(s, p).core_attention_bytes;
    case RecomputePolicy::full: return layer_activations(s, p).total_bytes();
  }
  return 0;
}

std::int64_t layer_params_per_rank(const LayerShape& s, int tp) {
  const RankWidths w = rank_widths(s, LayerParallel{tp, false});
  const std::int64_t qkv = w.h * (w.q + 2 * w.kv);
  const std::int64_t proj = w.q * w.h;
  const std::int64_t mlp = (s.gated ? 3 : 2) * w.h * w.ffn;
  return qkv + proj + mlp + 2 * w.h;
}

std::int64_t embedding_params_per_rank(std::int64_t vocab, std::int64_t d_model, int tp, bool tied) {
  if (vocab <= 0) return 0;
  const std::int64_t matrix = checked_mul(ceil_div(vocab, tp), d_model);
  return (tied ? 1 : 2) * matrix + d_model;
}

StepMemoryBytes step_memory(const StepMemoryInput& in) {
  if (in.layers < 1) throw std::invalid_argument("memory model: layers must be >= 1");
  StepMemoryBytes m;
  const std::int64_t layer_params = layer_params_per_rank(in.layer, in.parallel.tp);
  std::int64_t embedding = embedding_params_per_rank(in.vocab, in.layer.d_model, in.parallel.tp, in.tied_embeddings);
  if (in.vocab > 0 && !(in.first_stage && in.last_stage)) {
    // One end of a pipeline: the embedding on the first stage, the output layer and final norm on the
    // last (a tied matrix is kept on both, as Megatron-LM does).
    const std::int64_t matrix = checked_mul(ceil_div(in.vocab, in.parallel.tp), in.layer.d_model);
    embedding = (in.first_stage ? matrix : 0) + (in.last_stage ? matrix + in.layer.d_model : 0);
  }
  m.params_per_gpu = checked_add(checked_mul(in.layers, layer_params), embedding);
  const ModelStateBytes states = model_state_bytes(m.params_per_gpu, in.dp, in.zero, in.state);
  m.params_bytes = states.params_bytes;
  m.grads_bytes = states.grads_bytes;
  m.optimizer_bytes = states.optimizer_bytes;
  m.activations_bytes = checked_mul(in.in_flight_layers > 0 ? in.in_flight_layers : std::int64_t{in.layers},
                                    stored_activation_bytes_per_layer(in.layer, in.parallel, in.recompute));
  const bool zero3 = in.zero == ZeroStage::parameters && in.dp > 1;
  if (in.fp8) {
    // Transformer Engine caches each weight's FP8 copy and, for Hopper's FP8 GEMMs (which take only the
    // TN layout), its transpose for the backward: 2 bytes per parameter held.
    const std::int64_t held = zero3 ? ceil_div(m.params_per_gpu, in.dp) : m.params_per_gpu;
    const Bytes amax = std::int64_t{in.layers} * kLinearsPerLayer * kFp8TensorsPerLinear * (kFp8AmaxHistoryLength + 2) * 4;
    m.fp8_bytes = checked_add(checked_mul(held, 2), amax);
  }
  m.nccl_bytes = checked_mul(std::int64_t{in.communicators} * in.nccl_channels, kNcclBufferBytes);
  m.workspace_bytes = kCublasWorkspaceBytes;
  Bytes gathered = 0;
  if (zero3)
    gathered = checked_add(checked_mul(std::int64_t{1} + std::max(0, in.zero3_prefetch), layer_params * in.state.param_bytes),
                           checked_mul(layer_params, in.state.grad_bytes));
  const RankWidths w = rank_widths(in.layer, in.parallel);
  const Bytes logits = in.vocab > 0 && in.last_stage ? checked_mul(checked_mul(w.tokens, ceil_div(in.vocab, in.parallel.tp)), 4) : 0;
  m.transient_bytes =
      checked_add(gathered, std::max(logits, recompute_working_bytes(in.layer, in.parallel, in.recompute)));
  m.peak_bytes = checked_add(checked_add(states.total_bytes(), m.activations_bytes),
                             checked_add(m.buffers_bytes(), m.transient_bytes));
  return m;
}

}  // namespace overlap::memory
