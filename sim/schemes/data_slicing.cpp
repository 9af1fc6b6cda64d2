// data_slicing: Megatron / MindSpeed-style chunking (commfuse-paper Sec. 1-2, "data slicing"): the
// layer's activations are cut into `chunks` slices along M (tokens); slice i's GEMM runs while slice
// i-1's collective runs on a second, higher-priority stream. For a GEMM followed by a collective the
// last slice's collective has nothing left to hide behind, so it is exposed (commfuse-paper Sec. 1);
// for an all-gather before a GEMM the first slice's gather is exposed. Small slices cost what they
// cost: each slice is planned by the GEMM model on its own (memory-bound regime, wave quantization
// per slice, async-tp-illustrated "Amplified wave quantization") and every kernel pays its launch.
//
// build_sliced_layers() with chunks = 1 is also the no-overlap schedule (no_overlap.cpp).
#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "sim/schemes/core_attention.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/schemes/param_rows.hpp"
#include "sim/schemes/reusable_builders.hpp"
#include "sim/schemes/training_step.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

namespace {

// Ops of one stage: [slice][rank] (empty inner vector: the stage emitted nothing).
using PerSlice = std::vector<std::vector<OpId>>;

// Rows of slice c when `total` rows are cut into `chunks` slices (the first total % chunks slices
// get one row more).
std::int64_t slice_rows(std::int64_t total, int chunks, int c) {
  return total / chunks + (c < total % chunks ? 1 : 0);
}

class SlicedEmitter {
 public:
  SlicedEmitter(GraphBuilder& b, int chunks, bool collectives_only, const SliceResources& resources = {})
      : b_(b), chunks_(chunks), comm_only_(collectives_only), resources_(resources),
        streams_(b.add_compute_and_comm_streams()) {}

  int chunks() const { return chunks_; }
  int ranks() const { return b_.ranks(); }
  const RankStreams& streams() const { return streams_; }

  // A collective per slice on the comm stream, slice i after deps[i] (per rank).
  PerSlice collective(Primitive p, const std::vector<Bytes>& slice_bytes, const PerSlice& deps,
                      const std::string& name) {
    PerSlice out(slice_bytes.size());
    for (std::size_t i = 0; i < slice_bytes.size(); ++i) {
      CollectiveSpec spec;
      spec.name = slice_bytes.size() > 1 ? fmt::format("{}[{}]", name, i) : name;
      spec.primitive = p;
      spec.bytes = slice_bytes[i];
      spec.streams = streams_.comm;
      const bool last_rs = p == Primitive::reduce_scatter && i + 1 == slice_bytes.size();
      spec.channels = last_rs && resources_.last_reduce_scatter_channels >= 0 ? resources_.last_reduce_scatter_channels
                                                                              : resources_.comm_channels;
      if (i < deps.size() && !deps[i].empty())
        for (int r = 0; r < ranks(); ++r) spec.deps.push_back({deps[i][static_cast<std::size_t>(r)]});
      out[i] = b_.add_collective(spec);
    }
    return out;
  }

  // A GEMM per slice on the compute stream, slice i after deps[i] (per rank).
  PerSlice gemm(const std::vector<GemmShape>& slices, const PerSlice& deps, const std::string& name) {
    PerSlice out(slices.size());
    if (comm_only_) return out;
    for (std::size_t i = 0; i < slices.size(); ++i)
      for (int r = 0; r < ranks(); ++r) {
        GemmOptions o;
        o.name = slices.size() > 1 ? fmt::format("{}[{}]", name, i) : name;
        o.sm_budget = resources_.gemm_sm_budget;
        if (i < deps.size() && !deps[i].empty()) o.deps = {deps[i][static_cast<std::size_t>(r)]};
        out[i].push_back(b_.add_gemm(r, streams_.compute[static_cast<std::size_t>(r)], slices[i], o));
      }
    return out;
  }

  PerSlice memory(const std::vector<Bytes>& slice_bytes, const PerSlice& deps, const std::string& name) {
    PerSlice out(slice_bytes.size());
    if (comm_only_) return out;
    for (std::size_t i = 0; i < slice_bytes.size(); ++i)
      for (int r = 0; r < ranks(); ++r) {
        MemoryKernel k;
        k.name = slice_bytes.size() > 1 ? fmt::format("{}[{}]", name, i) : name;
        k.bytes = slice_bytes[i];
        if (i < deps.size() && !deps[i].empty()) k.deps = {deps[i][static_cast<std::size_t>(r)]};
        out[i].push_back(b_.add_memory(r, streams_.compute[static_cast<std::size_t>(r)], k));
      }
    return out;
  }

  PerSlice flops(const std::vector<double>& slice_flops, const std::vector<std::int64_t>& slice_tiles, DType dtype,
                 const PerSlice& deps, const std::string& name) {
    PerSlice out(slice_flops.size());
    if (comm_only_) return out;
    for (std::size_t i = 0; i < slice_flops.size(); ++i)
      for (int r = 0; r < ranks(); ++r) {
        std::vector<OpId> d;
        if (i < deps.size() && !deps[i].empty()) d = {deps[i][static_cast<std::size_t>(r)]};
        out[i].push_back(b_.add_flop_kernel(r, streams_.compute[static_cast<std::size_t>(r)],
                                            slice_flops.size() > 1 ? fmt::format("{}[{}]", name, i) : name,
                                            slice_flops[i], slice_tiles[i], dtype, d));
      }
    return out;
  }

  // Core attention (one op per rank; unfused: its kernel sequence) after `deps`, in stream order.
  PerSlice core_attention(const AttentionShapes& s, DType dtype, const std::string& name) {
    PerSlice out(1);
    if (comm_only_) return out;
    for (int r = 0; r < ranks(); ++r)
      out[0].push_back(add_core_attention(b_, r, streams_.compute[static_cast<std::size_t>(r)], s, dtype, name, {}));
    return out;
  }

  // Row counts of the slices of `total` rows (never more slices than rows).
  std::vector<std::int64_t> rows(std::int64_t total) const {
    const int k = static_cast<int>(std::min<std::int64_t>(chunks_, std::max<std::int64_t>(1, total)));
    std::vector<std::int64_t> out;
    for (int c = 0; c < k; ++c) out.push_back(slice_rows(total, k, c));
    return out;
  }

 private:
  GraphBuilder& b_;
  int chunks_;
  bool comm_only_;
  SliceResources resources_;
  RankStreams streams_;
};

std::vector<GemmShape> row_slices(const std::vector<std::int64_t>& rows, std::int64_t n, std::int64_t k, DType dt) {
  std::vector<GemmShape> out;
  for (std::int64_t m : rows) out.push_back(GemmShape{m, n, k, dt});
  return out;
}

std::vector<Bytes> scaled(const std::vector<std::int64_t>& rows, Bytes per_row) {
  std::vector<Bytes> out;
  for (std::int64_t m : rows) out.push_back(m * per_row);
  return out;
}

void emit_gemm_collective(SlicedEmitter& e, const GemmCollective& g, int tp) {
  const int b = dtype_bytes(g.dtype);
  const std::vector<std::int64_t> rows = e.rows(g.m);
  PerSlice last;
  if (g.primitive == Primitive::all_gather) {
    // AG -> GEMM: slice i's gathered rows feed slice i's GEMM.
    const PerSlice ag = e.collective(Primitive::all_gather, scaled(rows, g.k * b), {}, "all_gather");
    last = e.gemm(row_slices(rows, g.n, g.k, g.dtype), ag, "gemm");
  } else {
    const PerSlice mm = e.gemm(row_slices(rows, g.n, g.k, g.dtype), {}, "gemm");
    last = e.collective(g.primitive, scaled(rows, g.n * b), mm, primitive_name(g.primitive));
  }
  if (g.rmsnorm_after) {
    // RMSNorm reads and writes the output each rank holds after the collective.
    Bytes out_bytes = g.m * g.n * b;
    if (g.primitive == Primitive::reduce_scatter) out_bytes /= tp;
    PerSlice dep(1);
    if (!last.empty()) dep[0] = last.back();  // after the last slice's collective (and GEMM)
    e.memory({2 * out_bytes}, dep, "rmsnorm");
  }
}

// One slice's share of a per-slice list, as the one-element list the emitter takes.
template <typename T>
std::vector<T> one(const std::vector<T>& v, std::size_t i) { return {v[i]}; }

void emit_mlp(SlicedEmitter& e, const MlpTpSp& mlp, int tp, bool layer_order) {
  const MlpShapes s = mlp_shapes(mlp, tp);
  const int b = dtype_bytes(mlp.dtype);
  const std::vector<std::int64_t> rows = e.rows(mlp.tokens);
  // gather_input = false: the input is whole on every rank, no all-gather (sim/workload.hpp).
  const PerSlice ag = mlp.gather_input ? e.collective(Primitive::all_gather, scaled(rows, mlp.d_model * b), {}, "mlp.all_gather")
                                       : PerSlice{};
  const std::vector<GemmShape> col_shapes = row_slices(rows, s.col.n, s.col.k, mlp.dtype);
  const std::vector<Bytes> act_bytes = scaled(rows, s.activation_bytes / mlp.tokens);
  const std::vector<GemmShape> row_shapes = row_slices(rows, s.row.n, s.row.k, mlp.dtype);
  PerSlice row;
  if (layer_order && rows.size() > 1) {
    // Slice by slice through the whole layer (SlicedLayerOptions::layer_order).
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const std::string tag = fmt::format("[{}]", i);
      PerSlice dep(1);
      if (i < ag.size()) dep[0] = ag[i];
      e.gemm(one(col_shapes, i), dep, "mlp.fc1" + tag);
      e.memory(one(act_bytes, i), {}, "mlp.act" + tag);
      row.push_back(e.gemm(one(row_shapes, i), {}, "mlp.fc2" + tag).front());
    }
  } else {
    e.gemm(col_shapes, ag, "mlp.fc1");
    e.memory(act_bytes, {}, "mlp.act");
    row = e.gemm(row_shapes, {}, "mlp.fc2");
  }
  e.collective(Primitive::reduce_scatter, scaled(rows, mlp.d_model * b), row, "mlp.reduce_scatter");
}

void emit_attention(SlicedEmitter& e, const AttentionTpSp& att, int tp) {
  const AttentionShapes s = attention_shapes(att, tp);
  const int b = dtype_bytes(att.dtype);
  const std::int64_t tokens = att.batch * att.seq;
  const std::vector<std::int64_t> rows = e.rows(tokens);
  const PerSlice ag = att.gather_input ? e.collective(Primitive::all_gather, scaled(rows, att.d_model * b), {}, "attn.all_gather")
                                       : PerSlice{};
  e.gemm(row_slices(rows, s.qkv.n, s.qkv.k, att.dtype), ag, "attn.qkv");
  // Core attention needs every token of a sequence: one kernel after all QKV slices (stream order).
  e.core_attention(s, att.dtype, "attn.core");
  const PerSlice out = e.gemm(row_slices(rows, s.out.n, s.out.k, att.dtype), {}, "attn.out_proj");
  e.collective(Primitive::reduce_scatter, scaled(rows, att.d_model * b), out, "attn.reduce_scatter");
}

void emit_ulysses(SlicedEmitter& e, const AttentionUlysses& att, int tp) {
  const UlyssesShapes s = ulysses_shapes(att, tp);
  // Slices along the rank's heads: heads are independent in attention (commfuse-paper Alg. 5).
  const std::int64_t heads_rank = att.heads / tp;
  const std::vector<std::int64_t> heads = e.rows(heads_rank);
  std::vector<Bytes> qkv, out;
  std::vector<double> fl;
  std::vector<std::int64_t> tiles;
  for (std::int64_t h : heads) {
    qkv.push_back(s.qkv_all_to_all_bytes / heads_rank * h);
    out.push_back(s.out_all_to_all_bytes / heads_rank * h);
    fl.push_back(s.attention_flops * static_cast<double>(h) / static_cast<double>(heads_rank));
    tiles.push_back(std::max<std::int64_t>(1, s.attention_tiles / heads_rank * h));
  }
  const PerSlice a2a = e.collective(Primitive::all_to_all, qkv, {}, "ulysses.all_to_all_qkv");
  const PerSlice core = e.flops(fl, tiles, att.dtype, a2a, "ulysses.attention");
  e.collective(Primitive::all_to_all, out, core, "ulysses.all_to_all_out");
}

}  // namespace

namespace {

// One block of the workload's forward, as the sliced emitter runs it (in stream order).
void emit_block(SlicedEmitter& e, const Workload& w, Block block, bool layer_order) {
  const int tp = std::max(1, w.tp);
  if (const auto* t = std::get_if<Transformer>(&w.shape)) {
    if (block == Block::attention) emit_attention(e, transformer_attention(*t), tp);
    else emit_mlp(e, transformer_mlp(*t), tp, layer_order);
  } else if (w.kind == WorkloadKind::gemm_collective) {
    emit_gemm_collective(e, std::get<GemmCollective>(w.shape), tp);
  } else if (w.kind == WorkloadKind::mlp_tpsp) {
    emit_mlp(e, std::get<MlpTpSp>(w.shape), tp, layer_order);
  } else if (w.kind == WorkloadKind::attention_tpsp) {
    emit_attention(e, std::get<AttentionTpSp>(w.shape), tp);
  } else if (w.kind == WorkloadKind::attention_ulysses) {
    emit_ulysses(e, std::get<AttentionUlysses>(w.shape), tp);
  } else {
    throw std::invalid_argument(fmt::format("workload.kind: '{}' is not a layer workload", workload_kind_name(w.kind)));
  }
}

// A training step's patterns cut into slices along the gathered or scattered dimension (the chunked
// backward of Megatron-LM's and TransformerEngine's pipelined overlap: each slice's collective runs
// beside the next slice's GEMM).
class SlicedPass final : public PassEmitter {
 public:
  SlicedPass(GraphBuilder& b, SlicedEmitter& e, const Workload& w, bool layer_order, bool collectives_only)
      : PassEmitter(b, e.streams(), collectives_only), e_(e), w_(w), layer_order_(layer_order) {}

  PerRank forward(Block block, const PerRank& start, const std::string& prefix) override {
    // The sliced emitter chains its ops in stream order only: a marker on the communication stream
    // after `start` keeps the block's first collective (an all-gather) behind what came before, as the
    // compute stream's join already keeps its GEMMs.
    if (!start.empty())
      for (int r = 0; r < ranks(); ++r)
        b_.add_delay(r, comm_stream(r), 0, prefix + "start", {start[static_cast<std::size_t>(r)]});
    emit_block(e_, w_, block, layer_order_);
    return {};
  }

  PerRank gather_gemm(const GatherGemm& g, const PerRank& start) override {
    const std::int64_t total = g.split_k ? g.gemm.k : g.gemm.m;
    const std::vector<std::int64_t> rows = e_.rows(total);
    const PerSlice gathered = e_.collective(g.primitive, scaled(rows, g.bytes / total), {start}, g.name + "." + primitive_name(g.primitive));
    std::vector<GemmShape> shapes;
    for (const std::int64_t m : rows)
      shapes.push_back(g.split_k ? GemmShape{g.gemm.m, g.gemm.n, m, g.gemm.dtype} : GemmShape{m, g.gemm.n, g.gemm.k, g.gemm.dtype});
    const PerSlice mm = e_.gemm(shapes, gathered, g.name);
    return last_of(mm, gathered);
  }

  PerRank gemm_scatter(const GemmScatter& g, const PerRank& start) override {
    const std::vector<std::int64_t> rows = e_.rows(g.gemm.m);
    PerSlice deps(1, start);
    const PerSlice mm = e_.gemm(row_slices(rows, g.gemm.n, g.gemm.k, g.gemm.dtype), deps, g.name);
    const PerSlice sc = e_.collective(g.primitive, scaled(rows, g.bytes / g.gemm.m), mm.front().empty() ? deps : mm,
                                      g.name + "." + primitive_name(g.primitive));
    return sc.back();
  }

  PerRank ulysses(const UlyssesPass& u, const PerRank& start) override {
    const std::vector<std::int64_t> heads = e_.rows(u.heads);
    std::vector<Bytes> in, out;
    std::vector<double> fl;
    std::vector<std::int64_t> tiles;
    for (const std::int64_t h : heads) {
      in.push_back(u.in_bytes / u.heads * h);
      out.push_back(u.out_bytes / u.heads * h);
      fl.push_back(u.flops * static_cast<double>(h) / static_cast<double>(u.heads));
      tiles.push_back(std::max<std::int64_t>(1, u.tiles / u.heads * h));
    }
    const PerSlice a2a = e_.collective(Primitive::all_to_all, in, {start}, u.name + ".all_to_all_out");
    const PerSlice core = e_.flops(fl, tiles, u.dtype, a2a, u.name + ".attention");
    return e_.collective(Primitive::all_to_all, out, core.front().empty() ? a2a : core, u.name + ".all_to_all_qkv").back();
  }

 private:
  static PerRank last_of(const PerSlice& a, const PerSlice& b) { return a.back().empty() ? b.back() : a.back(); }

  SlicedEmitter& e_;
  const Workload& w_;
  bool layer_order_;
};

}  // namespace

BuiltScheme build_sliced_layers(const BuildContext& ctx, const SlicedLayerOptions& options) {
  return build_sliced_layers(ctx, options, SliceResources{});
}

BuiltScheme build_sliced_layers(const BuildContext& ctx, const SlicedLayerOptions& options,
                                const SliceResources& resources) {
  if (options.chunks < 1)
    throw std::invalid_argument(fmt::format("params.chunks: must be >= 1 (got {})", options.chunks));
  GraphBuilder b(ctx);
  SlicedEmitter e(b, options.chunks, options.collectives_only, resources);
  const Workload& w = ctx.workload;
  const std::string reason =
      options.chunks == 1 ? "sequential: every collective waits for its GEMM (nothing hidden)"
                          : fmt::format("{} slices: the edge slice's collective is exposed; per-slice launch and "
                                        "wave quantization",
                                        options.chunks);
  if (is_training_step(w)) {
    SlicedPass pass(b, e, w, options.layer_order, options.collectives_only);
    return build_training_step(ctx, pass, TrainingStepOptions{options.column, reason});
  }
  if (w.kind == WorkloadKind::transformer) {
    // Layers follow one another in stream order (the sliced emitter chains every block).
    const Transformer& t = std::get<Transformer>(w.shape);
    for (int l = 0; l < t.layers; ++l)
      for (const Block block : layer_blocks(w)) emit_block(e, w, block, options.layer_order);
  } else {
    emit_block(e, w, Block::whole, options.layer_order);
  }
  return b.finish(reason);
}

namespace {

const SchemeParam kChunks =
    int_param(knobs::kDataSlicingChunks, "slices along M (tokens; heads for Ulysses)")
        .tune({1, 2, 4, 8, 16})
        .production("TransformerEngine userbuffers method=pipeline num_splits (Megatron-LM --tp-comm-overlap; "
                    "TE Linear ub_overlap_rs / ub_overlap_ag)");
const SchemeParam kOrder = choice_param("order", {"linear", "layer"},
                                        "mlp_tpsp: linear (each linear layer pipelined on its own, Megatron / "
                                        "MindSpeed CoC) | layer (the whole MLP slice by slice, so a slice's "
                                        "reduce-scatter overlaps the next slice's up- and down-projection)");

}  // namespace

SchemeInfo make_data_slicing_scheme() {
  return {.name = "data_slicing",
          .source = "commfuse-paper Sec. 1-2 (Megatron / MindSpeed CoC data slicing)",
          .summary = "cut the GEMM along M into chunks; chunk i+1's GEMM overlaps chunk i's collective",
          .params = {kChunks, kOrder, column_backward_param()},
          .backward = "dY's all-gather -> dgrad and dgrad -> reduce-scatter cut into `chunks` slices (the input's re-gather -> wgrad sliced along the tokens, wgrad accumulating)",
          .applies = [](const Workload& w) { return w.kind != WorkloadKind::decode_stack; },
          .build = [](const BuildContext& ctx) {
            return build_sliced_layers(ctx, SlicedLayerOptions{ctx.integer(kChunks), false, ctx.text(kOrder) == "layer",
                                                               column_backward(ctx)});
          }};
}

}  // namespace overlap::sim
