#pragma once
// Workloads (design.md "Workloads"). Shapes are written as the whole layer sees them (global batch x
// sequence tokens, model width); builders derive per-rank shapes from the parallelism: TP shards
// weights (column-parallel: N / tp; row-parallel: K / tp) and SP shards activations (tokens / tp).
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "cost_model/hardware_profile.hpp"

namespace overlap::sim {

enum class Primitive : std::uint8_t { all_reduce, reduce_scatter, all_gather, all_to_all };
const char* primitive_name(Primitive p);

// One GEMM with a collective after it (all_reduce, reduce_scatter, all_to_all) or an all_gather
// before it (FlashOverlap operator level; CommFuse row/column-parallel projections).
// m, n, k are the GEMM each rank computes (per-rank shape, as FlashOverlap's tables give it).
struct GemmCollective {
  std::int64_t m = 0, n = 0, k = 0;
  DType dtype = DType::bf16;
  Primitive primitive = Primitive::all_reduce;
  bool rmsnorm_after = false;  // FlashOverlap: the post-reorder cost lands in the following RMSNorm
};

// all-gather -> column-parallel GEMM (d_model -> ffn, gated: 2*ffn) -> activation -> row-parallel
// GEMM (ffn -> d_model) -> reduce-scatter. tokens = batch * seq (global, before SP sharding).
struct MlpTpSp {
  std::int64_t tokens = 0;
  std::int64_t d_model = 0;
  std::int64_t d_ffn = 0;
  bool gated = true;  // SwiGLU: the column-parallel GEMM has 2 * d_ffn outputs
  DType dtype = DType::bf16;
  // false: every rank already holds the whole input, so no all-gather precedes the column-parallel
  // GEMM and only the reduce-scatter is communicated (commfuse-paper Sec. 5 "MLP Layer": the
  // column-parallel projection keeps its conventional design; the experiment measures FuseRS alone).
  bool gather_input = true;
};

// all-gather -> QKV -> attention -> output projection -> reduce-scatter.
struct AttentionTpSp {
  std::int64_t batch = 0, seq = 0;
  std::int64_t d_model = 0;
  std::int64_t heads = 0, kv_heads = 0;  // kv_heads < heads: GQA
  bool causal = true;
  DType dtype = DType::bf16;
  bool gather_input = true;  // as MlpTpSp::gather_input (commfuse-paper Sec. 5 "Attention Layer")
};

// all-to-all (sequence -> heads) -> attention -> all-to-all (heads -> sequence) (DeepSpeed-Ulysses,
// CommFuse Alg. 5).
struct AttentionUlysses {
  std::int64_t batch = 0, seq = 0;
  std::int64_t d_model = 0;
  std::int64_t heads = 0;
  bool causal = true;
  DType dtype = DType::bf16;
};

// Batch-1 decode over `layers` layers, bound by weight streaming (delayed-tp-blog).
struct DecodeStack {
  int layers = 0;
  std::int64_t d_model = 0;
  std::int64_t d_ffn = 0;
  std::int64_t heads = 0, kv_heads = 0;
  DType dtype = DType::fp8;
  double allreduce_us = -1;  // tau_c: measured all-reduce latency; < 0 = from the collective model
};

// Layers composed into a model step (e.g. Llama-3-70B, TP=8): attention + MLP per layer.
struct Transformer {
  std::string model;  // a named configuration ("llama3-8b", "llama3-70b") or "custom"
  int layers = 0;
  std::int64_t batch = 0, seq = 0;
  std::int64_t d_model = 0, d_ffn = 0, heads = 0, kv_heads = 0;
  DType dtype = DType::bf16;
};

struct Workload {
  std::string kind;  // gemm_collective | mlp_tpsp | attention_tpsp | attention_ulysses | decode_stack | transformer
  int tp = 1;        // ranks in the tensor/sequence-parallel group
  std::variant<GemmCollective, MlpTpSp, AttentionTpSp, AttentionUlysses, DecodeStack, Transformer> shape;
};

}  // namespace overlap::sim
