// A transformer of a mixture-of-experts model (Transformer::moe: Mixtral, Qwen3-MoE): per layer the
// attention block, then the FFN, which is the MoE block (router, dispatch all-to-allv, grouped expert
// GEMMs, combine all-to-allv, shared experts) except in the first dense_layers layers (DeepSeek's
// first_k_dense_replace), which keep the dense MLP.
//
// Parallelism as Megatron-core runs a MoE model with tensor and expert parallelism (Megatron-core MoE
// docs, "MoE Parallel Folding"; Liu et al., "MoE Parallel Folding", arXiv:2504.14960): the attention
// is tensor- and sequence-parallel over the TP group, and the MoE layer's expert-parallel group is
// folded onto the same GPUs (ep = tp, expert tensor parallelism 1). Megatron-core requires sequence
// parallelism when EP and TP are combined (--sequence-parallel with --expert-model-parallel-size and
// --tensor-model-parallel-size > 1), so after the attention's reduce-scatter every rank holds
// batch x seq / tp tokens: those are what it routes, with no all-gather before the MoE block, and the
// combine returns them to it for the next layer's all-gather.
//
// DeepSeek's multi-head latent attention (Transformer::mla) takes the attention block's place with no
// overlap either (NoOverlapBlocks::mla_attention forward, sim/backward_shapes.cpp mla_backward
// backward): down-projections on the rank's own tokens, all-gathers of the latents, column-parallel
// up-projections, core attention, row-parallel output projection (sim/workload_shapes.hpp mla_shapes).
//
// Schemes: the MoE block runs as the moe scheme chosen (no_overlap: no overlap; moe_pipeline: its
// token chunks; moe_flashoverlap: its wave groups; moe_tile_fused: its fused kernels); the attention
// and the dense MLPs run with no overlap, as no_overlap builds attention_tpsp and mlp_tpsp, so the
// difference between two schemes is the MoE block's overlap alone. Schemes built for dense TP layers
// (async_tp, flux, ...) do not apply to a MoE model (sim/schemes/registry.cpp): they are refused, never
// run with a dense MLP in place of the experts. Every layer routes the same counts (the routing is the
// layer's: one histogram, or one Zipf draw from the seed).
//
// Training step (workload.pass backward | step; docs/guide/moe.md "Training step"): the forward of every
// layer, then the backward of every layer in reverse order, as training_step.cpp runs a dense
// transformer's: per layer the FFN's backward (the MoE block's backward form of the scheme:
// moe_backward.cpp for no_overlap and moe_pipeline, moe_flashoverlap's own; the dense MLP's for the first
// dense_layers layers), then the attention's, both with no overlap as no_overlap runs them (Megatron's
// SP backward, Korthikanti et al. Sec. 4.2.2: sim/backward_shapes.hpp; column_backward as no_overlap
// gives it). Recomputation as for a dense transformer (Korthikanti et al. Sec. 5): selective redoes core
// attention before its backward (the MoE block has no core attention), full redoes the layer's whole
// forward, its MoE block's all-to-alls included, before the layer's backward. No data parallelism (the
// expert weights' gradients would reduce over an expert-data-parallel group not modelled).
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "cost_model/input_error.hpp"
#include "sim/backward_shapes.hpp"
#include "sim/schemes/moe.hpp"
#include "sim/schemes/training_step.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

namespace {

class NoOverlapBlocks {
 public:
  NoOverlapBlocks(GraphBuilder& b, const RankStreams& st, bool collectives_only)
      : b_(b), st_(st), compute_(!collectives_only) {}

  // A collective on the comm stream, rank r's after deps[r] (empty: stream order alone).
  PerRank collective(Primitive p, Bytes bytes, const PerRank& deps, const std::string& name) {
    CollectiveSpec spec;
    spec.name = name;
    spec.primitive = p;
    spec.bytes = bytes;
    spec.streams = st_.comm;
    for (const OpId d : deps) spec.deps.push_back(d == kNoOp ? std::vector<OpId>{} : std::vector<OpId>{d});
    return b_.add_collective(spec);
  }

  // A GEMM on every rank's compute stream after deps[r] (empty: stream order alone); nothing when
  // only the collectives are built.
  PerRank gemm(const GemmShape& g, const PerRank& deps, const std::string& name) {
    PerRank out;
    if (!compute_) return out;
    for (int r = 0; r < b_.ranks(); ++r) {
      GemmOptions o;
      o.name = name;
      if (!deps.empty() && deps[at(r)] != kNoOp) o.deps = {deps[at(r)]};
      out.push_back(b_.add_gemm(r, st_.compute[at(r)], g, o));
    }
    return out;
  }

  // An HBM-bound kernel on every rank's compute stream after deps[r] (empty: stream order alone).
  PerRank memory(Bytes bytes, const std::string& name, const PerRank& deps = {}) {
    PerRank out;
    if (!compute_) return out;
    for (int r = 0; r < b_.ranks(); ++r) {
      MemoryKernel k;
      k.name = name;
      k.bytes = bytes;
      if (!deps.empty() && deps[at(r)] != kNoOp) k.deps = {deps[at(r)]};
      out.push_back(b_.add_memory(r, st_.compute[at(r)], k));
    }
    return out;
  }

  void flops(double total, std::int64_t tiles, DType dtype, const std::string& name) {
    if (!compute_) return;
    for (int r = 0; r < b_.ranks(); ++r) b_.add_flop_kernel(r, st_.compute[at(r)], name, total, tiles, dtype);
  }

  // data_slicing.cpp's emit_attention with one slice (what no_overlap builds for attention_tpsp):
  // all-gather, QKV, core attention, output projection, reduce-scatter. Returns the reduce-scatter.
  PerRank attention(const AttentionTpSp& att, int tp, const PerRank& start, const std::string& prefix) {
    const AttentionShapes s = attention_shapes(att, tp);
    const std::int64_t tokens = att.batch * att.seq;
    const Bytes rows_bytes = tokens * att.d_model * dtype_bytes(att.dtype);
    const PerRank ag = collective(Primitive::all_gather, rows_bytes, start, prefix + "attn.all_gather");
    gemm(GemmShape{tokens, s.qkv.n, s.qkv.k, att.dtype}, ag, prefix + "attn.qkv");
    flops(s.attention_flops, s.attention_tiles, att.dtype, prefix + "attn.core");
    const PerRank out = gemm(GemmShape{tokens, s.out.n, s.out.k, att.dtype}, {}, prefix + "attn.out_proj");
    return collective(Primitive::reduce_scatter, rows_bytes, out, prefix + "attn.reduce_scatter");
  }

  // Multi-head latent attention with no overlap (sim/workload_shapes.hpp mla_shapes: Megatron-core's
  // MLASelfAttention under TP + SP): the down-projections and the latent norms on the rank's own tokens,
  // the three all-gathers (q latent, kv latent, k_pe) one after another on the comm stream, q_up after
  // its gather, kv_up after its, RoPE after k_pe's, core attention, the output projection,
  // reduce-scatter. With q_lora = 0 the query's gather is of the hidden states (linear_q_proj's SP input)
  // and needs no down-projection. Returns the reduce-scatter.
  PerRank mla_attention(const Transformer& t, int tp, const PerRank& start, const std::string& prefix) {
    const MlaShapes s = mla_shapes(t, tp);
    const bool q_latent = s.q_down.m > 0;
    if (q_latent) gemm(s.q_down, start, prefix + "attn.q_down");
    const PerRank kv_down = gemm(s.kv_down, q_latent ? PerRank{} : start, prefix + "attn.kv_down");
    const PerRank norm = memory(s.latent_norm_bytes, prefix + "attn.latent_norm");
    // A collectives-only graph has no compute ops: its gathers follow the layer's start.
    const PerRank latents = norm.empty() ? start : norm;
    const PerRank ag_q = collective(Primitive::all_gather, s.q_all_gather_bytes, q_latent ? latents : start,
                                    prefix + (q_latent ? "attn.q_latent_all_gather" : "attn.all_gather"));
    const PerRank ag_kv = collective(Primitive::all_gather, s.kv_all_gather_bytes, latents, prefix + "attn.kv_latent_all_gather");
    const PerRank ag_pe = collective(Primitive::all_gather, s.rope_all_gather_bytes, kv_down.empty() ? start : kv_down,
                                     prefix + "attn.k_pe_all_gather");
    gemm(s.q_up, ag_q, prefix + (q_latent ? "attn.q_up" : "attn.q_proj"));
    gemm(s.kv_up, ag_kv, prefix + "attn.kv_up");
    memory(s.rope_bytes, prefix + "attn.rope", ag_pe);
    flops(s.attention_flops, s.attention_tiles, t.dtype, prefix + "attn.core");
    const PerRank out = gemm(s.out, {}, prefix + "attn.out_proj");
    return collective(Primitive::reduce_scatter, s.reduce_scatter_bytes, out, prefix + "attn.reduce_scatter");
  }

  // data_slicing.cpp's emit_mlp with one slice: all-gather, gate+up, activation, down, reduce-scatter.
  PerRank mlp(const MlpTpSp& mlp, int tp, const PerRank& start, const std::string& prefix) {
    const MlpShapes s = mlp_shapes(mlp, tp);
    const Bytes rows_bytes = mlp.tokens * mlp.d_model * dtype_bytes(mlp.dtype);
    const PerRank ag = collective(Primitive::all_gather, rows_bytes, start, prefix + "mlp.all_gather");
    gemm(GemmShape{mlp.tokens, s.col.n, s.col.k, mlp.dtype}, ag, prefix + "mlp.fc1");
    memory(s.activation_bytes / mlp.tokens * mlp.tokens, prefix + "mlp.act");
    const PerRank row = gemm(GemmShape{mlp.tokens, s.row.n, s.row.k, mlp.dtype}, {}, prefix + "mlp.fc2");
    return collective(Primitive::reduce_scatter, rows_bytes, row, prefix + "mlp.reduce_scatter");
  }

 private:
  static std::size_t at(int r) { return static_cast<std::size_t>(r); }

  GraphBuilder& b_;
  const RankStreams& st_;
  bool compute_;
};

// The attention's and the dense MLP's backward (sim/backward_shapes.hpp's steps) as no_overlap runs a
// dense transformer's: PassEmitter's own patterns, each collective before or after its GEMM, on the
// layer's streams. Only the backward is emitted here (the forward is NoOverlapBlocks').
class DenseBackward final : public PassEmitter {
 public:
  DenseBackward(GraphBuilder& b, const RankStreams& st, bool collectives_only, const Workload& w, ColumnBackward column)
      : PassEmitter(b, st, collectives_only), w_(w), column_(column) {}

  PerRank forward(Block, const PerRank& start, const std::string&) override { return start; }

  // One block's backward steps of layer `layer` ("L3."), after `at`.
  PerRank block(Block block, const std::string& layer, PerRank at) {
    for (const BackwardStep& s : backward_steps(w_, block)) at = step(s, layer, at);
    return at;
  }

 private:
  PerRank step(const BackwardStep& s, const std::string& layer, const PerRank& at) {
    const std::string name = "bwd." + layer + s.name;
    switch (s.kind) {
      case BackwardStep::Kind::linear: return emit_linear_backward(*this, s.linear, column_, name, at);
      case BackwardStep::Kind::memory: return memory(s.bytes, at, name);
      case BackwardStep::Kind::flops: {
        // Selective recomputation (Megatron-core's recompute module core_attn): core attention's forward
        // again right before its backward.
        const bool redo = w_.training.recompute == Recompute::selective && s.recompute_flops > 0;
        const PerRank from = redo ? flops(s.recompute_flops, s.tiles, s.dtype, at, "recompute." + layer + s.name) : at;
        return flops(s.flops, s.tiles, s.dtype, from, name);
      }
      case BackwardStep::Kind::ulysses: break;
    }
    throw std::logic_error("a transformer's attention is tensor- and sequence-parallel: no Ulysses step");
  }

  const Workload& w_;
  ColumnBackward column_;
};

}  // namespace

BuiltScheme build_moe_transformer(const BuildContext& ctx, const MoeLayerOptions& options) {
  MoeBlockForms forms;
  forms.forward = [&options](GraphBuilder& b, const RankStreams& st, const Moe& m, const MoeRouting& routing,
                             const std::vector<OpId>& start, const std::string& prefix) {
    return emit_moe_layer(b, st, m, routing, options, start, prefix);
  };
  forms.backward = [&options](GraphBuilder& b, const RankStreams& st, const Moe& m, const MoeRouting& routing,
                              const std::vector<OpId>& start, const std::string& prefix) {
    return emit_moe_backward(b, st, m, routing, options, start, prefix);
  };
  forms.column = options.column;
  return build_moe_transformer(ctx, options.collectives_only, forms);
}

BuiltScheme build_moe_transformer(const BuildContext& ctx, bool collectives_only, const MoeBlockForms& forms) {
  const Workload& w = ctx.workload;
  const Transformer& t = std::get<Transformer>(w.shape);
  const Moe& m = t.moe.value();
  if (w.training.parallel.dp > 1)
    throw InputError("", 0, "workload.parallel",
                     "a mixture-of-experts transformer has no data-parallel traffic yet (its experts' gradients "
                     "would reduce over an expert-data-parallel group that is not modelled)");
  const bool backward = has_backward(w);
  if (backward && !forms.backward)
    throw InputError("", 0, "workload.pass",
                     fmt::format("pass {}: this scheme has no backward form of the MoE block (pass: forward)",
                                 pass_name(w.training.pass)));
  GraphBuilder b(ctx);
  const RankStreams st = b.add_compute_and_comm_streams();
  NoOverlapBlocks blocks(b, st, collectives_only);
  const MoeRouting routing = moe_routing(m);
  const int tp = w.tp;
  std::string moe_reason;
  // Layer l's forward after `at`, its op names prefixed by `tag` (the recomputation's "recompute.").
  auto forward_layer = [&](int l, const PerRank& at, const std::string& tag) {
    const std::string prefix = tag + fmt::format("L{}.", l);
    const PerRank attention = t.mla ? blocks.mla_attention(t, tp, at, prefix)
                                    : blocks.attention(transformer_attention(t), tp, at, prefix);
    if (l < t.dense_layers) return blocks.mlp(transformer_mlp(t), tp, attention, prefix);
    MoeLayerOps ops = forms.forward(b, st, m, routing, attention, prefix + "moe.");
    moe_reason = std::move(ops.reason);
    return std::move(ops.end);
  };
  PerRank end;
  if (w.training.pass != Pass::backward)
    for (int l = 0; l < t.layers; ++l) end = forward_layer(l, end, "");
  std::string bwd_reason;
  if (backward) {
    b.graph().set_pass(StepPass::backward);
    DenseBackward dense(b, st, collectives_only, w, forms.column);
    for (int l = t.layers - 1; l >= 0; --l) {
      const std::string layer = fmt::format("L{}.", l);
      if (w.training.recompute == Recompute::full) end = forward_layer(l, end, "recompute.");
      if (l < t.dense_layers) {
        end = dense.block(Block::mlp, layer, end);
      } else {
        MoeLayerOps ops = forms.backward(b, st, m, routing, end, "bwd." + layer + "moe.");
        end = std::move(ops.end);
        bwd_reason = std::move(ops.reason);
      }
      end = dense.block(Block::attention, layer, end);
    }
    if (t.mla) {
      // MLA's replicated down-projections saw only each rank's token shard: their weight gradients are
      // partial sums that Megatron all-reduces over the TP group after the backward (finalize_model_grads,
      // _allreduce_non_tensor_model_parallel_grads: parameters marked sequence_parallel), every layer's in
      // one coalesced call, in the weights' dtype (grad_reduce_in_fp32 off).
      const MlaShapes s = mla_shapes(t, tp);
      const Bytes grads = static_cast<Bytes>(t.layers) * (s.q_down.m > 0 ? s.q_down.n * s.q_down.k : 0) +
                          static_cast<Bytes>(t.layers) * s.kv_down.n * s.kv_down.k;
      end = blocks.collective(Primitive::all_reduce, grads * dtype_bytes(t.dtype), end,
                              "bwd.finalize.mla_down_proj_grads_all_reduce");
    }
  }
  const int moe_layers = t.layers - std::min(t.layers, t.dense_layers);
  std::string reason = fmt::format("{} layers ({} MoE, {} experts top {} over EP {}): {}attention with no overlap; MoE "
                                   "FFN: {}",
                                   t.layers, moe_layers, m.experts, m.top_k, m.ep, t.mla ? "latent (MLA) " : "",
                                   moe_layers == 0 ? std::string("none") : moe_reason.empty() ? bwd_reason : moe_reason);
  if (backward) {
    if (moe_layers > 0 && !moe_reason.empty()) reason += "; " + bwd_reason;
    reason += fmt::format(" ({}{}{})", pass_name(w.training.pass),
                          w.training.recompute != Recompute::none
                              ? fmt::format(", recompute {}", recompute_name(w.training.recompute))
                              : std::string(),
                          forms.column == ColumnBackward::bulk ? ", bulk column-parallel backward" : "");
  }
  return b.finish(reason);
}

}  // namespace overlap::sim
