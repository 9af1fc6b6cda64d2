// Async TP (async-tp-illustrated; PyTorch SymmetricMemory micro-pipeline TP): Looped
// CollectiveEinsum. All-gather-matmul: each rank pulls the other ranks' shards one step at a time and
// runs a sub-matmul on each as it lands ("Decomposing all-gather matmuls"). Matmul-reduce-scatter:
// accumulators of partial results rotate around the ring; each step a rank computes its partial of
// the shard whose accumulator is arriving and adds it ("Decomposing matmul reduce-scatters", steps
// 1-5).
//
// transport copy_engine: cudaMemcpyAsync pulls on copy engines, no SMs ("Copy-engine based comms").
// transport sm: an SM copy kernel per step holding `copy_sms` SMs ("SM contention and wave
// quantization").
// streams 2: steps alternate between two streams so the next sub-matmul fills the SMs the previous
// one's partial wave leaves idle; streams 1: the sub-matmuls run back to back on one stream and each
// pays its own partial wave, N + S waves instead of N + 1 ("Amplified wave quantization due to
// decomposition").
//
// A training step (workload.pass backward | step; sim/schemes/training_step.hpp) applies the same two
// decompositions wherever the backward has their pattern, as PyTorch's micro-pipeline TP pass does:
// torch/_inductor/fx_passes/micro_pipeline_tp.py (micro_pipeline_tp_pass) matches every all-gather
// whose result feeds a matmul and every matmul whose result is reduce-scattered in the compiled
// graph, the backward graph included (async-tp-illustrated "Graph manipulation"):
//   dY's all-gather before a row-parallel dgrad   -> all-gather-matmul over M (the tokens);
//   a column-parallel dgrad and its reduce-scatter -> matmul-reduce-scatter over M;
//   the input's re-gather before a column-parallel wgrad dW = X^T dY: the gathered dimension is the
//     wgrad's K (the tokens), so each pulled shard feeds a partial wgrad m x n x k/T that accumulates
//     into dW (GEMM beta = 1: no add kernel; the partials follow one another, each adding to the
//     output the previous wrote, while the pulls still run ahead of them). PyTorch's pass skips this
//     case (fuse_all_gather_matmul returns when gather_dim is the last dim of the shard: "Decomposing
//     the matmul on the K dimension is not supported"); the Looped CollectiveEinsum loop itself
//     ("Looped CollectiveEinsum": each step's einsum on the shard that arrived) covers it with a sum
//     in place of the concatenation.
// What has neither pattern (an all-reduce without SP, elementwise and core-attention backward) runs as
// no_overlap runs it.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cost_model/collective_model.hpp"
#include "cost_model/input_error.hpp"
#include "sim/backward_shapes.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/schemes/param_rows.hpp"
#include "sim/schemes/reusable_builders.hpp"
#include "sim/schemes/training_step.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

namespace {

using AsyncTpParams = LoopedEinsumOptions;

const SchemeParam kTransport =
    choice_param(knobs::kAsyncTpTransport, "copy_engine (cudaMemcpyAsync pulls, no SMs) | sm (SM copy kernels)")
        .tune({"copy_engine", "sm"})
        .production("PyTorch SymmetricMemory async TP (torchtitan enable_async_tensor_parallel) pulls with the copy "
                    "engine; TransformerEngine userbuffers method=ring_exchange");
const SchemeParam kStreams = [] {
  SchemeParam p = int_param(knobs::kAsyncTpStreams, "1 (sub-matmuls back to back: N+S partial waves) | 2 (alternating streams)");
  p.allowed = {1, 2};
  return p.tune({1, 2}).production("PyTorch async TP: two alternating streams");
}();
// TransformerEngine's userbuffers default num_sm = 16 (facts.md "Production overlap implementations").
const SchemeParam kCopySms = [] {
  SchemeParam p = comm_sms_param("copy_sms", 16, 1, "SMs an SM copy kernel holds (transport sm)");
  return p.tune({8, 16, 24, 32}, "transport=sm").production("TransformerEngine userbuffers num_sm (default 16)");
}();

AsyncTpParams read_async_tp_params(const BuildContext& ctx) {
  AsyncTpParams p;
  p.sm_transport = ctx.text(kTransport) == "sm";
  p.streams = ctx.integer(kStreams);
  p.copy_sms = ctx.integer(kCopySms);
  p.column = column_backward(ctx);
  return p;
}


}  // namespace

LoopedEinsum::LoopedEinsum(GraphBuilder& b, const LoopedEinsumOptions& p) : b_(b), p_(p), T_(b.ranks()) {
  main_ = b.add_streams("current", 0);
  // The second stream: PyTorch's backend stream (2 streams), or where the copies wait (1 stream).
  second_ = b.add_streams(p.streams == 2 ? "backend" : "copies", 0);
  // Accumulator transfers run beside the sub-matmul of the same step, so on a stream of their own.
  acc_ = b.add_streams("accumulators", 0);
}

// A sub-matmul of `g`: every SM, or the SM budget the options give (gemm_sm_budget).
UnitCompute LoopedEinsum::unit(const GemmShape& g, bool split_k) const {
  if (p_.gemm_sm_budget <= 0) return split_k ? gemm_unit_split_k(b_, g) : gemm_unit(b_, g);
  GraphBuilder& b = b_;
  const int budget = p_.gemm_sm_budget;
  return [&b, g, budget, split_k](int rank, StreamId stream, std::int64_t rows, const std::string& name,
                                  const std::vector<OpId>& deps) {
    GemmOptions o;
    o.name = name;
    o.deps = deps;
    o.sm_budget = budget;
    const GemmShape shape = split_k ? GemmShape{g.m, g.n, rows, g.dtype} : GemmShape{rows, g.n, g.k, g.dtype};
    return b.add_gemm(rank, stream, shape, o);
  };
}

// One step's pulls: rank r receives `recv_bytes[r]` from `src(r)`: a cudaMemcpyAsync on a copy
// engine, or an SM copy kernel of copy_sms CTAs (which also serves the rank that pulls from r,
// `dst(r)`, sending it `send_bytes[r]`).
std::vector<OpId> LoopedEinsum::transfer(const std::function<int(int)>& src, const std::function<int(int)>& dst,
                           const std::vector<StreamId>& streams, const std::vector<Bytes>& send_bytes,
                           const std::vector<Bytes>& recv_bytes, const std::vector<std::vector<OpId>>& deps,
                           const std::string& name) {
  std::vector<OpId> out;
  const std::int64_t id = p_.sm_transport ? b_.new_collective_id() : -1;
  for (int r = 0; r < T_; ++r) {
    const std::size_t ri = static_cast<std::size_t>(r);
    PeerCopy c;
    c.name = name;
    c.ctas = p_.sm_transport ? p_.copy_sms : 0;
    c.collective = id;
    c.members = T_;
    c.send_to = dst(r);
    c.send_bytes = send_bytes[ri];
    c.recv_from = src(r);
    c.recv_bytes = recv_bytes[ri];
    c.deps = deps[ri];
    out.push_back(add_peer_copy(b_, r, streams[ri], c));
  }
  return out;
}

StreamId LoopedEinsum::compute_stream(int r, int step) const {
  if (p_.streams == 1) return main_[static_cast<std::size_t>(r)];
  return step % 2 == 0 ? main_[static_cast<std::size_t>(r)] : second_[static_cast<std::size_t>(r)];
}
StreamId LoopedEinsum::copy_stream(int r, int step) const {
  return p_.streams == 1 ? second_[static_cast<std::size_t>(r)] : compute_stream(r, step);
}

// All-gather-matmul over `rows` gathered rows of `row_bytes` each ("Decomposing all-gather
// matmuls"): copy the local shard into the symmetric buffer, barrier, then each step pull the shard
// of rank r+step and run its sub-matmul as it lands. Returns per-rank last ops.
// accumulate: the gathered rows are the sub-matmuls' K (a wgrad), so every sub-matmul adds to the
// one output the previous wrote (beta = 1) and waits for it as well as for its shard.
std::vector<OpId> LoopedEinsum::all_gather_matmul(std::int64_t rows, Bytes row_bytes, const UnitCompute& compute,
                                    const std::vector<OpId>& start, const std::string& tag,
                                    bool accumulate) {
  std::vector<Bytes> shard(static_cast<std::size_t>(T_));
  for (int r = 0; r < T_; ++r) shard[static_cast<std::size_t>(r)] = chunk_bytes(rows, T_, r) * row_bytes;
  std::vector<std::vector<OpId>> bdeps;
  for (int r = 0; r < T_; ++r) {
    std::vector<OpId> d;
    if (!start.empty()) d.push_back(start[static_cast<std::size_t>(r)]);
    bdeps.push_back({b_.add_memory(r, main_[static_cast<std::size_t>(r)],
                                   MemoryKernel{tag + ".mv", 2 * shard[static_cast<std::size_t>(r)], d, 0})});
  }
  const std::vector<OpId> ready = b_.add_barrier(main_, bdeps, tag + ".barrier");
  std::vector<std::vector<OpId>> last(static_cast<std::size_t>(T_));
  for (int r = 0; r < T_; ++r)
    last[static_cast<std::size_t>(r)].push_back(
        compute(r, main_[static_cast<std::size_t>(r)], chunk_bytes(rows, T_, r), fmt::format("{}.mm{}", tag, r), {}));
  for (int step = 1; step < T_; ++step) {
    std::vector<StreamId> cps;
    std::vector<Bytes> recv;
    std::vector<std::vector<OpId>> deps;
    for (int r = 0; r < T_; ++r) {
      cps.push_back(copy_stream(r, step));
      recv.push_back(shard[static_cast<std::size_t>(wrap_mod(r + step, T_))]);
      deps.push_back({ready[static_cast<std::size_t>(r)]});  // backend_stream.wait_stream(current)
    }
    const int T = T_;
    const std::vector<OpId> pulled =
        transfer([step, T](int r) { return wrap_mod(r + step, T); }, [step, T](int r) { return wrap_mod(r - step, T); }, cps,
                 shard, recv, deps, fmt::format("{}.pull{}", tag, step));
    for (int r = 0; r < T_; ++r) {
      const int src = wrap_mod(r + step, T_);
      std::vector<OpId> deps{pulled[static_cast<std::size_t>(r)]};
      if (accumulate) deps.push_back(last[static_cast<std::size_t>(r)].back());
      last[static_cast<std::size_t>(r)].push_back(compute(r, compute_stream(r, step), chunk_bytes(rows, T_, src),
                                                          fmt::format("{}.mm{}", tag, src), deps));
    }
  }
  // Shard r reaches every other rank once: r -> p carries shard r.
  for (int src = 0; src < T_; ++src)
    for (int dst = 0; dst < T_; ++dst)
      if (src != dst) b_.add_required_bytes(src, dst, shard[static_cast<std::size_t>(src)]);
  // current_stream().wait_stream(backend_stream); barrier.
  std::vector<std::vector<OpId>> ends;
  for (int r = 0; r < T_; ++r) ends.push_back(last[static_cast<std::size_t>(r)]);
  return b_.add_barrier(main_, ends, tag + ".barrier_end");
}

// The column-parallel matmul undecomposed, when its input needs no gathering (gather_input =
// false): one GEMM of `rows` rows on the main stream.
std::vector<OpId> LoopedEinsum::plain_matmul(const UnitCompute& compute, std::int64_t rows, const std::vector<OpId>& start,
                               const std::string& tag) {
  std::vector<OpId> out;
  for (int r = 0; r < T_; ++r) {
    std::vector<OpId> deps;
    if (!start.empty()) deps.push_back(start[static_cast<std::size_t>(r)]);
    out.push_back(compute(r, main_[static_cast<std::size_t>(r)], rows, tag + ".mm", deps));
  }
  return out;
}

// Matmul-reduce-scatter over `rows` output rows of `row_bytes` each, by accumulators passed around
// the ring ("Decomposing matmul reduce-scatters", steps 1-5): at step s rank r computes its partial
// of shard d = r-1-s while the accumulator of d arrives from rank r-1 (which added its own partial
// at step s-1), then adds its partial to it. After T-1 passes the accumulator of shard r is home,
// complete. Returns per-rank last ops (the final add).
std::vector<OpId> LoopedEinsum::matmul_reduce_scatter(std::int64_t rows, Bytes row_bytes, const UnitCompute& compute,
                                        const std::vector<OpId>& start, const std::string& tag) {
  std::vector<Bytes> chunk(static_cast<std::size_t>(T_));
  for (int r = 0; r < T_; ++r) chunk[static_cast<std::size_t>(r)] = chunk_bytes(rows, T_, r) * row_bytes;
  auto shard = [this](int r, int step) { return wrap_mod(r - 1 - step, T_); };
  std::vector<OpId> acc(static_cast<std::size_t>(T_), kNoOp);  // the op that last wrote rank r's accumulator
  for (int step = 0; step < T_; ++step) {
    std::vector<OpId> partial;
    for (int r = 0; r < T_; ++r) {
      const int d = shard(r, step);
      std::vector<OpId> deps;
      if (step == 0 && !start.empty()) deps.push_back(start[static_cast<std::size_t>(r)]);
      partial.push_back(compute(r, compute_stream(r, step), chunk_bytes(rows, T_, d), fmt::format("{}.mm{}", tag, d), deps));
    }
    if (step == 0) {  // the first partial initialises the accumulator
      acc = partial;
      continue;
    }
    std::vector<StreamId> streams;
    std::vector<Bytes> send, recv;
    std::vector<std::vector<OpId>> deps;
    for (int r = 0; r < T_; ++r) {
      streams.push_back(acc_[static_cast<std::size_t>(r)]);
      recv.push_back(chunk[static_cast<std::size_t>(shard(r, step))]);
      send.push_back(chunk[static_cast<std::size_t>(shard(wrap_mod(r + 1, T_), step))]);
      // The accumulator leaves rank r-1 once its add of the previous step is done (a pull on
      // rank r waits for the flag rank r-1 sets then); an SM copy also waits for its own add.
      std::vector<OpId> d{acc[static_cast<std::size_t>(wrap_mod(r - 1, T_))]};
      if (p_.sm_transport) d.push_back(acc[static_cast<std::size_t>(r)]);
      deps.push_back(std::move(d));
    }
    const int T = T_;
    const std::vector<OpId> arrived =
        transfer([T](int r) { return wrap_mod(r - 1, T); }, [T](int r) { return wrap_mod(r + 1, T); }, streams, send, recv, deps,
                 fmt::format("{}.acc{}", tag, step));
    for (int r = 0; r < T_; ++r) {
      const Bytes c = chunk[static_cast<std::size_t>(shard(r, step))];
      b_.add_required_bytes(wrap_mod(r - 1, T_), r, c);
      // Step 4: add the local partial to the arrived accumulator (read both, write one).
      acc[static_cast<std::size_t>(r)] =
          b_.add_memory(r, compute_stream(r, step),
                        MemoryKernel{fmt::format("{}.add{}", tag, step), 3 * c,
                                     {partial[static_cast<std::size_t>(r)], arrived[static_cast<std::size_t>(r)]}, 0});
    }
  }
  return acc;
}

namespace {

// One layer's blocks. `start`: per-rank ops the block waits for (empty: none); returns the per-rank
// ops that end it (the reduce of the matmul-reduce-scatter's partials). Appends the S of each
// collective it decomposes to `collectives`. `prefix` names the layer's ops in a composed model.
// A block's column-parallel GEMM: an all-gather-matmul when the block gathers its input, else the
// GEMM alone.
std::vector<OpId> column_matmul(LoopedEinsum& le, const RankGemm& g, bool gather_input, const std::vector<OpId>& start,
                                const std::string& name) {
  return gather_input ? le.all_gather_matmul(g.m, g.k * dtype_bytes(g.dtype), le.unit(g), start, name)
                      : le.plain_matmul(le.unit(g), g.m, start, name);
}

std::vector<OpId> emit_mlp(GraphBuilder& b, LoopedEinsum& le, const MlpTpSp& mlp, int T, const std::vector<OpId>& start,
                           const std::string& prefix, std::vector<Bytes>& collectives) {
  const MlpShapes s = mlp_shapes(mlp, T);
  const std::vector<OpId> ag = column_matmul(le, s.col, mlp.gather_input, start, prefix + "fc1");
  std::vector<OpId> act;
  for (int r = 0; r < T; ++r)
    act.push_back(b.add_memory(r, le.main_streams()[static_cast<std::size_t>(r)],
                               MemoryKernel{prefix + "activation", s.activation_bytes, {ag[static_cast<std::size_t>(r)]}, 0}));
  if (s.all_gather_bytes > 0) collectives.push_back(s.all_gather_bytes);
  collectives.push_back(s.reduce_scatter_bytes);
  return le.matmul_reduce_scatter(s.row.m, s.row.n * dtype_bytes(s.row.dtype), le.unit(s.row), act, prefix + "fc2");
}

std::vector<OpId> emit_attention(GraphBuilder& b, LoopedEinsum& le, const AttentionTpSp& att, int T,
                                 const std::vector<OpId>& start, const std::string& prefix,
                                 std::vector<Bytes>& collectives) {
  const AttentionShapes s = attention_shapes(att, T);
  const std::vector<OpId> ag = column_matmul(le, s.qkv, att.gather_input, start, prefix + "qkv");
  std::vector<OpId> attn;
  for (int r = 0; r < T; ++r)
    attn.push_back(add_core_attention(b, r, le.main_streams()[static_cast<std::size_t>(r)], s, att.dtype,
                                      prefix + "attention", {ag[static_cast<std::size_t>(r)]}));
  if (s.all_gather_bytes > 0) collectives.push_back(s.all_gather_bytes);
  collectives.push_back(s.reduce_scatter_bytes);
  return le.matmul_reduce_scatter(s.out.m, s.out.n * dtype_bytes(s.out.dtype), le.unit(s.out), attn, prefix + "out");
}

// gemm_collective's one GEMM and its collective, decomposed.
std::vector<OpId> emit_gemm_collective(LoopedEinsum& le, const Workload& w, const std::vector<OpId>& start,
                                       const std::string& prefix, std::vector<Bytes>& collectives) {
  const GemmCollective g = gemm_collective_shape(w);
  const RankGemm gm{g.m, g.n, g.k, g.dtype};
  if (g.primitive == Primitive::all_gather) {
    collectives.push_back(g.m * g.k * dtype_bytes(g.dtype));
    return le.all_gather_matmul(g.m, g.k * dtype_bytes(g.dtype), le.unit(gm), start, prefix + "ag");
  }
  if (g.primitive == Primitive::reduce_scatter) {
    collectives.push_back(g.m * g.n * dtype_bytes(g.dtype));
    return le.matmul_reduce_scatter(g.m, g.n * dtype_bytes(g.dtype), le.unit(gm), start, prefix + "rs");
  }
  throw InputError("", 0, "workload.primitive", "async_tp decomposes all_gather or reduce_scatter only");
}

// One block of the forward (Block::whole: the whole workload), after `start`; returns its end ops.
std::vector<OpId> emit_block(GraphBuilder& b, LoopedEinsum& le, const Workload& w, Block block,
                             const std::vector<OpId>& start, const std::string& prefix, std::vector<Bytes>& collectives) {
  const int T = w.tp;
  if (const auto* t = std::get_if<Transformer>(&w.shape)) {
    if (block == Block::attention) return emit_attention(b, le, transformer_attention(*t), T, start, prefix, collectives);
    return emit_mlp(b, le, transformer_mlp(*t), T, start, prefix, collectives);
  }
  if (w.kind == WorkloadKind::gemm_collective) return emit_gemm_collective(le, w, start, prefix, collectives);
  if (w.kind == WorkloadKind::mlp_tpsp) return emit_mlp(b, le, std::get<MlpTpSp>(w.shape), T, start, prefix, collectives);
  if (w.kind == WorkloadKind::attention_tpsp) return emit_attention(b, le, std::get<AttentionTpSp>(w.shape), T, start, prefix, collectives);
  throw InputError("", 0, "workload.kind", fmt::format("async_tp does not apply to '{}'", workload_kind_name(w.kind)));
}

// The streams a training step's plain steps use: the main stream for computation (what the decomposed
// collectives' sub-matmuls start on) and a communication stream for the collectives async TP leaves to
// NCCL (an all-reduce without SP).
RankStreams step_streams(GraphBuilder& b, const LoopedEinsum& le) {
  return RankStreams{le.main_streams(), b.add_streams("nccl", 1)};
}

// A training step's backward with the micro-pipeline TP patterns decomposed (the file's header).
class AsyncTpPass final : public PassEmitter {
 public:
  AsyncTpPass(GraphBuilder& b, LoopedEinsum& le, const Workload& w, std::vector<Bytes>& collectives)
      : PassEmitter(b, step_streams(b, le)), le_(le), w_(w), collectives_(collectives) {}

  PerRank forward(Block block, const PerRank& start, const std::string& prefix) override {
    return emit_block(b_, le_, w_, block, start, prefix, collectives_);
  }

  // dY's all-gather -> row-parallel dgrad (gathered dimension M): all_gather_matmul, as
  // fused_all_gather_matmul runs it. The input's re-gather -> column-parallel wgrad (split_k: the
  // gathered dimension is K): the same loop, each shard's partial wgrad accumulating into dW.
  PerRank gather_gemm(const GatherGemm& g, const PerRank& start) override {
    if (g.primitive != Primitive::all_gather) return PassEmitter::gather_gemm(g, start);
    const std::int64_t total = g.split_k ? g.gemm.k : g.gemm.m;
    collectives_.push_back(g.bytes);
    if (!g.split_k) return le_.all_gather_matmul(total, g.bytes / total, le_.unit(g.gemm), start, g.name);
    const UnitCompute partial = le_.unit(g.gemm, true);
    return le_.all_gather_matmul(total, g.bytes / total, partial, start, g.name, true);
  }

  // A column-parallel dgrad and its reduce-scatter (scattered dimension M): matmul_reduce_scatter, as
  // fused_matmul_reduce_scatter runs it. Without SP (an all-reduce) there is nothing to decompose.
  PerRank gemm_scatter(const GemmScatter& g, const PerRank& start) override {
    if (g.primitive != Primitive::reduce_scatter) return PassEmitter::gemm_scatter(g, start);
    collectives_.push_back(g.bytes);
    return le_.matmul_reduce_scatter(g.gemm.m, g.bytes / g.gemm.m, le_.unit(g.gemm), start, g.name);
  }

 private:
  LoopedEinsum& le_;
  const Workload& w_;
  std::vector<Bytes>& collectives_;
};

}  // namespace

BuiltScheme build_looped_einsum(const BuildContext& ctx, const LoopedEinsumOptions& p) {
  const Workload& w = ctx.workload;
  validate_workload(w);
  GraphBuilder b(ctx);
  LoopedEinsum le(b, p);
  const int T = w.tp;
  std::string how = fmt::format("{} pulls, {} stream{}", p.sm_transport ? "SM" : "copy-engine", p.streams,
                                p.streams == 1 ? " (N+S partial waves)" : "s");
  if (p.gemm_sm_budget > 0) how += fmt::format(", GEMMs on {} SMs", p.gemm_sm_budget);
  const std::string label = p.label.empty() ? "Looped CollectiveEinsum" : p.label;
  std::vector<Bytes> collectives;  // S of every decomposed collective
  if (is_training_step(w)) {
    AsyncTpPass pass(b, le, w, collectives);
    BuiltScheme built =
        build_training_step(ctx, pass, TrainingStepOptions{p.column, label + " forward and backward, " + how});
    // Every decomposed collective of the step crosses the same ports, one after another.
    built.bound_ps = decomposition_bound_ps(ctx.hardware, T, collectives, true);
    return built;
  }
  std::string layers;
  if (w.kind == WorkloadKind::transformer) {
    const Transformer& t = std::get<Transformer>(w.shape);
    compose_layers(
        t.layers,
        [&](const std::vector<OpId>& start, const std::string& prefix) {
          return emit_block(b, le, w, Block::attention, start, prefix, collectives);
        },
        [&](const std::vector<OpId>& start, const std::string& prefix) {
          return emit_block(b, le, w, Block::mlp, start, prefix, collectives);
        });
    layers = fmt::format("{} layers, ", t.layers);
  } else {
    emit_block(b, le, w, Block::whole, {}, "", collectives);
  }
  return b.finish(fmt::format("{}{}, {}", layers, label, how),
                  decomposition_bound_ps(ctx.hardware, T, collectives, w.kind == WorkloadKind::transformer));
}

namespace {

BuiltScheme build_async_tp(const BuildContext& ctx) { return build_looped_einsum(ctx, read_async_tp_params(ctx)); }

}  // namespace

SchemeInfo make_async_tp_scheme() {
  return {.name = "async_tp",
          .source = "async-tp-illustrated (Looped CollectiveEinsum; PyTorch SymmetricMemory async TP)",
          .summary = "all-gather-matmul / matmul-reduce-scatter decomposed into per-step P2P pulls and sub-matmuls",
          .params = {kTransport, kStreams, kCopySms, column_backward_param()},
          .backward = "micro-pipeline TP on the backward: dY all-gather -> dgrad as all-gather-matmul, dgrad -> "
                      "reduce-scatter as matmul-reduce-scatter, the input's re-gather -> wgrad as all-gather-matmul "
                      "along K (partial wgrads accumulating)",
          .applies = applies_to_tp_sp_linears,
          .build = build_async_tp};
}

}  // namespace overlap::sim
