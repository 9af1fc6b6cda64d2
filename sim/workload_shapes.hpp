#pragma once
// Per-rank shapes of every workload kind, derived from the parallelism (sim/workload.hpp): TP shards
// weights (column-parallel: N / tp; row-parallel: K / tp), SP shards activations (tokens / tp),
// Ulysses shards the sequence and then the heads. Every scheme of a workload reads its GEMMs and
// collectives from here, so all schemes compute the same layer.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cost_model/moe_routing.hpp"

#include "cost_model/gemm_model.hpp"
#include "cost_model/hardware_profile.hpp"
#include "cost_model/units.hpp"
#include "sim/workload.hpp"

namespace overlap::sim {

using RankGemm = GemmShape;  // cost_model/gemm_model.hpp

// mlp_tpsp per rank (Megatron sequence parallelism): all-gather of the tokens/tp x d_model shard,
// column-parallel GEMM (tokens x cols x d_model), activation, row-parallel GEMM
// (tokens x d_model x ffn/tp), reduce-scatter back to tokens/tp x d_model.
struct MlpShapes {
  Bytes all_gather_bytes = 0;  // nccl-tests S: the gathered tokens x d_model activation (0: !gather_input)
  RankGemm col;                // up (+ gate) projection
  Bytes activation_bytes = 0;  // SwiGLU / GELU kernel: read col output, write ffn/tp activation
  RankGemm row;                // down projection
  Bytes reduce_scatter_bytes = 0;  // S: the tokens x d_model partial sums
};

// Unfused core attention on one rank (AttentionImplementation::unfused): `problems` = batch x heads/tp
// independent score matrices of seq x seq, each a problem of the batched GEMMs (Megatron-LM's
// torch.baddbmm and torch.bmm over [batch x heads, seq, head_dim]).
struct UnfusedAttention {
  std::int64_t problems = 0;
  std::int64_t seq = 0, head_dim = 0;
  DType dtype = DType::bf16;
  bool dropout = false;  // dropout on the probabilities
  // Q K^T (and the backward's dP = dO V^T): seq queries x seq keys over head_dim, the whole matrix.
  RankGemm scores() const { return RankGemm{seq, seq, head_dim, dtype}; }
  // P V (and dV = P^T dO, dQ = dS K, dK = dS^T Q): seq x head_dim over seq.
  RankGemm context() const { return RankGemm{seq, head_dim, seq, dtype}; }
  // Every problem's seq x seq matrix in dtype (the scores, the probabilities, their gradients).
  Bytes matrix_bytes() const;
  // The dropout mask: one byte per score (Korthikanti et al. Sec. 4.1).
  Bytes mask_bytes() const;
};

// attention_tpsp per rank: all-gather, QKV projection (heads/tp and kv_heads/tp), core attention
// (a tiled kernel from a FLOP model, or unfused: `unfused` set), output projection, reduce-scatter.
struct AttentionShapes {
  Bytes all_gather_bytes = 0;
  RankGemm qkv;
  double attention_flops = 0;    // QK^T and PV over the rank's heads; causal halves it (model FLOPs)
  // Flash: batch x heads/tp x ceil(seq / 128) query blocks. Unfused: the two batched GEMMs' 128 x 128
  // tiles (what the simulator walks, scenario.cpp's budget).
  std::int64_t attention_tiles = 0;
  std::optional<UnfusedAttention> unfused;  // set for AttentionImplementation::unfused
  RankGemm out;
  Bytes reduce_scatter_bytes = 0;
};

// A transformer's multi-head latent attention per rank (Transformer::mla; DeepSeek-V2 Sec. 2.1.2 eqs. 9-11
// and 2.1.3 eqs. 12-19, DeepSeek-V3 Sec. 2.1.1 eqs. 1-11) as Megatron-core's MLASelfAttention runs it
// with TP + SP (megatron/core/transformer/multi_latent_attention.py, TELinear parallel_mode
// "duplicated" down-projections). Megatron-core computes the down-projections on the rank's own
// sequence-parallel shard of T/tp tokens with replicated weights (no all-gather of the 7168-wide hidden
// states), normalises the latents there (q_layernorm, kv_layernorm), and all-gathers the latents instead:
// q_compressed and kv_compressed as the SP input of the column-parallel q_up / kv_up projections, the
// shared RoPE key k_pe by gather_from_sequence_parallel_region. q_up and kv_up are column-parallel over
// heads, linear_proj row-parallel with the usual reduce-scatter.
//   q_down  [T/tp x d] x [d x q_lora]              (absent with q_lora = 0: q is a column-parallel
//   kv_down [T/tp x d] x [d x (kv_lora + rope)]     projection of the gathered hidden states)
//   latent RMSNorms, all-gathers of the latents, q_up [T x q_lora] x [q_lora x h/tp (nope + rope)],
//   kv_up [T x kv_lora] x [kv_lora x h/tp (nope + v)], RoPE on q_pe and k_pe, core attention with a
//   (nope + rope)-wide query/key and a v-wide value, out [T x h/tp v] x [.. x d], reduce-scatter.
// Approximated: the norms and RoPE as HBM traffic (read + write of the tensors they touch); the key's
// assembly (k_nope next to k_pe broadcast over heads, torch.cat) and the split views are not counted.
struct MlaShapes {
  RankGemm q_down;   // m = 0 when q_lora = 0
  RankGemm kv_down;
  Bytes latent_norm_bytes = 0;  // q_layernorm + kv_layernorm on T/tp tokens (read + write)
  Bytes q_all_gather_bytes = 0;   // S: T x q_lora latents (q_lora = 0: T x d hidden states)
  Bytes kv_all_gather_bytes = 0;  // S: T x kv_lora latents
  Bytes rope_all_gather_bytes = 0;  // S: T x rope (k_pe, shared by all heads)
  RankGemm q_up;     // q_lora = 0: linear_q_proj, T x h/tp (nope + rope) x d
  RankGemm kv_up;
  Bytes rope_bytes = 0;  // RoPE on q_pe (T x h/tp x rope) and k_pe (T x rope), read + write
  double attention_flops = 0;  // QK^T at (nope + rope) and PV at v per head; causal halves it
  std::int64_t attention_tiles = 0;
  RankGemm out;
  Bytes reduce_scatter_bytes = 0;
};
MlaShapes mla_shapes(const Transformer& t, int tp);

// attention_ulysses per rank (DeepSpeed-Ulysses; CommFuse Alg. 5): all-to-all of Q, K, V from
// sequence shards to head shards, attention over the full sequence for heads/tp heads, all-to-all of
// the output back to sequence shards.
struct UlyssesShapes {
  Bytes qkv_all_to_all_bytes = 0;  // S: each rank's send buffer (3 x batch x seq/tp x d_model)
  double attention_flops = 0;
  std::int64_t attention_tiles = 0;
  Bytes out_all_to_all_bytes = 0;  // S: batch x seq/tp x d_model
};

// decode_stack per rank (delayed-tp-blog, "Theoretical Exposed Wait-time"): each module streams its
// weight shard from HBM; the attention module streams d x (q + 2 kv) + q x d weights, the (SwiGLU,
// Llama3 as in the blog's "Implementation Details") MLP 3 x d x ffn, both divided by tp. With
// kv_heads == heads and ffn = 8d/3 these are the blog's 4 d^2 p / L and 8 d^2 p / L.
struct DecodeShapes {
  Bytes attention_weight_bytes = 0;  // per rank
  Bytes mlp_weight_bytes = 0;        // per rank
  Bytes all_reduce_bytes = 0;        // S: one token's d_model hidden state (bf16)
};

// moe per EP rank for one set of routed counts (the whole layer, or one token chunk of it):
// tokens[src][expert] slots. Rank r owns experts [r E/EP, (r+1) E/EP); the rows of its expert e are
// the slots every source sends to e, in source order.
struct MoeShapes {
  CountMatrix tokens;                        // [src][expert]
  std::vector<std::vector<Bytes>> dispatch;         // [src][dst] bytes (d_model x dtype per slot)
  std::vector<std::vector<Bytes>> combine;          // the transpose: expert outputs back to their tokens' ranks
  std::vector<std::vector<RankGemm>> up;     // [rank][local expert]: rows x 2 d_ffn_expert x d_model
  std::vector<std::vector<RankGemm>> down;   // [rank][local expert]: rows x d_model x d_ffn_expert
  std::vector<Bytes> activation_bytes;       // [rank]: SwiGLU over its rows (read 2f, write f)
};
// The layer's routing (cost_model/moe_routing.hpp route_tokens; InputError for a bad histogram).
MoeRouting moe_routing(const Moe& m);
MoeShapes moe_shapes(const Moe& m, const CountMatrix& tokens);
// Chunk c of `chunks` of the routed counts: each (source, expert) count split as evenly as possible
// (the first count % chunks chunks one slot more).
CountMatrix moe_chunk_tokens(const CountMatrix& tokens, int chunks, int c);
// The router GEMM (tokens x experts x d_model) and the shared experts' two GEMMs (tokens x
// 2 s f x d_model, tokens x d_model x s f: s gated FFNs side by side) with their activation bytes.
RankGemm moe_router_gemm(const Moe& m);
RankGemm moe_shared_up(const Moe& m);
RankGemm moe_shared_down(const Moe& m);
Bytes moe_shared_activation_bytes(const Moe& m);

// Model FLOPs of one MoE layer's forward per GPU (the MFU of a moe training step, sim/metrics.cpp): the
// EP ranks' router, shared experts and routed experts' GEMMs on the routed slots (dropped ones left
// out), averaged over the EP ranks (an ETP member routes its EP rank's counts, so each of its GPUs runs
// that share). Tokens of one step: every GPU's `tokens` (ep x expert_tp x tokens).
double moe_forward_flops(const Moe& m);
std::int64_t moe_step_tokens(const Moe& m);

GemmCollective gemm_collective_shape(const Workload& w);
MlpShapes mlp_shapes(const MlpTpSp& mlp, int tp);
AttentionShapes attention_shapes(const AttentionTpSp& att, int tp);
UlyssesShapes ulysses_shapes(const AttentionUlysses& att, int tp);
DecodeShapes decode_shapes(const DecodeStack& dec, int tp);
// One transformer layer as the attention_tpsp and mlp_tpsp workloads it is made of.
AttentionTpSp transformer_attention(const Transformer& t);
MlpTpSp transformer_mlp(const Transformer& t);

// A built-in model (sim/model_config.hpp's names, e.g. "llama3-70b"): layers, widths and heads filled
// into a Transformer (batch, seq and dtype kept from `base`). nullopt for an unknown name.
std::optional<Transformer> named_model(const std::string& name, const Transformer& base = {});

// Bytes of a tokens x width activation.
Bytes activation_bytes(std::int64_t tokens, std::int64_t width, DType dtype);

// Throws std::invalid_argument (naming the field, "workload.<field>") when a shape cannot be sharded:
// non-positive sizes, or a sharded dimension not divisible by tp.
void validate_workload(const Workload& w);

}  // namespace overlap::sim
