// The moe layer with no overlap and with token-chunked pipelining (moe_pipeline).
//
// Pipelining follows Tutel (Hwang et al., "Tutel: Adaptive Mixture-of-Experts at Scale", MLSys 2023,
// arXiv:2206.03382), its adaptive pipelining (tutel's moe_layer knob a2a_ffn_overlap_degree): the
// tokens are split into partitions (our `chunks`) whose All-to-All runs while another partition's
// experts compute. Megatron-core's MoE all-to-all
// overlap works on the same three stages. The schedule here is one comm stream issuing
//   d0, d1, k0, d2, k1, ..., d(C-1), k(C-2), k(C-1)     (d: dispatch, k: combine)
// beside one compute stream running chunk c's experts after d(c): while chunk c-1's experts compute,
// the comm stream combines chunk c-2 and dispatches chunk c. Issued on one stream the two all-to-alls
// never contend for the ports; when the experts of a chunk (g) take at least two all-to-alls (2a) the
// layer takes router + a + C g + a (tests/schemes/test_moe.cpp pins this closed form).
//
// Chunking is per (source, expert) count: chunk c carries count / C slots of every pair (the first
// count % C chunks one more), so every chunk is the routing in miniature, imbalance included.
// With expert TP (Moe::expert_tp; docs/guide/moe.md "Expert tensor parallelism", Megatron-core's
// AllToAll dispatcher with --expert-tensor-parallel-size) each chunk also runs an all-gather over the
// ETP group after its dispatch and a reduce-scatter after its experts, on the same comm stream:
//   d0, g0, d1, g1, s0, k0, d2, g2, s1, k1, ...
// The shared experts run on the compute stream right after the router when chunked (overlapping the
// first dispatch, as Megatron-core's moe_shared_expert_overlap does), after the combine otherwise.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "sim/schemes/moe.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

namespace {

// Rank r's gated expert FFN (grouped gate+up GEMM, activation, grouped down GEMM) after `dep`, its
// GEMMs those of EP rank `e` in `sh` (e = r without expert TP).
OpId add_experts(GraphBuilder& b, int r, int e, StreamId stream, const MoeShapes& sh, const std::string& name,
                 OpId dep) {
  const OpId u = b.add_grouped_gemm(r, stream, sh.up[static_cast<std::size_t>(e)], gemm_after(name + ".up", dep));
  MemoryKernel act;
  act.name = name + ".act";
  act.bytes = sh.activation_bytes[static_cast<std::size_t>(e)];
  act.deps = {u};
  const OpId a = b.add_memory(r, stream, act);
  return b.add_grouped_gemm(r, stream, sh.down[static_cast<std::size_t>(e)], gemm_after(name + ".down", a));
}

std::vector<std::vector<OpId>> per_member(const std::vector<OpId>& ops) {
  std::vector<std::vector<OpId>> out;
  for (const OpId o : ops) out.push_back(o == kNoOp ? std::vector<OpId>{} : std::vector<OpId>{o});
  return out;
}

}  // namespace

std::vector<OpId> add_ep_all_to_allv(GraphBuilder& b, const RankStreams& st, const Moe& m, const std::string& name,
                                     const overlap::PairBytes& bytes, const std::vector<OpId>& deps) {
  const int etp = std::max(1, m.expert_tp);
  if (etp == 1) {
    AllToAllvSpec s;
    s.name = name;
    s.bytes = bytes;
    s.streams = st.comm;
    s.deps = per_member(deps);
    return add_expert_all_to_allv(b, m, s);
  }
  std::vector<OpId> out(static_cast<std::size_t>(m.ep * etp), kNoOp);
  for (int j = 0; j < etp; ++j) {
    AllToAllvSpec s;
    s.name = name;
    s.bytes = bytes;
    for (int e = 0; e < m.ep; ++e) s.ranks.push_back(e * etp + j);
    for (const int r : s.ranks) {
      s.streams.push_back(st.comm[static_cast<std::size_t>(r)]);
      const OpId d = deps.empty() ? kNoOp : deps[static_cast<std::size_t>(r)];
      s.deps.push_back(d == kNoOp ? std::vector<OpId>{} : std::vector<OpId>{d});
    }
    const std::vector<OpId> ops = b.add_all_to_allv(s);
    for (std::size_t i = 0; i < ops.size(); ++i) out[static_cast<std::size_t>(s.ranks[i])] = ops[i];
  }
  return out;
}

std::vector<OpId> add_etp_collective(GraphBuilder& b, const RankStreams& st, const Moe& m, const std::string& name,
                                     Primitive primitive, const MoeShapes& ep_shapes, const std::vector<OpId>& deps) {
  const int etp = std::max(1, m.expert_tp);
  if (etp == 1) return deps;
  std::vector<OpId> out(static_cast<std::size_t>(m.ep * etp), kNoOp);
  for (int e = 0; e < m.ep; ++e) {
    CollectiveSpec s;
    s.name = name;
    s.primitive = primitive;
    s.bytes = moe_etp_gathered_bytes(m, ep_shapes, e);
    for (int j = 0; j < etp; ++j) {
      const int r = e * etp + j;
      s.ranks.push_back(r);
      s.streams.push_back(st.comm[static_cast<std::size_t>(r)]);
      const OpId d = deps[static_cast<std::size_t>(r)];
      s.deps.push_back(d == kNoOp ? std::vector<OpId>{} : std::vector<OpId>{d});
    }
    const std::vector<OpId> ops = b.add_collective(s);
    for (std::size_t i = 0; i < ops.size(); ++i) out[static_cast<std::size_t>(s.ranks[i])] = ops[i];
  }
  return out;
}

OpId add_moe_shared_experts(GraphBuilder& b, int r, StreamId stream, const Moe& m, OpId dep, const std::string& prefix) {
  if (m.shared_experts <= 0) return dep;
  const OpId u = b.add_gemm(r, stream, moe_shared_up(m), gemm_after(prefix + "shared.up", dep));
  MemoryKernel act;
  act.name = prefix + "shared.act";
  act.bytes = moe_shared_activation_bytes(m);
  act.deps = {u};
  const OpId a = b.add_memory(r, stream, act);
  return b.add_gemm(r, stream, moe_shared_down(m), gemm_after(prefix + "shared.down", a));
}

MoeLayerOps emit_moe_layer(GraphBuilder& b, const RankStreams& st, const Moe& m, const MoeRouting& routing,
                           const MoeLayerOptions& options, const std::vector<OpId>& start, const std::string& prefix) {
  const int C = std::max(1, options.chunks);
  const bool compute = !options.collectives_only;
  const int etp = std::max(1, m.expert_tp);
  const int n = m.ep * etp;  // graph ranks: rank = ep_index x expert_tp + etp_index
  auto start_of = [&](int r) { return start.empty() ? kNoOp : start[static_cast<std::size_t>(r)]; };

  std::vector<OpId> router(static_cast<std::size_t>(n), kNoOp);
  for (int r = 0; r < n; ++r) router[static_cast<std::size_t>(r)] = start_of(r);
  if (compute)
    for (int r = 0; r < n; ++r) {
      GemmOptions o;
      o.name = prefix + "router";
      if (start_of(r) != kNoOp) o.deps = {start_of(r)};
      router[static_cast<std::size_t>(r)] =
          b.add_gemm(r, st.compute[static_cast<std::size_t>(r)], moe_router_gemm(m), o);
      if (C > 1)
        add_moe_shared_experts(b, r, st.compute[static_cast<std::size_t>(r)], m, router[static_cast<std::size_t>(r)],
                               prefix);
    }

  // chunk[c]: the EP ranks' dispatch / combine bytes of chunk c; gemm[c]: each EP rank's expert GEMMs
  // (moe_etp_shapes: the ETP group's gathered rows, the FFN split expert_tp ways; chunk[c] itself
  // without expert TP).
  std::vector<MoeShapes> chunk, gemm;
  for (int c = 0; c < C; ++c) {
    chunk.push_back(moe_shapes(m, C == 1 ? routing.tokens : moe_chunk_tokens(routing.tokens, C, c)));
    if (etp > 1) gemm.push_back(moe_etp_shapes(m, chunk.back().tokens));
  }
  const std::vector<MoeShapes>& gemms = etp > 1 ? gemm : chunk;
  auto name_of = [&](const char* what, int c) {
    return prefix + (C > 1 ? fmt::format("{}[{}]", what, c) : std::string(what));
  };
  auto all_to_allv = [&](const std::string& name, const overlap::PairBytes& bytes, const std::vector<OpId>& deps) {
    return add_ep_all_to_allv(b, st, m, name, bytes, deps);
  };
  auto etp_collective = [&](const char* what, Primitive primitive, int c, const std::vector<OpId>& deps) {
    return add_etp_collective(b, st, m, name_of(what, c), primitive, chunk[static_cast<std::size_t>(c)], deps);
  };
  auto dispatch = [&](int c, const std::vector<OpId>& deps) {
    return all_to_allv(name_of("dispatch", c), chunk[static_cast<std::size_t>(c)].dispatch, deps);
  };

  // On each rank's comm stream: d0 [g0] d1 [g1] [s0] k0 d2 [g2] [s1] k1 ... (g: ETP all-gather, s: ETP
  // reduce-scatter), so chunk c+1's dispatch and gather run while chunk c's experts compute.
  std::vector<std::vector<OpId>> dispatched(static_cast<std::size_t>(C));
  std::vector<OpId> last = router;
  dispatched[0] = etp_collective("gather", Primitive::all_gather, 0, dispatch(0, router));
  for (int c = 0; c < C; ++c) {
    if (c + 1 < C)
      dispatched[static_cast<std::size_t>(c + 1)] =
          etp_collective("gather", Primitive::all_gather, c + 1, dispatch(c + 1, {}));
    std::vector<OpId> experts(static_cast<std::size_t>(n), kNoOp);
    if (compute)
      for (int r = 0; r < n; ++r)
        experts[static_cast<std::size_t>(r)] =
            add_experts(b, r, r / etp, st.compute[static_cast<std::size_t>(r)], gemms[static_cast<std::size_t>(c)],
                        name_of("experts", c), dispatched[static_cast<std::size_t>(c)][static_cast<std::size_t>(r)]);
    else if (etp > 1)
      experts = dispatched[static_cast<std::size_t>(c)];  // collectives alone: the scatter follows the gather
    last = all_to_allv(name_of("combine", c), chunk[static_cast<std::size_t>(c)].combine,
                       etp_collective("scatter", Primitive::reduce_scatter, c, experts));
  }
  // Chunked, the shared experts ran before the last chunk's experts on the compute stream, so the last
  // combine ends the layer; unchunked they follow the combine.
  if (compute && C == 1)
    for (int r = 0; r < n; ++r)
      last[static_cast<std::size_t>(r)] = add_moe_shared_experts(b, r, st.compute[static_cast<std::size_t>(r)], m,
                                                                 last[static_cast<std::size_t>(r)], prefix);

  // The reason line: how uneven the experts' work is (the slowest EP rank's rows against the mean).
  std::int64_t most = 0, total = 0;
  int busiest = 0;
  for (int r = 0; r < m.ep; ++r) {
    const std::int64_t rows = routing.received(r);
    total += rows;
    if (rows > most) most = rows, busiest = r;
  }
  const double mean = static_cast<double>(total) / m.ep;
  return {last, fmt::format("{}; busiest {}rank {} runs {} expert rows ({:.2f}x the mean){}{}",
                            C > 1 ? fmt::format("{} token chunks", C) : std::string("no overlap"), etp > 1 ? "EP " : "",
                            busiest, etp > 1 ? etp * most : most, mean > 0 ? static_cast<double>(most) / mean : 0.0,
                            routing.dropped() > 0 ? fmt::format(", {} slots dropped", routing.dropped()) : "",
                            etp > 1 ? fmt::format(", gathered over expert_tp = {} GPUs at 1/{} of each expert's FFN",
                                                  etp, etp)
                                    : "")};
}

MoeShapes moe_etp_shapes(const Moe& m, const CountMatrix& tokens) {
  const int etp = std::max(1, m.expert_tp);
  // Every ETP member of an EP rank routes that rank's counts (emit_moe_layer), so the union an ETP group
  // gathers is expert_tp x each count; each member runs 1 / expert_tp of every expert's FFN on it.
  Moe split = m;
  split.d_ffn_expert = m.d_ffn_expert / etp;
  split.expert_tp = 1;
  CountMatrix gathered = tokens;
  for (auto& row : gathered)
    for (std::int64_t& count : row) count *= etp;
  return moe_shapes(split, gathered);
}

Bytes moe_etp_gathered_bytes(const Moe& m, const MoeShapes& ep_shapes, int ep_rank) {
  std::int64_t rows = 0;
  for (const RankGemm& g : ep_shapes.up[static_cast<std::size_t>(ep_rank)]) rows += g.m;
  return activation_bytes(std::max(1, m.expert_tp) * rows, m.d_model, m.dtype);
}

std::optional<std::string> moe_expert_tp_refusal(const Workload&, const std::string&) {
  // Every moe scheme models expert TP: no_overlap and moe_pipeline here, moe_flashoverlap with each wave
  // group's ETP reduce-scatter before its combine, moe_tile_fused with the ETP collectives between its
  // fused stages. Kept as the hook sim/scenario.cpp and sim/report.cpp ask for a scheme that would not.
  return std::nullopt;
}

BuiltScheme build_moe_layer(const BuildContext& ctx, const MoeLayerOptions& options) {
  if (has_moe_layers(ctx.workload) && ctx.workload.kind == WorkloadKind::transformer) return build_moe_transformer(ctx, options);
  const Moe& m = std::get<Moe>(ctx.workload.shape);
  GraphBuilder b(ctx, m.ep * m.expert_tp);
  const RankStreams st = b.add_compute_and_comm_streams();
  const MoeRouting routing = moe_routing(m);
  // A training step (docs/guide/moe.md "Training step"): the forward (pass forward | step), then the
  // backward after it, its ops marked as the backward's for the per-pass figures.
  const Pass pass = ctx.workload.training.pass;
  MoeLayerOps ops;
  if (pass != Pass::backward) ops = emit_moe_layer(b, st, m, routing, options, {}, "");
  if (pass == Pass::forward) return b.finish(std::move(ops.reason));
  b.graph().set_pass(StepPass::backward);
  const MoeLayerOps bwd = emit_moe_backward(b, st, m, routing, options, ops.end, "bwd.");
  return b.finish(ops.reason.empty() ? fmt::format("{} ({})", bwd.reason, pass_name(pass))
                                     : fmt::format("{}; {} ({})", ops.reason, bwd.reason, pass_name(pass)));
}

namespace {

const SchemeParam kPipelineChunks = int_param("chunks", 4, 1, 1024,
                                      "token chunks: chunk c's dispatch overlaps chunk c-1's expert GEMMs and chunk "
                                      "c-2's combine")
                                .tune({1, 2, 4, 8, 16})
                                .production("Tutel's moe_layer a2a_ffn_overlap_degree (1 = no overlap)");

}  // namespace

SchemeInfo make_moe_pipeline_scheme() {
  return {.name = "moe_pipeline",
          .source =
              "Tutel (Hwang et al., MLSys 2023, arXiv:2206.03382), adaptive pipelining; Megatron-core MoE "
              "all-to-all overlap",
          .summary = "MoE layer in token chunks: dispatch, expert GEMMs and combine of different chunks overlap",
          .params = {kPipelineChunks},
          .backward = "the mirror of the forward's pipeline: chunk c's combine backward (all-to-allv) beside chunk "
                      "c-1's expert dgrad and wgrad and chunk c-2's dispatch backward (moe workload and MoE transformer; with expert_tp the ETP all-gather and reduce-scatter too)",
          .applies = [](const Workload& w) { return has_moe_layers(w); },
          .build =
              [](const BuildContext& ctx) {
                return build_moe_layer(ctx, MoeLayerOptions{ctx.integer(kPipelineChunks), false});
              }};
}

}  // namespace overlap::sim
