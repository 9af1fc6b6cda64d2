// The backward of one MoE layer (docs/guide/moe.md "Training step"): the forward's ops in reverse, each
// all-to-all's autograd an all-to-all with the split sizes swapped (Megatron-core's MoEAlltoAllTokenDispatcher:
// its all_to_all autograd function runs all_to_all(grad, input_split_sizes <-> output_split_sizes) in the
// backward). Per rank, in order:
//   shared experts' backward (down dgrad + wgrad, activation backward, gate+up dgrad + wgrad; they read
//     the layer's output gradient as the routed experts do),
//   combine backward: the output gradients of the routed slots go from each token's rank back to the
//     expert rank that produced them: rank t sends to rank e what e sent to t in the combine (= the
//     dispatch's per-pair bytes),
//   the experts' backward as grouped GEMMs: down-projection dgrad (rows x f x d) and wgrad (f x d x rows),
//     the SwiGLU backward, gate+up dgrad (rows x d x 2f) and wgrad (d x 2f x rows); each expert's wgrad
//     on its own rows (an expert with no rows has none), planned as the forward's grouped GEMMs,
//   dispatch backward: the input gradients go back to the tokens' ranks (the combine's per-pair bytes),
//   router backward (dgrad and wgrad of the tokens x experts x d_model GEMM).
// With expert TP (Moe::expert_tp) the conjugates of the forward's ETP collectives (Megatron-LM's f / g
// operators): an all-gather of the output gradients over the ETP group after the combine backward (the
// forward reduce-scattered the down projection's partial sums) and a reduce-scatter of the input
// gradients after the experts (the forward all-gathered the dispatched tokens), each member running
// 1 / expert_tp of every expert's FFN on the gathered rows.
// A forward GEMM M x N x K has a dgrad M x K x N and a wgrad K x N x M: the backward's GEMMs are twice the
// forward's FLOPs (Narayanan et al., Sec. 5.1; sim/backward_shapes.hpp).
//
// Chunked (moe_pipeline, the mirror of the forward's pipeline): the comm stream issues
//   k0, k1, d0, k2, d1, ..., k(C-1), d(C-2), d(C-1)     (k: combine backward, d: dispatch backward)
// beside the compute stream running chunk c's expert backward after k(c): while chunk c-1's experts run
// their backward, chunk c's output gradients arrive and chunk c-2's input gradients leave. The shared
// experts' backward runs first on the compute stream (overlapping k0) and the router's after the last
// chunk's experts (overlapping the last dispatch backward), as the forward runs them beside its first
// dispatch.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "sim/backward_shapes.hpp"
#include "sim/schemes/moe.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

namespace {


std::vector<RankGemm> wgrads_of(const std::vector<RankGemm>& forward) {
  std::vector<RankGemm> out;
  for (const RankGemm& g : forward)
    if (g.m > 0) out.push_back(wgrad_of(g));  // an expert that received no rows has no gradient to compute
  return out;
}

std::vector<RankGemm> dgrads_of(const std::vector<RankGemm>& forward) {
  std::vector<RankGemm> out;
  for (const RankGemm& g : forward) out.push_back(dgrad_of(g));
  return out;
}

// dgrad then wgrad of one forward GEMM (or grouped GEMM) on `stream`, after `dep`.
OpId add_gemm_backward(GraphBuilder& b, int r, StreamId stream, const RankGemm& forward, const std::string& name,
                       OpId dep) {
  const OpId dg = b.add_gemm(r, stream, dgrad_of(forward), gemm_after(name + ".dgrad", dep));
  return b.add_gemm(r, stream, wgrad_of(forward), gemm_after(name + ".wgrad", dg));
}

OpId add_grouped_backward(GraphBuilder& b, int r, StreamId stream, const MoeExpertBackward& e, bool up,
                          const std::string& name, OpId dep) {
  const OpId dg = b.add_grouped_gemm(r, stream, up ? e.up_dgrad : e.down_dgrad, gemm_after(name + ".dgrad", dep));
  return b.add_grouped_gemm(r, stream, up ? e.up_wgrad : e.down_wgrad, gemm_after(name + ".wgrad", dg));
}

// Rank r's routed experts' backward: down, activation, gate+up.
OpId add_experts_backward(GraphBuilder& b, int r, StreamId stream, const MoeExpertBackward& e, const std::string& name,
                          OpId dep) {
  const OpId down = add_grouped_backward(b, r, stream, e, false, name + ".down", dep);
  MemoryKernel act;
  act.name = name + ".act";
  act.bytes = e.activation_bytes;
  act.deps = {down};
  const OpId a = b.add_memory(r, stream, act);
  return add_grouped_backward(b, r, stream, e, true, name + ".up", a);
}

}  // namespace

MoeExpertBackward moe_expert_backward(const Moe& m, const MoeShapes& sh, int rank) {
  const auto r = static_cast<std::size_t>(rank);
  MoeExpertBackward e;
  e.down_dgrad = dgrads_of(sh.down[r]);
  e.down_wgrad = wgrads_of(sh.down[r]);
  e.up_dgrad = dgrads_of(sh.up[r]);
  e.up_wgrad = wgrads_of(sh.up[r]);
  // SwiGLU's backward reads dH and both projections and writes their two gradients: 5 f per row against
  // the forward's 3 f (as the dense MLP's backward, sim/backward_shapes.cpp mlp_backward).
  std::int64_t rows = 0;
  for (const RankGemm& g : sh.up[r]) rows += g.m;
  e.activation_bytes = activation_bytes(rows, 5 * m.d_ffn_expert, m.dtype);
  return e;
}

OpId add_moe_shared_experts_backward(GraphBuilder& b, int r, StreamId stream, const Moe& m, OpId dep,
                                     const std::string& prefix) {
  if (m.shared_experts <= 0) return dep;
  const OpId down = add_gemm_backward(b, r, stream, moe_shared_down(m), prefix + "shared.down", dep);
  MemoryKernel act;
  act.name = prefix + "shared.act";
  act.bytes = activation_bytes(m.tokens, 5 * m.shared_experts * m.d_ffn_expert, m.dtype);
  act.deps = {down};
  const OpId a = b.add_memory(r, stream, act);
  return add_gemm_backward(b, r, stream, moe_shared_up(m), prefix + "shared.up", a);
}

MoeLayerOps emit_moe_backward(GraphBuilder& b, const RankStreams& st, const Moe& m, const MoeRouting& routing,
                              const MoeLayerOptions& options, const std::vector<OpId>& start,
                              const std::string& prefix) {
  const int C = std::max(1, options.chunks);
  const bool compute = !options.collectives_only;
  const int etp = std::max(1, m.expert_tp);
  const int n = m.ep * etp;  // graph ranks: rank = ep_index x expert_tp + etp_index
  const std::string& pre = prefix;
  auto start_of = [&](int r) { return start.empty() ? kNoOp : start[static_cast<std::size_t>(r)]; };
  auto name_of = [&](const char* what, int c) {
    return pre + (C > 1 ? fmt::format("{}[{}]", what, c) : std::string(what));
  };
  // chunk[c]: the EP ranks' all-to-all bytes of chunk c; gemm[c]: the expert GEMMs each GPU runs (with
  // expert TP the ETP group's gathered rows at 1 / expert_tp of each FFN, moe_etp_shapes; `split` is the
  // model as one ETP member sees it).
  Moe split = m;
  split.d_ffn_expert = m.d_ffn_expert / etp;
  split.expert_tp = 1;
  std::vector<MoeShapes> chunk, gemm;
  for (int c = 0; c < C; ++c) {
    chunk.push_back(moe_shapes(m, C == 1 ? routing.tokens : moe_chunk_tokens(routing.tokens, C, c)));
    if (etp > 1) gemm.push_back(moe_etp_shapes(m, chunk.back().tokens));
  }
  const std::vector<MoeShapes>& gemms = etp > 1 ? gemm : chunk;
  // The all-to-allvs over every EP group and, with expert TP, the conjugates of the forward's ETP
  // collectives: the backward of its reduce-scatter is an all-gather of the output gradients over the ETP
  // group, the backward of its all-gather a reduce-scatter of the input gradients (Megatron-LM's
  // conjugate operators); nccl-tests S is the union's rows x d_model.
  auto all_to_allv = [&](const std::string& name, const overlap::PairBytes& bytes, const std::vector<OpId>& deps) {
    return add_ep_all_to_allv(b, st, m, name, bytes, deps);
  };
  auto etp_collective = [&](const char* what, Primitive primitive, int c, const std::vector<OpId>& deps) {
    return add_etp_collective(b, st, m, name_of(what, c), primitive, chunk[static_cast<std::size_t>(c)], deps);
  };
  auto compute_of = [&](int r) { return st.compute[static_cast<std::size_t>(r)]; };

  // The shared experts' backward first: unchunked, the combine backward waits for it (no overlap);
  // chunked, it runs beside the first combine backward.
  std::vector<OpId> first(static_cast<std::size_t>(n), kNoOp);
  for (int r = 0; r < n; ++r)
    first[static_cast<std::size_t>(r)] =
        compute ? add_moe_shared_experts_backward(b, r, compute_of(r), m, start_of(r), pre) : start_of(r);
  std::vector<OpId> combine_deps = first;
  if (C > 1)
    for (int r = 0; r < n; ++r) combine_deps[static_cast<std::size_t>(r)] = start_of(r);

  // Combine backward of chunk c: token rank t sends expert rank e the gradients of the slots e combined
  // to t, i.e. the transpose of the combine's bytes = the dispatch's; dispatch backward: the transpose
  // of the dispatch's = the combine's. On the comm stream: k0 [g0] k1 [g1] [s0] d0 k2 [g2] [s1] d1 ...
  // (g: ETP all-gather, s: ETP reduce-scatter).
  auto combine = [&](int c, const std::vector<OpId>& deps) {
    return etp_collective("gather", Primitive::all_gather, c,
                          all_to_allv(name_of("combine", c), chunk[static_cast<std::size_t>(c)].dispatch, deps));
  };
  std::vector<std::vector<OpId>> combined(static_cast<std::size_t>(C));
  combined[0] = combine(0, combine_deps);
  std::vector<OpId> last = combined[0];
  std::vector<OpId> experts_end(static_cast<std::size_t>(n), kNoOp);
  for (int c = 0; c < C; ++c) {
    if (c + 1 < C) combined[static_cast<std::size_t>(c + 1)] = combine(c + 1, {});
    std::vector<OpId> experts = combined[static_cast<std::size_t>(c)];
    if (compute)
      for (int r = 0; r < n; ++r)
        experts[static_cast<std::size_t>(r)] = add_experts_backward(
            b, r, compute_of(r), moe_expert_backward(split, gemms[static_cast<std::size_t>(c)], r / etp),
            name_of("experts", c), combined[static_cast<std::size_t>(c)][static_cast<std::size_t>(r)]);
    experts_end = experts;
    last = all_to_allv(name_of("dispatch", c), chunk[static_cast<std::size_t>(c)].combine,
                       etp_collective("scatter", Primitive::reduce_scatter, c, experts));
  }
  if (compute)
    for (int r = 0; r < n; ++r) {
      const auto i = static_cast<std::size_t>(r);
      // Unchunked, the router's backward follows the dispatch backward; chunked, it follows the last
      // chunk's experts on the compute stream, beside the last dispatch backward, and the layer ends
      // when both have.
      const OpId router = add_gemm_backward(b, r, compute_of(r), moe_router_gemm(m), pre + "router",
                                            C > 1 ? experts_end[i] : last[i]);
      last[i] = C > 1 ? b.add_delay(r, compute_of(r), 0, pre + "end", {router, last[i]}) : router;
    }
  return {last, fmt::format("backward {}{}", C > 1 ? fmt::format("in {} token chunks", C) : std::string("with no overlap"),
                            etp > 1 ? fmt::format(", expert_tp = {}", etp) : std::string())};
}

}  // namespace overlap::sim
