#include "sim/backward_shapes.hpp"

#include <algorithm>
#include <stdexcept>
#include <variant>

#include <fmt/format.h>

namespace overlap::sim {

RankGemm dgrad_of(const RankGemm& f) { return RankGemm{f.m, f.k, f.n, f.dtype}; }
RankGemm wgrad_of(const RankGemm& f) { return RankGemm{f.k, f.n, f.m, f.dtype}; }

namespace {

// FlashAttention-2 (Dao, 2023, Sec. 3.1.2 and the FLOP count of Sec. 4.1): the backward runs five
// matmuls per block against the forward's two (it recomputes the scores), 2.5 times the forward's FLOPs.
constexpr double kAttentionBackwardFactor = 2.5;

double gemm_flops(const RankGemm& g) {
  return 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
}

BackwardStep linear_step(LinearBackward l) {
  BackwardStep s;
  s.kind = BackwardStep::Kind::linear;
  s.name = l.name;
  s.dtype = l.dgrad.dtype;
  s.linear = std::move(l);
  return s;
}

BackwardStep memory_step(std::string name, Bytes bytes, DType dtype) {
  BackwardStep s;
  s.kind = BackwardStep::Kind::memory;
  s.name = std::move(name);
  s.bytes = bytes;
  s.dtype = dtype;
  return s;
}

// A row-parallel linear of the forward GEMM `f` whose output left through `after` (S = `bytes`).
LinearBackward row_parallel(const std::string& name, const RankGemm& f, Primitive after, Bytes bytes) {
  LinearBackward l;
  l.name = name;
  l.dgrad = dgrad_of(f);
  l.wgrad = wgrad_of(f);
  // The conjugates: reduce-scatter -> all-gather, all-to-all -> all-to-all, all-reduce -> identity.
  if (after == Primitive::reduce_scatter || after == Primitive::all_to_all) {
    l.gather = after == Primitive::all_to_all ? Primitive::all_to_all : Primitive::all_gather;
    l.gather_bytes = bytes;
  }
  return l;
}

// A column-parallel linear of the forward GEMM `f`: with sequence parallelism (`gathered`) its input
// was all-gathered, so dX is reduce-scattered and the input gathered again for wgrad; without, the
// input was whole on every rank (Megatron's f operator) and dX is all-reduced.
LinearBackward column_parallel(const std::string& name, const RankGemm& f, bool gathered) {
  LinearBackward l;
  l.name = name;
  l.dgrad = dgrad_of(f);
  l.wgrad = wgrad_of(f);
  const Bytes dx_bytes = activation_bytes(f.m, f.k, f.dtype);
  l.scatter = gathered ? Primitive::reduce_scatter : Primitive::all_reduce;
  l.scatter_bytes = dx_bytes;
  l.regather_bytes = gathered ? dx_bytes : 0;
  return l;
}

std::vector<BackwardStep> gemm_collective_backward(const GemmCollective& g, int tp) {
  const RankGemm f{g.m, g.n, g.k, g.dtype};
  std::vector<BackwardStep> out;
  if (g.rmsnorm_after) {
    // RMSNorm's backward reads dY and X and writes dX on the rows the rank holds.
    Bytes rows_bytes = activation_bytes(g.m, g.n, g.dtype);
    if (g.primitive == Primitive::reduce_scatter) rows_bytes /= tp;
    out.push_back(memory_step("rmsnorm", 3 * rows_bytes, g.dtype));
  }
  if (g.primitive == Primitive::all_gather) {
    out.push_back(linear_step(column_parallel("gemm", f, true)));
  } else {
    out.push_back(linear_step(row_parallel("gemm", f, g.primitive, activation_bytes(g.m, g.n, g.dtype))));
  }
  return out;
}

std::vector<BackwardStep> mlp_backward(const MlpTpSp& mlp, int tp, const std::string& prefix) {
  const MlpShapes s = mlp_shapes(mlp, tp);
  const std::int64_t ffn_rank = mlp.d_ffn / tp;
  std::vector<BackwardStep> out;
  out.push_back(linear_step(row_parallel(prefix + "fc2", s.row, Primitive::reduce_scatter, s.reduce_scatter_bytes)));
  // SwiGLU's backward reads dH and both projections and writes their two gradients (5 x ffn/tp per
  // token against the forward's 3); GELU's reads dH and its input and writes one gradient (3 against 2).
  const std::int64_t widths = mlp.gated ? 5 * ffn_rank : 3 * ffn_rank;
  out.push_back(memory_step(prefix + "activation", activation_bytes(mlp.tokens, widths, mlp.dtype), mlp.dtype));
  out.push_back(linear_step(column_parallel(prefix + "fc1", s.col, mlp.gather_input)));
  return out;
}

// Core attention's backward (FlashAttention-2's: kAttentionBackwardFactor x the forward's FLOPs) in the
// forward's tiles; the forward's FLOPs again when recomputed (selective recomputation).
BackwardStep core_attention_step(const std::string& prefix, double forward_flops, std::int64_t tiles, DType dtype) {
  BackwardStep core;
  core.kind = BackwardStep::Kind::flops;
  core.name = prefix + "core";
  core.flops = kAttentionBackwardFactor * forward_flops;
  core.tiles = tiles;
  core.dtype = dtype;
  core.recompute_flops = forward_flops;
  return core;
}

// The first two steps of an attention block's backward (the forward's last two in reverse): the
// row-parallel output projection (dY all-gathered), then core attention. `Shapes`: AttentionShapes or
// MlaShapes, which name these parts alike.
template <class Shapes>
std::vector<BackwardStep> out_proj_and_core_backward(const Shapes& s, DType dtype, const std::string& prefix) {
  std::vector<BackwardStep> out;
  out.push_back(linear_step(row_parallel(prefix + "out_proj", s.out, Primitive::reduce_scatter, s.reduce_scatter_bytes)));
  out.push_back(core_attention_step(prefix, s.attention_flops, s.attention_tiles, dtype));
  return out;
}

std::vector<BackwardStep> attention_backward(const AttentionTpSp& att, int tp, const std::string& prefix) {
  const AttentionShapes s = attention_shapes(att, tp);
  std::vector<BackwardStep> out = out_proj_and_core_backward(s, att.dtype, prefix);
  out.back().unfused = s.unfused;
  out.push_back(linear_step(column_parallel(prefix + "qkv", s.qkv, att.gather_input)));
  return out;
}

// A linear with replicated weights on the rank's own sequence-parallel tokens (Megatron-core's
// "duplicated" TELinear: MLA's down-projections): dgrad and wgrad with no collective inside the layer.
// dX is complete for the rank's tokens (the heads' partial sums were reduce-scattered at the latents);
// dW is a partial sum over the TP group's token shards, which Megatron all-reduces over TP once per step
// after the backward (finalize_model_grads, _allreduce_non_tensor_model_parallel_grads: parameters with
// the sequence_parallel attribute, as the layernorms'), outside the layer: the MoE transformer's step
// issues it after the backward (sim/schemes/moe_transformer.cpp).
LinearBackward duplicated(const std::string& name, const RankGemm& f) {
  LinearBackward l;
  l.name = name;
  l.dgrad = dgrad_of(f);
  l.wgrad = wgrad_of(f);
  return l;
}

// MLA's backward (sim/workload_shapes.hpp mla_shapes), the forward in reverse with Megatron's SP
// conjugates: out_proj row-parallel (dY all-gathered), core attention, RoPE; kv_up column-parallel:
// d(kv latent) reduce-scattered, together with d(k_pe) (the backward of k_pe's
// gather_from_sequence_parallel_region is a reduce-scatter; Megatron issues it as its own call, counted
// here in kv_up's), the latent gathered again for wgrad; q_up likewise; the latent norms' backward on the
// rank's tokens; then the down-projections' dgrad and wgrad on the rank's tokens with no collective
// (duplicated above). The residual sum of the two down-projections' dX is elementwise: not counted.
std::vector<BackwardStep> mla_backward(const Transformer& t, int tp, const std::string& prefix) {
  const MlaShapes s = mla_shapes(t, tp);
  std::vector<BackwardStep> out = out_proj_and_core_backward(s, t.dtype, prefix);
  // RoPE's backward rotates the gradients back: the forward's read + write again.
  out.push_back(memory_step(prefix + "rope", s.rope_bytes, t.dtype));
  LinearBackward kv_up = column_parallel(prefix + "kv_up", s.kv_up, true);
  kv_up.scatter_bytes += s.rope_all_gather_bytes;
  out.push_back(linear_step(std::move(kv_up)));
  out.push_back(linear_step(column_parallel(prefix + (s.q_down.m > 0 ? "q_up" : "q_proj"), s.q_up, true)));
  // RMSNorm's backward reads dY and X and writes dX: 3 tensors against the forward's 2.
  out.push_back(memory_step(prefix + "latent_norm", s.latent_norm_bytes / 2 * 3, t.dtype));
  out.push_back(linear_step(duplicated(prefix + "kv_down", s.kv_down)));
  if (s.q_down.m > 0) out.push_back(linear_step(duplicated(prefix + "q_down", s.q_down)));
  return out;
}

std::vector<BackwardStep> ulysses_backward(const AttentionUlysses& att, int tp) {
  const UlyssesShapes s = ulysses_shapes(att, tp);
  // The output's all-to-all runs backwards first (dO from sequence to head shards), then attention's
  // backward, then dQ, dK, dV back to sequence shards: the forward's all-to-alls in reverse.
  BackwardStep u;
  u.kind = BackwardStep::Kind::ulysses;
  u.name = "ulysses";
  u.ulysses_in_bytes = s.out_all_to_all_bytes;
  u.flops = kAttentionBackwardFactor * s.attention_flops;
  u.tiles = s.attention_tiles;
  u.bytes = s.qkv_all_to_all_bytes;
  u.heads = att.heads / tp;
  u.dtype = att.dtype;
  u.recompute_flops = s.attention_flops;
  return {u};
}

}  // namespace

std::vector<Block> layer_blocks(const Workload& w) {
  if (w.kind == WorkloadKind::transformer) return {Block::attention, Block::mlp};
  return {Block::whole};
}

int layer_count(const Workload& w) {
  if (const auto* t = std::get_if<Transformer>(&w.shape)) return t->layers;
  return 1;
}

std::vector<BackwardStep> backward_steps(const Workload& w, Block block) {
  const int tp = std::max(1, w.tp);
  if (const auto* t = std::get_if<Transformer>(&w.shape)) {
    if (block == Block::attention)
      return t->mla ? mla_backward(*t, tp, "attn.") : attention_backward(transformer_attention(*t), tp, "attn.");
    if (block == Block::mlp) return mlp_backward(transformer_mlp(*t), tp, "mlp.");
    throw std::invalid_argument("a transformer layer has attention and MLP blocks");
  }
  if (const auto* g = std::get_if<GemmCollective>(&w.shape)) return gemm_collective_backward(*g, tp);
  if (const auto* m = std::get_if<MlpTpSp>(&w.shape)) return mlp_backward(*m, tp, "mlp.");
  if (const auto* a = std::get_if<AttentionTpSp>(&w.shape)) return attention_backward(*a, tp, "attn.");
  if (const auto* u = std::get_if<AttentionUlysses>(&w.shape)) return ulysses_backward(*u, tp);
  throw std::invalid_argument(fmt::format("workload.kind: '{}' has no backward pass (decode is inference)", workload_kind_name(w.kind)));
}

double forward_flops(const Workload& w, Block block) {
  const int tp = std::max(1, w.tp);
  auto mlp = [&](const MlpTpSp& m) {
    const MlpShapes s = mlp_shapes(m, tp);
    return gemm_flops(s.col) + gemm_flops(s.row);
  };
  auto attention = [&](const AttentionTpSp& a) {
    const AttentionShapes s = attention_shapes(a, tp);
    return gemm_flops(s.qkv) + gemm_flops(s.out) + s.attention_flops;
  };
  auto mla = [&](const Transformer& t) {
    const MlaShapes s = mla_shapes(t, tp);
    return gemm_flops(s.q_down) + gemm_flops(s.kv_down) + gemm_flops(s.q_up) + gemm_flops(s.kv_up) +
           s.attention_flops + gemm_flops(s.out);
  };
  if (const auto* t = std::get_if<Transformer>(&w.shape)) {
    if (block != Block::attention) return mlp(transformer_mlp(*t));
    return t->mla ? mla(*t) : attention(transformer_attention(*t));
  }
  if (const auto* g = std::get_if<GemmCollective>(&w.shape)) return gemm_flops(RankGemm{g->m, g->n, g->k, g->dtype});
  if (const auto* m = std::get_if<MlpTpSp>(&w.shape)) return mlp(*m);
  if (const auto* a = std::get_if<AttentionTpSp>(&w.shape)) return attention(*a);
  if (const auto* u = std::get_if<AttentionUlysses>(&w.shape)) return ulysses_shapes(*u, tp).attention_flops;
  if (const auto* e = std::get_if<Moe>(&w.shape)) return moe_forward_flops(*e);
  return 0;
}

double output_layer_flops(const Workload& w) {
  const auto* t = std::get_if<Transformer>(&w.shape);
  if (!t || !t->step_kernels || t->vocab <= 0 || t->moe || t->mla) return 0;
  const std::int64_t tp = std::max(1, w.tp);
  return gemm_flops(RankGemm{t->batch * t->seq, (t->vocab + tp - 1) / tp, t->d_model, t->dtype});
}

double workload_forward_flops(const Workload& w) {
  double per_layer = 0;
  for (const Block b : layer_blocks(w)) per_layer += forward_flops(w, b);
  const auto* t = std::get_if<Transformer>(&w.shape);
  if (!t || !t->moe) return per_layer * layer_count(w) + output_layer_flops(w);
  const int dense = std::min(t->layers, t->dense_layers);
  const double attention = forward_flops(w, Block::attention);
  return attention * t->layers + (per_layer - attention) * dense + moe_forward_flops(*t->moe) * (t->layers - dense);
}

std::int64_t block_parameters(const Workload& w, Block block) {
  const int tp = std::max(1, w.tp);
  auto weights = [](const RankGemm& g) { return g.k * g.n; };
  auto mlp = [&](const MlpTpSp& m) {
    const MlpShapes s = mlp_shapes(m, tp);
    return weights(s.col) + weights(s.row);
  };
  auto attention = [&](const AttentionTpSp& a) {
    const AttentionShapes s = attention_shapes(a, tp);
    return weights(s.qkv) + weights(s.out);
  };
  auto mla = [&](const Transformer& t) {
    // The down-projections' weights are replicated: every rank holds all of them.
    const MlaShapes s = mla_shapes(t, tp);
    return (s.q_down.m > 0 ? weights(s.q_down) : 0) + weights(s.kv_down) + weights(s.q_up) + weights(s.kv_up) +
           weights(s.out);
  };
  if (const auto* t = std::get_if<Transformer>(&w.shape)) {
    if (block != Block::attention) return mlp(transformer_mlp(*t));
    return t->mla ? mla(*t) : attention(transformer_attention(*t));
  }
  if (const auto* g = std::get_if<GemmCollective>(&w.shape)) return g->k * g->n;
  if (const auto* m = std::get_if<MlpTpSp>(&w.shape)) return mlp(*m);
  if (const auto* a = std::get_if<AttentionTpSp>(&w.shape)) return attention(*a);
  return 0;  // Ulysses' block is core attention alone: no weights
}

std::int64_t step_tokens(const Workload& w) {
  if (const auto* t = std::get_if<Transformer>(&w.shape)) return t->batch * t->seq;
  if (const auto* g = std::get_if<GemmCollective>(&w.shape)) return g->m;
  if (const auto* m = std::get_if<MlpTpSp>(&w.shape)) return m->tokens;
  if (const auto* a = std::get_if<AttentionTpSp>(&w.shape)) return a->batch * a->seq;
  if (const auto* u = std::get_if<AttentionUlysses>(&w.shape)) return u->batch * u->seq;
  if (const auto* e = std::get_if<Moe>(&w.shape)) return moe_step_tokens(*e);
  return 0;
}

DType workload_dtype(const Workload& w) {
  return std::visit([](const auto& shape) { return shape.dtype; }, w.shape);
}

}  // namespace overlap::sim
