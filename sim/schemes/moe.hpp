#pragma once
// The moe workload's schemes (docs/guide/moe.md): one MoE layer over the EP group as no_overlap,
// token-chunked pipelining (moe_pipeline), FlashOverlap's wave-grouped GEMM + combine all-to-all
// (moe_flashoverlap) and the all-to-alls fused into the expert GEMMs tile by tile (moe_tile_fused).
// Every rank runs its own routed token counts, so the slowest rank sets the latency (the
// all-to-allvs end with their slowest rank, cost_model/all_to_allv.hpp).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cost_model/all_to_allv.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/moe_routing.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

// A GEMM's options in the MoE layers' chains (experts, shared experts, their backward): its name and
// the one op it waits for (kNoOp: none).
inline GemmOptions gemm_after(std::string name, OpId dep) {
  GemmOptions o;
  o.name = std::move(name);
  if (dep != kNoOp) o.deps = {dep};
  return o;
}

struct MoeLayerOptions {
  // Token chunks: chunk c's dispatch overlaps chunk c-1's expert GEMMs and chunk c-2's combine
  // (moe_pipeline.cpp). 1 = no overlap: router, dispatch, experts, combine, shared experts.
  int chunks = 1;
  bool collectives_only = false;  // the dispatch and combine alone (the workload's communication)
  // A MoE transformer's training step: how the attention's and dense MLPs' column-parallel linears run
  // their backward (no_overlap's column_backward); a MoE block has none.
  ColumnBackward column = ColumnBackward::scheme;
};
// The moe workload's layer, or a MoE transformer's layers (build_moe_transformer), with these options.
BuiltScheme build_moe_layer(const BuildContext& ctx, const MoeLayerOptions& options);

// One MoE layer (build_moe_layer's ops) emitted into `b` on the streams `st` (compute and comm per
// rank: ep x expert_tp ranks, ETP innermost), rank r's first op after start[r] (start empty: none),
// every op name prefixed by `prefix` ("L3."). Returns each rank's last op (the layer's output is there
// once it ends) and the reason line.
struct MoeLayerOps {
  std::vector<OpId> end;
  std::string reason;
};
MoeLayerOps emit_moe_layer(GraphBuilder& b, const RankStreams& st, const Moe& m, const MoeRouting& routing,
                           const MoeLayerOptions& options, const std::vector<OpId>& start, const std::string& prefix);

// The backward of one MoE layer (moe_backward.cpp; docs/guide/moe.md "Training step"), rank r's first op
// after start[r]: shared experts' backward, combine backward (an all-to-allv of the dispatch's per-pair
// bytes), the experts' grouped dgrad and wgrad, dispatch backward (the combine's per-pair bytes), router
// backward; with options.chunks > 1 the token chunks pipelined as the forward's (moe_pipeline). Op names
// get `prefix` (the moe workload's "bwd.", a MoE transformer's "bwd.L3.moe."). With expert TP the combine backward is followed by an ETP all-gather of the
// output gradients and the experts' backward by an ETP reduce-scatter of the input gradients (the
// conjugates of the forward's reduce-scatter and all-gather).
MoeLayerOps emit_moe_backward(GraphBuilder& b, const RankStreams& st, const Moe& m, const MoeRouting& routing,
                              const MoeLayerOptions& options, const std::vector<OpId>& start, const std::string& prefix);
// EP rank `rank`'s routed experts' backward GEMMs for the counts of `sh`: a forward GEMM M x N x K has a
// dgrad M x K x N and a wgrad K x N x M (experts with no rows have no wgrad), and the SwiGLU backward's
// bytes (read dH and both projections, write two gradients: 5 d_ffn_expert per row).
struct MoeExpertBackward {
  std::vector<RankGemm> down_dgrad, down_wgrad, up_dgrad, up_wgrad;
  Bytes activation_bytes = 0;
};
MoeExpertBackward moe_expert_backward(const Moe& m, const MoeShapes& sh, int rank);
// The per-rank ops (indexed by graph rank) of an all-to-allv of EP-rank `bytes` over every EP group
// (the graph ranks e * expert_tp + j of one j; without expert TP one over every rank), rank r's member
// after deps[r] (deps empty or kNoOp: none). Defined in moe_pipeline.cpp, as the next.
std::vector<OpId> add_ep_all_to_allv(GraphBuilder& b, const RankStreams& st, const Moe& m, const std::string& name,
                                     const overlap::PairBytes& bytes, const std::vector<OpId>& deps);
// A dispatch or combine over the EP group as the workload's all_to_all runs it (moe_all_to_all.cpp):
// nccl is b.add_all_to_allv(spec) itself; deepep, deepep_low_latency and hierarchical one comm kernel
// per member of their cost model's time, holding the SMs the algorithm holds.
std::vector<OpId> add_expert_all_to_allv(GraphBuilder& b, const Moe& m, const AllToAllvSpec& spec);
// Why a moe scheme cannot run the workload's all_to_all (nullopt: it can): moe_tile_fused moves its rows
// with its own SM copies, so only nccl (sim/scenario.cpp read_scheme names workload.all_to_all).
std::optional<std::string> moe_all_to_all_refusal(const Workload& w, const std::string& scheme);
// The ETP all-gather or reduce-scatter over every ETP group (nccl-tests S = the union's rows x d_model
// of EP rank e in `ep_shapes`), rank r's member after deps[r]; without expert TP, `deps` itself.
std::vector<OpId> add_etp_collective(GraphBuilder& b, const RankStreams& st, const Moe& m, const std::string& name,
                                     Primitive primitive, const MoeShapes& ep_shapes, const std::vector<OpId>& deps);

// Rank r's shared experts' backward (dgrad and wgrad of shared.down, the activation's backward, dgrad and
// wgrad of shared.up) after `dep`; returns `dep` when the model has none.
OpId add_moe_shared_experts_backward(GraphBuilder& b, int r, StreamId stream, const Moe& m, OpId dep,
                                     const std::string& prefix = "");

// A transformer of a mixture-of-experts model (Transformer::moe): per layer the attention block with
// no overlap (all-gather, QKV, core attention, output projection, reduce-scatter: no_overlap's
// attention_tpsp), then the FFN: the dense MLP with no overlap for the first dense_layers layers, the
// MoE block with `options` for the others. With workload.pass backward | step the backward of every
// layer follows in reverse (the MoE block's emit_moe_backward, the dense blocks' as no_overlap runs
// them). Defined in moe_transformer.cpp.
BuiltScheme build_moe_transformer(const BuildContext& ctx, const MoeLayerOptions& options);
// The same with the MoE block emitted by a scheme's own forms (moe_flashoverlap's), rank r's block after
// start[r], its names prefixed; collectives_only keeps the attention's collectives alone.
using MoeBlockEmitter = std::function<MoeLayerOps(GraphBuilder& b, const RankStreams& st, const Moe& m,
                                                  const MoeRouting& routing, const std::vector<OpId>& start,
                                                  const std::string& prefix)>;
struct MoeBlockForms {
  MoeBlockEmitter forward;
  MoeBlockEmitter backward;  // empty: the scheme has no backward form (a training step is refused)
  ColumnBackward column = ColumnBackward::scheme;
};
BuiltScheme build_moe_transformer(const BuildContext& ctx, bool collectives_only, const MoeBlockForms& forms);

// Rank r's shared experts (gated FFN of d_ffn_expert per shared expert on the rank's own tokens:
// shared.up, shared.act, shared.down) on `stream` after `dep` (kNoOp: none). Returns the last op, or
// `dep` when the model has no shared experts. Defined in moe_pipeline.cpp; every moe scheme runs them.
OpId add_moe_shared_experts(GraphBuilder& b, int r, StreamId stream, const Moe& m, OpId dep,
                            const std::string& prefix = "");

// Expert tensor parallelism (Moe::expert_tp > 1; docs/guide/moe.md "Expert tensor parallelism"): each
// EP rank's expert GEMMs as every member of its ETP group runs them: M = the rows the group gathered
// (expert_tp x the EP rank's count, every member routing its EP rank's counts), gate+up N =
// 2 d_ffn_expert / expert_tp (column-parallel), down K = d_ffn_expert / expert_tp (row-parallel).
// `tokens` are the EP ranks' counts [src][expert] (one chunk's or the layer's). Defined in
// moe_pipeline.cpp.
MoeShapes moe_etp_shapes(const Moe& m, const CountMatrix& tokens);
// nccl-tests S of the ETP all-gather (and of the reduce-scatter of the down projection's partial sums)
// of EP rank `ep_rank`'s group: the gathered rows (expert_tp x what each member received) x d_model.
// `ep_shapes` is moe_shapes of the EP ranks' counts.
Bytes moe_etp_gathered_bytes(const Moe& m, const MoeShapes& ep_shapes, int ep_rank);
// Why a moe scheme that does not model expert TP refuses the workload (nullopt: it runs): schemes
// whose applies() is false for expert_tp > 1 name the key and the reason (sim/scenario.cpp read_scheme).
std::optional<std::string> moe_expert_tp_refusal(const Workload& w, const std::string& scheme);

// The combine bytes of the down-projection tiles [first, last) of one rank's grouped GEMM, to each
// source rank: expert e's rows are the slots tokens[src][e] of every source in source order, and a
// tile's rows of one source go back to it (FlashOverlap Sec. 3.3.3 (3): a tile split by token into
// per-destination pools). `down` and `plan` are the rank's grouped GEMM; `experts` the global ids of
// its local experts.
std::vector<Bytes> moe_tile_range_bytes(const std::vector<GemmShape>& down, const GroupedGemmPlan& plan,
                                        const CountMatrix& tokens, const std::vector<int>& experts, std::int64_t first,
                                        std::int64_t last);
// The same for ETP member `member` of the EP rank (expert_tp > 1, docs/guide/moe.md "Expert tensor
// parallelism"): `down` is the grouped GEMM on the ETP group's gathered rows, whose gathered row i is
// member i mod expert_tp's row i / expert_tp (moe_flashoverlap.cpp groups_of says why); the bytes are
// those of the member's own rows among the tiles, to each source EP rank. expert_tp 1: the above.
std::vector<Bytes> moe_etp_tile_range_bytes(const std::vector<GemmShape>& down, const GroupedGemmPlan& plan,
                                            const CountMatrix& tokens, const std::vector<int>& experts,
                                            std::int64_t first, std::int64_t last, int expert_tp, int member);

}  // namespace overlap::sim
