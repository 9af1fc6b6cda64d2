#include "sim/schemes/training_step.hpp"

#include <algorithm>
#include <optional>
#include <variant>
#include <utility>

#include <fmt/format.h>

#include "sim/schemes/data_parallel.hpp"

namespace overlap::sim {

namespace {

std::vector<OpId> deps_of(const PerRank& start, int rank) {
  if (start.empty() || start[static_cast<std::size_t>(rank)] == kNoOp) return {};
  return {start[static_cast<std::size_t>(rank)]};
}

}  // namespace

PassEmitter::PassEmitter(GraphBuilder& b) : b_(b) {
  streams_.compute = b.add_streams("step_compute", 0);
  streams_.comm = b.add_streams("step_comm", 1);
}

PassEmitter::PassEmitter(GraphBuilder& b, RankStreams streams, bool collectives_only)
    : b_(b), streams_(std::move(streams)), collectives_only_(collectives_only) {}

PerRank PassEmitter::gemm(const RankGemm& g, const PerRank& start, const std::string& name) {
  if (collectives_only_) return start;
  PerRank out;
  for (int r = 0; r < ranks(); ++r) {
    GemmOptions o;
    o.name = name;
    o.deps = deps_of(start, r);
    out.push_back(b_.add_gemm(r, compute_stream(r), g, o));
  }
  return out;
}

PerRank PassEmitter::collective(Primitive p, Bytes bytes, const PerRank& start, const std::string& name) {
  CollectiveSpec spec;
  spec.name = name;
  spec.primitive = p;
  spec.bytes = bytes;
  spec.streams = streams_.comm;
  if (!start.empty())
    for (int r = 0; r < ranks(); ++r) spec.deps.push_back(deps_of(start, r));
  return b_.add_collective(spec);
}

PerRank PassEmitter::memory(Bytes bytes, const PerRank& start, const std::string& name) {
  if (collectives_only_) return start;
  PerRank out;
  for (int r = 0; r < ranks(); ++r) out.push_back(b_.add_memory(r, compute_stream(r), MemoryKernel{name, bytes, deps_of(start, r), 0}));
  return out;
}

PerRank PassEmitter::flops(double flops, std::int64_t tiles, DType dtype, const PerRank& start, const std::string& name) {
  if (collectives_only_) return start;
  PerRank out;
  for (int r = 0; r < ranks(); ++r)
    out.push_back(b_.add_flop_kernel(r, compute_stream(r), name, flops, tiles, dtype, deps_of(start, r)));
  return out;
}

PerRank PassEmitter::core_attention(const AttentionShapes& s, DType dtype, const PerRank& start, const std::string& name) {
  if (collectives_only_) return start;
  PerRank out;
  for (int r = 0; r < ranks(); ++r) out.push_back(add_core_attention(b_, r, compute_stream(r), s, dtype, name, deps_of(start, r)));
  return out;
}

PerRank PassEmitter::unfused_attention(const UnfusedAttention& u, AttentionPass pass, const PerRank& start,
                                       const std::string& name) {
  if (collectives_only_) return start;
  PerRank out;
  for (int r = 0; r < ranks(); ++r)
    out.push_back(add_unfused_attention(b_, r, compute_stream(r), u, pass, name, deps_of(start, r)));
  return out;
}

PerRank PassEmitter::join(const std::vector<PerRank>& ops, const std::string& name) {
  PerRank out;
  for (int r = 0; r < ranks(); ++r) {
    std::vector<OpId> deps;
    for (const PerRank& o : ops)
      if (!o.empty() && o[static_cast<std::size_t>(r)] != kNoOp) deps.push_back(o[static_cast<std::size_t>(r)]);
    out.push_back(b_.add_delay(r, compute_stream(r), 0, name, deps));
  }
  return out;
}

PerRank PassEmitter::join_streams(const std::vector<StreamId>& excluded, const std::string& name) {
  const TaskGraph& g = b_.graph();
  std::vector<PerRank> last(1, PerRank(static_cast<std::size_t>(ranks()), kNoOp));
  for (StreamId s = 0; s < static_cast<StreamId>(g.streams().size()); ++s) {
    if (std::find(excluded.begin(), excluded.end(), s) != excluded.end()) continue;
    const OpId op = g.last_on_stream(s);
    if (op == kNoOp) continue;
    const int r = g.streams()[static_cast<std::size_t>(s)].rank;
    // One list per stream and rank: a join waits for every stream's last op.
    std::size_t i = 0;
    while (i < last.size() && last[i][static_cast<std::size_t>(r)] != kNoOp) ++i;
    if (i == last.size()) last.emplace_back(static_cast<std::size_t>(ranks()), kNoOp);
    last[i][static_cast<std::size_t>(r)] = op;
  }
  return join(last, name);
}

PerRank PassEmitter::gather_gemm(const GatherGemm& g, const PerRank& start) {
  const PerRank gathered = collective(g.primitive, g.bytes, start, g.name + "." + primitive_name(g.primitive));
  return gemm(g.gemm, gathered, g.name);
}

PerRank PassEmitter::gemm_scatter(const GemmScatter& g, const PerRank& start) {
  const PerRank mm = gemm(g.gemm, start, g.name);
  return collective(g.primitive, g.bytes, mm, g.name + "." + primitive_name(g.primitive));
}

PerRank PassEmitter::ulysses(const UlyssesPass& u, const PerRank& start) {
  const PerRank in = collective(Primitive::all_to_all, u.in_bytes, start, u.name + ".all_to_all_out");
  const PerRank core = flops(u.flops, u.tiles, u.dtype, in, u.name + ".attention");
  return collective(Primitive::all_to_all, u.out_bytes, core, u.name + ".all_to_all_qkv");
}

const SchemeParam& column_backward_param() {
  static const SchemeParam p =
      choice_param("column_backward", {"scheme", "bulk"},
                   "training backward of a column-parallel linear: scheme (dgrad -> reduce-scatter and the input's "
                   "re-gather -> wgrad as this scheme overlaps them) | bulk (the input's all-gather beside dgrad, "
                   "dgrad's reduce-scatter beside wgrad: Megatron-LM's asynchronous backward)")
          .production("TransformerEngine userbuffers ub_cfgs qkv_dgrad / fc1_dgrad method bulk (bulk_dgrad, "
                      "bulk_wgrad); Megatron-LM without --tp-comm-overlap overlaps the same pairs")
          .training()
          .tune({"scheme", "bulk"});
  return p;
}

ColumnBackward column_backward(const BuildContext& ctx) {
  return ctx.text(column_backward_param()) == "bulk" ? ColumnBackward::bulk : ColumnBackward::scheme;
}



std::optional<step::StepShape> step_kernel_shape(const Workload& w) {
  const auto* t = std::get_if<Transformer>(&w.shape);
  if (w.kind != WorkloadKind::transformer || t == nullptr || !t->step_kernels || t->moe || t->mla || w.training.pass != Pass::step)
    return std::nullopt;
  step::StepShape s;
  s.tokens = t->batch * t->seq;
  s.tp = std::max(1, w.tp);
  s.d_model = t->d_model;
  s.d_ffn = t->d_ffn;
  s.heads = t->heads;
  s.kv_heads = t->kv_heads;
  s.head_dim = t->head_dim > 0 ? t->head_dim : t->d_model / t->heads;
  s.gated = transformer_mlp(*t).gated;
  s.vocab = t->vocab;
  // FP8 runs keep their other activations in bf16 (Transformer Engine).
  s.activation_bytes = t->dtype == DType::fp32 ? 4 : 2;
  s.fp8 = t->dtype == DType::fp8;
  s.scaling = t->fp8_scaling;
  s.dropout = t->dropout > 0;
  s.fusion = t->fusion;
  return s;
}

namespace {

class StepDriver {
 public:
  StepDriver(const BuildContext& ctx, PassEmitter& e, const TrainingStepOptions& options)
      : w_(ctx.workload), e_(e), options_(options), dp_(e.builder(), ctx.workload), blocks_(layer_blocks(w_)),
        layers_(layer_count(w_)), shape_(step_kernel_shape(w_)) {
    // One layer's weights on this rank (both blocks) and its two norms' (replicated).
    if (shape_)
      layer_params_ = block_parameters(w_, Block::attention) + block_parameters(w_, Block::mlp) + 2 * shape_->d_model;
  }

  void run() {
    PerRank at;
    if (w_.training.pass != Pass::backward) {
      if (shape_) at = head_forward(at);
      for (int l = 0; l < layers_; ++l) at = forward_layer(l, at, "");
      if (shape_) at = tail_forward(at);
    }
    if (has_backward(w_)) {
      e_.builder().graph().set_pass(StepPass::backward);
      if (shape_) at = tail_backward(at);
      for (int l = layers_ - 1; l >= 0; --l) at = backward_layer(l, at);
      if (shape_) at = head_backward(at);
      // The layers this run leaves out hand their gradients to the same bucket (layer composition's
      // shallow runs of a step whose one bucket holds the whole model: DataParallel::gradient_layers).
      if (const int missing = w_.training.parallel.gradient_layers - layers_; missing > 0)
        dp_.gradient_ready(missing * layer_gradient_elements(w_), {});
      dp_.flush();
      if (shape_) optimizer();
    }
  }

 private:
  std::string layer_prefix(int l) const { return w_.kind == WorkloadKind::transformer ? fmt::format("L{}.", l) : std::string{}; }

  PerRank ends_or_join(PerRank ends, const std::string& name) {
    return ends.empty() ? e_.join_streams(dp_.streams(), name) : ends;
  }

  // Memory-bound kernels one after another on the compute stream.
  PerRank kernels(PerRank at, const step::Kernels& list, const std::string& prefix) {
    for (const step::MemoryBoundKernel& k : list) at = e_.memory(k.bytes, at, prefix + k.name);
    return at;
  }

  static step::Site before(Block b) { return b == Block::mlp ? step::Site::before_mlp : step::Site::before_attention; }
  static step::Site after(Block b) { return b == Block::mlp ? step::Site::after_mlp : step::Site::after_attention; }

  PerRank forward_layer(int l, PerRank at, const std::string& tag) {
    if (tag.empty()) {
      const PerRank gate = dp_.forward_layer(l, at);
      if (!gate.empty()) at = e_.join({at, gate}, fmt::format("L{}.params_ready", l));
      // FP8 weights are cast once per step; a recomputed forward reuses them.
      if (shape_) at = kernels(at, step::layer_fp8_weights(*shape_, layer_params_), layer_prefix(l));
    }
    for (const Block block : blocks_) {
      const std::string prefix = tag + layer_prefix(l);
      if (shape_) at = kernels(at, step::layer_forward(*shape_, before(block)), prefix);
      at = ends_or_join(e_.forward(block, at, prefix), prefix + "forward_end");
      if (shape_) at = kernels(at, step::layer_forward(*shape_, after(block)), prefix);
    }
    return at;
  }

  PerRank backward_layer(int l, PerRank at) {
    const PerRank gate = dp_.backward_layer(l, at);
    if (!gate.empty()) at = e_.join({at, gate}, fmt::format("bwd.L{}.params_ready", l));
    // Full recomputation redoes the layer's forward, its collectives included, from the checkpointed
    // input (Korthikanti et al. Sec. 5, Megatron's --recompute-granularity full, uniform, 1 layer).
    if (w_.training.recompute == Recompute::full) at = forward_layer(l, at, "recompute.");
    const std::string prefix = "bwd." + layer_prefix(l);
    for (auto block = blocks_.rbegin(); block != blocks_.rend(); ++block) {
      if (shape_) at = kernels(at, step::layer_backward(*shape_, after(*block)), prefix);
      for (const BackwardStep& step : backward_steps(w_, *block)) at = backward_step(step, l, at);
      if (shape_) at = kernels(at, step::layer_backward(*shape_, before(*block)), prefix);
    }
    dp_.backward_layer_done(l, at);
    return at;
  }

  // The token embedding (vocabulary-parallel: each rank looks up the tokens of its shard, the others'
  // rows are zero) and the reduce-scatter that sums the shards into the sequence-parallel layout
  // (Megatron-LM's VocabParallelEmbedding with sequence parallelism).
  PerRank head_forward(PerRank at) {
    const step::StepShape& s = *shape_;
    if (s.vocab > 0) {
      at = kernels(at, step::embedding_forward(s), "");
      at = e_.collective(Primitive::reduce_scatter, hidden_bytes(), at, "embedding.reduce_scatter");
    }
    return kernels(at, step::first_layer_norm(s), "L0.");
  }

  // The final norm, the output layer (column-parallel over the vocabulary: its input all-gathered) and
  // the vocabulary-parallel cross-entropy with its all-reduces (the row maxima, then the predicted
  // logits and the exp sums: two apart, or one fused) over the TP group; the logits are never gathered.
  PerRank tail_forward(PerRank at) {
    const step::StepShape& s = *shape_;
    at = kernels(at, step::final_norm_forward(s), "");
    if (s.vocab <= 0) return at;
    at = e_.collective(Primitive::all_gather, hidden_bytes(), at, "output.all_gather");
    at = e_.gemm(output_gemm(), at, "output");
    const step::CrossEntropyKernels ce = step::cross_entropy(s);
    const Bytes ar = step::cross_entropy_all_reduce_bytes(s);
    at = kernels(at, ce.before_max, "");
    at = e_.collective(Primitive::all_reduce, ar, at, "loss.max.all_reduce");
    at = kernels(at, ce.after_max, "");
    for (int i = 0; i < ce.sum_all_reduces; ++i)
      at = e_.collective(Primitive::all_reduce, ar, at, fmt::format("loss.sums.all_reduce{}", i));
    return kernels(at, ce.after_sums, "");
  }

  // The loss's backward, the output layer's (Megatron's asynchronous column-parallel backward: the
  // input re-gathered beside dgrad, dX reduce-scattered beside wgrad) and the final norm's.
  PerRank tail_backward(PerRank at) {
    const step::StepShape& s = *shape_;
    if (s.vocab > 0) {
      at = kernels(at, step::cross_entropy(s).backward, "bwd.");
      LinearBackward out;
      out.name = "output";
      out.dgrad = dgrad_of(output_gemm());
      out.wgrad = wgrad_of(output_gemm());
      out.scatter = Primitive::reduce_scatter;
      out.scatter_bytes = hidden_bytes();
      out.regather_bytes = hidden_bytes();
      at = emit_linear_backward(e_, out, ColumnBackward::bulk, "bwd.output", at);
    }
    return kernels(at, step::final_norm_backward(s), "bwd.");
  }

  // The embedding's backward: dY all-gathered from the sequence-parallel shards, then scatter-added.
  PerRank head_backward(PerRank at) {
    if (shape_->vocab <= 0) return at;
    at = e_.collective(Primitive::all_gather, hidden_bytes(), at, "bwd.embedding.all_gather");
    return kernels(at, step::embedding_backward(*shape_), "bwd.");
  }

  // After every gradient is reduced: the gradient norm's squares of each layer's local shard, the norm
  // all-reduced over the TP group (one fp32), the clipping and Adam, each a launch per layer; then the
  // embedding's, the output layer's and the final norm's parameters.
  void optimizer() {
    const step::StepShape& s = *shape_;
    const DataParallel& dp = w_.training.parallel;
    const int g = dtype_bytes(dp.grad_dtype);
    auto local = [&](std::int64_t params) {
      return dp.dp > 1 && dp.fsdp != Sharding::none ? (params + dp.dp - 1) / dp.dp : params;
    };
    const std::int64_t layer = local(layer_params_);
    const std::int64_t rows = s.vocab > 0 ? (s.vocab + s.tp - 1) / s.tp * s.d_model : 0;
    const std::int64_t outer = local(2 * rows + s.d_model);
    PerRank at = e_.join_streams({}, "optimizer.grads_ready");
    auto per_layer = [&](auto kernels_of) {
      for (int l = 0; l < layers_; ++l) at = kernels(at, kernels_of(layer), layer_prefix(l));
      at = kernels(at, kernels_of(outer), "embedding_output.");
    };
    per_layer([&](std::int64_t p) { return step::grad_norm(p, g); });
    at = e_.collective(Primitive::all_reduce, 4, at, "optimizer.grad_norm.all_reduce");
    per_layer([&](std::int64_t p) { return step::clip_grads(p, g); });
    per_layer([&](std::int64_t p) { return step::adam(p, g, s.fusion); });
  }

  Bytes hidden_bytes() const { return shape_->tokens * shape_->d_model * shape_->activation_bytes; }
  RankGemm output_gemm() const {
    const step::StepShape& s = *shape_;
    // The output layer stays in bf16 in FP8 runs (TE's recipes leave it out).
    return RankGemm{s.tokens, (s.vocab + s.tp - 1) / s.tp, s.d_model, s.activation_bytes == 4 ? DType::fp32 : DType::bf16};
  }

  PerRank backward_step(const BackwardStep& step, int l, const PerRank& at) {
    const std::string name = "bwd." + layer_prefix(l) + step.name;
    switch (step.kind) {
      case BackwardStep::Kind::linear: return linear(step.linear, name, at);
      case BackwardStep::Kind::memory: return e_.memory(step.bytes, at, name);
      case BackwardStep::Kind::flops:
        if (step.unfused) return e_.unfused_attention(*step.unfused, AttentionPass::backward, recompute_core(step, l, at), name);
        return e_.flops(step.flops, step.tiles, step.dtype, recompute_core(step, l, at), name);
      case BackwardStep::Kind::ulysses: {
        UlyssesPass u{name, step.ulysses_in_bytes, step.flops, step.tiles, step.bytes, step.heads, step.dtype};
        return e_.ulysses(u, recompute_core(step, l, at));
      }
    }
    return at;
  }

  // Selective recomputation (Megatron-core's recompute module core_attn): core attention's forward is
  // run again right before its backward. Its collectives are not redone: core attention has none.
  PerRank recompute_core(const BackwardStep& step, int l, const PerRank& at) {
    if (w_.training.recompute != Recompute::selective || !(step.recompute_flops > 0)) return at;
    if (step.unfused)
      return e_.unfused_attention(*step.unfused, AttentionPass::forward, at, "recompute." + layer_prefix(l) + step.name);
    return e_.flops(step.recompute_flops, step.tiles, step.dtype, at, "recompute." + layer_prefix(l) + step.name);
  }

  PerRank linear(const LinearBackward& l, const std::string& name, const PerRank& at) {
    const std::int64_t grads = l.wgrad.m * l.wgrad.n;
    return emit_linear_backward(e_, l, options_.column, name, at,
                                [&](const PerRank& wgrad) { dp_.gradient_ready(grads, wgrad); });
  }

  const Workload& w_;
  PassEmitter& e_;
  const TrainingStepOptions& options_;
  DataParallelTraffic dp_;
  std::vector<Block> blocks_;
  int layers_ = 1;
  std::optional<step::StepShape> shape_;  // the step's memory-bound kernels; nullopt: not this workload's
  std::int64_t layer_params_ = 0;
};

std::string step_reason(const Workload& w) {
  const Training& t = w.training;
  std::string out = pass_name(t.pass);
  if (t.recompute != Recompute::none) out += fmt::format(", recompute {}", recompute_name(t.recompute));
  if (t.parallel.dp > 1) out += fmt::format(", DP {} ({})", t.parallel.dp, sharding_name(t.parallel.fsdp));
  return out;
}

}  // namespace

PerRank emit_linear_backward(PassEmitter& e, const LinearBackward& l, ColumnBackward column, const std::string& name,
                             const PerRank& at, const std::function<void(const PerRank&)>& wgrad_done) {
  auto done = [&](PerRank wgrad) {
    if (wgrad_done) wgrad_done(wgrad);
    return wgrad;
  };
  if (l.gather_bytes > 0) {
    // Row-parallel: dY gathered (or exchanged) before dgrad; wgrad reads the same gathered dY.
    const PerRank dgrad = e.gather_gemm(GatherGemm{name + ".dgrad", l.gather, l.gather_bytes, l.dgrad, false}, at);
    return done(e.gemm(l.wgrad, dgrad, name + ".wgrad"));
  }
  if (l.scatter_bytes <= 0) {
    // The backward of a forward all-reduce is the identity: dgrad and wgrad, nothing to communicate.
    const PerRank dgrad = e.gemm(l.dgrad, at, name + ".dgrad");
    return done(e.gemm(l.wgrad, dgrad, name + ".wgrad"));
  }
  const std::string scatter_name = name + ".dgrad." + primitive_name(l.scatter);
  if (column == ColumnBackward::bulk) {
    const PerRank gathered =
        l.regather_bytes > 0 ? e.collective(Primitive::all_gather, l.regather_bytes, at, name + ".input_all_gather") : PerRank{};
    const PerRank dgrad = e.gemm(l.dgrad, at, name + ".dgrad");
    const PerRank scattered = e.collective(l.scatter, l.scatter_bytes, dgrad, scatter_name);
    const PerRank wgrad = done(e.gemm(l.wgrad, gathered.empty() ? dgrad : gathered, name + ".wgrad"));
    return e.join({scattered, wgrad}, name + ".end");
  }
  const PerRank scattered = e.gemm_scatter(GemmScatter{name + ".dgrad", l.dgrad, l.scatter, l.scatter_bytes}, at);
  const PerRank wgrad = done(l.regather_bytes > 0
                                 ? e.gather_gemm(GatherGemm{name + ".wgrad", Primitive::all_gather, l.regather_bytes, l.wgrad, true}, at)
                                 : e.gemm(l.wgrad, at, name + ".wgrad"));
  return e.join({scattered, wgrad}, name + ".end");
}

std::int64_t layer_gradient_elements(const Workload& w) {
  std::int64_t elements = 0;
  for (const Block block : layer_blocks(w))
    for (const BackwardStep& s : backward_steps(w, block))
      if (s.kind == BackwardStep::Kind::linear) elements += s.linear.wgrad.m * s.linear.wgrad.n;
  return elements;
}

BuiltScheme build_training_step(const BuildContext& ctx, PassEmitter& e, const TrainingStepOptions& options) {
  StepDriver(ctx, e, options).run();
  std::string reason = step_reason(ctx.workload);
  if (has_backward(ctx.workload) && options.column == ColumnBackward::bulk) reason += ", bulk column-parallel backward";
  if (!options.reason.empty()) reason = options.reason + "; " + reason;
  return e.builder().finish(reason, options.bound_ps);
}

}  // namespace overlap::sim
