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
// Schemes: the MoE block runs as the moe scheme chosen (no_overlap: no overlap; moe_pipeline: its
// token chunks; moe_flashoverlap: its wave groups; moe_tile_fused: its fused kernels); the attention
// and the dense MLPs run with no overlap, as no_overlap builds attention_tpsp and mlp_tpsp, so the
// difference between two schemes is the MoE block's overlap alone. Schemes built for dense TP layers
// (async_tp, flux, ...) do not apply to a MoE model (sim/schemes/registry.cpp): they are refused, never
// run with a dense MLP in place of the experts. Every layer routes the same counts (the routing is the
// layer's: one histogram, or one Zipf draw from the seed).
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "cost_model/input_error.hpp"
#include "sim/schemes/moe.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

namespace {

// Per-rank op lists: [rank].
using PerRank = std::vector<OpId>;

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

  void memory(Bytes bytes, const std::string& name) {
    if (!compute_) return;
    for (int r = 0; r < b_.ranks(); ++r) {
      MemoryKernel k;
      k.name = name;
      k.bytes = bytes;
      b_.add_memory(r, st_.compute[at(r)], k);
    }
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

}  // namespace

BuiltScheme build_moe_transformer(const BuildContext& ctx, const MoeLayerOptions& options) {
  return build_moe_transformer(ctx, options.collectives_only,
                               [&options](GraphBuilder& b, const RankStreams& st, const Moe& m, const MoeRouting& routing,
                                          const std::vector<OpId>& start, const std::string& prefix) {
                                 return emit_moe_layer(b, st, m, routing, options, start, prefix);
                               });
}

BuiltScheme build_moe_transformer(const BuildContext& ctx, bool collectives_only, const MoeBlockEmitter& block) {
  const Workload& w = ctx.workload;
  const Transformer& t = std::get<Transformer>(w.shape);
  const Moe& m = t.moe.value();
  if (is_training_step(w))
    throw InputError("", 0, "workload.pass", "a mixture-of-experts transformer is modelled as a forward pass");
  GraphBuilder b(ctx);
  const RankStreams st = b.add_compute_and_comm_streams();
  NoOverlapBlocks blocks(b, st, collectives_only);
  const MoeRouting routing = moe_routing(m);
  const int tp = w.tp;
  PerRank end;
  std::string moe_reason;
  for (int l = 0; l < t.layers; ++l) {
    const std::string prefix = fmt::format("L{}.", l);
    end = blocks.attention(transformer_attention(t), tp, end, prefix);
    if (l < t.dense_layers) {
      end = blocks.mlp(transformer_mlp(t), tp, end, prefix);
    } else {
      MoeLayerOps ops = block(b, st, m, routing, end, prefix + "moe.");
      end = std::move(ops.end);
      moe_reason = std::move(ops.reason);
    }
  }
  const int moe_layers = t.layers - std::min(t.layers, t.dense_layers);
  return b.finish(fmt::format("{} layers ({} MoE, {} experts top {} over EP {}): attention with no overlap; MoE "
                              "FFN: {}",
                              t.layers, moe_layers, m.experts, m.top_k, m.ep,
                              moe_layers > 0 ? moe_reason : std::string("none")));
}

}  // namespace overlap::sim
