#pragma once
// A training step of a layer workload (workload.pass forward | backward | step; docs/guide/training.md):
// the forward of every layer, then the backward of every layer in reverse, with activation
// recomputation and data-parallel traffic. One driver for every scheme: a scheme supplies a
// PassEmitter, which builds its forward blocks and overrides the communication patterns of the
// backward it overlaps (an all-gather feeding a GEMM, a GEMM feeding a reduce-scatter, Ulysses'
// all-to-alls); what it does not override runs as no_overlap runs it.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cost_model/step_kernels.hpp"
#include "sim/backward_shapes.hpp"
#include "sim/schemes/core_attention.hpp"
#include "sim/schemes/graph_builder.hpp"

namespace overlap::sim {

// Per-rank ops (index = rank). Empty: none (the first block of a graph).
using PerRank = std::vector<OpId>;

// A collective whose result feeds a GEMM: dY all-gathered before a row-parallel dgrad (the gathered
// dimension is the GEMM's M), or the input gathered again before a column-parallel wgrad (the gathered
// dimension is its K: the tokens; split_k).
struct GatherGemm {
  std::string name;
  Primitive primitive = Primitive::all_gather;
  Bytes bytes = 0;  // nccl-tests S
  RankGemm gemm;
  bool split_k = false;
};

// A GEMM whose output a collective reduces: a column-parallel dgrad and its reduce-scatter (all-reduce
// without SP). The scattered dimension is the GEMM's M (tokens).
struct GemmScatter {
  std::string name;
  RankGemm gemm;
  Primitive primitive = Primitive::reduce_scatter;
  Bytes bytes = 0;
};

// Ulysses' backward: all-to-all of `in_bytes`, core attention's backward, all-to-all of `out_bytes`
// (CommFuse Alg. 5's shape with the backward's sizes).
struct UlyssesPass {
  std::string name;
  Bytes in_bytes = 0;
  double flops = 0;
  std::int64_t tiles = 0;
  Bytes out_bytes = 0;
  std::int64_t heads = 0;
  DType dtype = DType::bf16;
};

class PassEmitter {
 public:
  // Adds a compute (priority 0) and a communication (priority 1) stream per rank for the steps the
  // driver emits itself.
  explicit PassEmitter(GraphBuilder& b);
  // On streams the scheme already made; collectives_only: the plain steps add no computation (the
  // workload's collectives alone, what "communication time" is measured on).
  PassEmitter(GraphBuilder& b, RankStreams streams, bool collectives_only = false);
  virtual ~PassEmitter() = default;
  PassEmitter(const PassEmitter&) = delete;
  PassEmitter& operator=(const PassEmitter&) = delete;

  GraphBuilder& builder() { return b_; }
  int ranks() const { return b_.ranks(); }

  // The forward of one block (`prefix` names its ops), after `start`. Returns per-rank ops that end
  // it, or empty when the block ends in stream order (the driver then joins every stream of the rank).
  virtual PerRank forward(Block block, const PerRank& start, const std::string& prefix) = 0;

  // The backward patterns: no_overlap's form here (the collective, then the GEMM or the other way
  // round, one after the other); a scheme overrides those it overlaps. Each returns per-rank end ops.
  virtual PerRank gather_gemm(const GatherGemm& g, const PerRank& start);
  virtual PerRank gemm_scatter(const GemmScatter& g, const PerRank& start);
  virtual PerRank ulysses(const UlyssesPass& u, const PerRank& start);

  // Plain steps on the driver's streams.
  PerRank gemm(const RankGemm& g, const PerRank& start, const std::string& name);
  PerRank collective(Primitive p, Bytes bytes, const PerRank& start, const std::string& name);
  PerRank memory(Bytes bytes, const PerRank& start, const std::string& name);
  PerRank flops(double flops, std::int64_t tiles, DType dtype, const PerRank& start, const std::string& name);
  // Core attention's forward as the workload runs it (sim/schemes/core_attention.hpp), and unfused
  // attention's kernels of either pass.
  PerRank core_attention(const AttentionShapes& s, DType dtype, const PerRank& start, const std::string& name);
  PerRank unfused_attention(const UnfusedAttention& u, AttentionPass pass, const PerRank& start, const std::string& name);
  // A zero-time op per rank after `ops` (any number per rank, kNoOp skipped).
  PerRank join(const std::vector<PerRank>& ops, const std::string& name);
  // A zero-time op per rank after the last op of every stream of the rank except `excluded`.
  PerRank join_streams(const std::vector<StreamId>& excluded, const std::string& name);

  StreamId compute_stream(int rank) const { return streams_.compute[static_cast<std::size_t>(rank)]; }
  StreamId comm_stream(int rank) const { return streams_.comm[static_cast<std::size_t>(rank)]; }

 protected:
  GraphBuilder& b_;
  RankStreams streams_;
  bool collectives_only_ = false;
};

struct TrainingStepOptions {
  ColumnBackward column = ColumnBackward::scheme;
  std::string reason;  // the scheme's one line; the driver adds the step's
  Ps bound_ps = -1;
};

// The memory-bound kernels of the workload's step (cost_model/step_kernels.hpp), shaped from it: a dense
// transformer's pass: step runs them (norms, rotary, residual adds, embedding, loss, optimizer);
// nullopt for every other workload, whose graph is the layers' GEMMs, attention and collectives alone.
std::optional<step::StepShape> step_kernel_shape(const Workload& w);

// The weight-gradient elements per rank one layer's backward hands the data-parallel buckets (every
// linear's wgrad output; a dense transformer's layers all hand the same).
std::int64_t layer_gradient_elements(const Workload& w);

// The workload's pass (workload.training) built with `e`, on e's builder; then finishes it.
BuiltScheme build_training_step(const BuildContext& ctx, PassEmitter& e, const TrainingStepOptions& options);

// One linear's backward (LinearBackward, sim/backward_shapes.hpp: Korthikanti et al. Sec. 4.2.2) with
// `e` after `at`, its ops named `name` + ".dgrad" / ".wgrad" / ...; `column` says how a column-parallel
// linear runs it. `wgrad_done`, when given, is called with the weight-gradient GEMM's ops as soon as
// they exist (a step's data-parallel gradient traffic hangs off them). Returns the linear's end.
PerRank emit_linear_backward(PassEmitter& e, const LinearBackward& l, ColumnBackward column, const std::string& name,
                             const PerRank& at, const std::function<void(const PerRank&)>& wgrad_done = {});

// The knob the schemes that overlap the backward share: how column-parallel linears run it.
const SchemeParam& column_backward_param();
ColumnBackward column_backward(const BuildContext& ctx);


}  // namespace overlap::sim
