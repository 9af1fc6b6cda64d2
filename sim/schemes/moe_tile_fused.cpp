// moe_tile_fused: the MoE layer with its all-to-alls fused into the expert GEMMs at tile level, the
// fusion-based method of flashoverlap-paper Sec. 2.4.2: FLUX (Chang et al., arXiv 2406.06858, the
// paper's [4]) fuses the communication into the beginning or end of the GEMM kernel at tile level;
// Comet (Zhang et al., "Comet: Fine-grained Computation-communication Overlapping for
// Mixture-of-Experts", MLSys 2025, the paper's [54]) does it for MoE layers with a thread-block
// specialised kernel: communication and computation run on different SMs at once, and the SM split
// between them is adjustable (our `comm_sms`, a tuned knob).
//
// Per rank, after the router (on every SM):
// - Dispatch, consumed as the tokens arrive: the rank's own tokens first (they need no transfer, so
//   the gate+up GEMM starts at once), then its peers in ring order (r-1, r-2, ...: at step j every
//   rank r-j writes to r, so every rank reads from a different peer at a time) cut into dispatch_pieces - 1 groups; a group's tokens come in
//   by SM copy kernels on the comm SMs, and the gate+up grouped GEMM of its rows starts when they
//   have landed. The pieces' GEMMs run in order on the compute stream: each pays its own launch and
//   partial last wave, which Comet's one persistent kernel does not (so more pieces hide more of the
//   dispatch but overstate that cost). dispatch_pieces 1: the whole dispatch, then one GEMM.
// - The SwiGLU over every row, then the down-projection grouped GEMM, whose tiles signal a counter as
//   they finish (flux.cpp's tile_signal_overhead on each tile's epilogue; the gate+up tiles pay it as
//   their flag check). Its tiles are ordered by destination, FLUX's tile swizzle (flux.cpp's GEMM-RS):
//   rank r+1's rows of every local expert first, then r+2's, ..., the rank's own rows last (each
//   (source, expert) block its own group of the grouped GEMM, so a block's partial row band costs a
//   tile). Once the tiles through rank r+j's rows are done, combine step j sends them to r+j: the
//   ranks send to different peers at a time, not all to one, and the own rows at the end hide (some
//   of) the last transfer. One combine step per peer keeps the engine at one event per step, never per
//   token or per tile.
// - Shared experts (where the model has them) right after the down projection, beside the last
//   combine steps.
// The expert GEMMs run as persistent kernels on sm_count - comm_sms SMs; the transfers are SM copy
// kernels of comm_sms CTAs on the comm stream (the profile's sm_copy transport, as flux.cpp's GEMM-RS
// sends), in ring steps (rank r writes to r+j at step j, FLUX's ring order): a rank moves
// at most comm_sms x sm_copy.cta_gbps at a time, the throughput its comm SMs buy, and the engine
// carries one flow per rank rather than one per rank pair. The ranks of one step match their sends
// and receives, so a step starts when the slowest rank's tiles of it are done: under skewed routing
// the busiest rank sets the latency, as it does for the all-to-allvs of the other schemes.
//
// Expert TP (Moe::expert_tp; docs/guide/moe.md "Expert tensor parallelism"): the ring steps run inside
// every EP group (the graph ranks of one ETP index) with the EP ranks' per-pair bytes, and the ETP
// collectives run as separate NCCL collectives on the comm stream between the fused stages: each
// dispatch piece, once its ring steps have landed, is all-gathered over the ETP group (S = expert_tp x
// the piece's rows x d_model) before the gate+up GEMM of the piece's gathered rows (N = 2 d_ffn_expert /
// expert_tp), and the down projection's (K = d_ffn_expert / expert_tp) partial sums of destination r+j's
// rows are reduce-scattered over the ETP group (its epilogue writes each member's rows to that member's
// slot of the send buffer) before combine step j sends them; the own rows, last, are reduce-scattered and
// not sent. That is an assumption about the fused kernels, not Comet's design: Comet's kernels as
// published (bytedance/flux, docs/moe_usage.md: GemmGroupedV3AGScatter, "all-gather + scatter + gemm",
// and GemmGroupedV3GatherRS, "gemm + topk-reduce + reduce-scatter", over a TP group holding the EP
// groups) fuse an all-gather and a reduce-scatter of the tokens over the whole TP x EP group into the
// grouped GEMMs, rather than running Megatron-core's all-to-all dispatch with separate ETP collectives.
// Here the fused all-to-all stages stay as above (expert_tp 1 is them exactly) and the ETP collectives
// are not overlapped within a piece or step, so the form is a conservative one for Comet with expert TP.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "sim/schemes/moe.hpp"
#include "sim/schemes/param_rows.hpp"
#include "sim/schemes/reusable_builders.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

namespace {

const SchemeParam kFusedTileSignal = tile_signal_overhead_param(
    "per-tile signal (down projection) or flag-check (gate+up) cost as a fraction of a tile's time",
    "Comet / FLUX fused kernels' per-tile flags (no knob)");
const SchemeParam kFusedCommSms = [] {
  // Default 16: at the H100 profile's sm_copy 25 GB/s per CTA, 16 CTAs (400 GB/s) fill an NVLink port
  // (450 GB/s x 0.83); fewer leave the port idle, more take SMs from the GEMMs for nothing.
  SchemeParam p = comm_sms_param("comm_sms", 16, 1,
                                 "SMs given to communication (thread-block specialisation); the expert GEMMs run on "
                                 "the other sm_count - comm_sms");
  return p.tune({2, 4, 8, 16, 32}).production("Comet's adjustable compute / communication SM split");
}();
const SchemeParam kDispatchPieces = int_param("dispatch_pieces", 4, 1, 4096,
                                              "pieces the gate+up GEMM consumes the dispatch in as each lands: the "
                                              "rank's own tokens, then its peers (r-1, r-2, ...) in dispatch_pieces - 1 "
                                              "groups; 1 = the whole dispatch first (at most ep)")
                                        .tune({1, 2, 4, 8});
// The ring offsets [first, last) of dispatch piece p of `pieces` over n ranks: one piece is all of
// them; else piece 0 is the rank's own tokens (offset 0) and the n - 1 peers share the others.
std::pair<int, int> offsets_of(int p, int pieces, int n) {
  if (pieces == 1) return {0, n};
  if (p == 0) return {0, 1};
  const std::int64_t peers = n - 1, groups = pieces - 1;
  return {static_cast<int>(1 + peers * (p - 1) / groups), static_cast<int>(1 + peers * p / groups)};
}

struct TileFusedKnobs {
  double signal = 0;
  int comm_sms = 0;
  int dispatch_pieces = 1;
};

// One MoE layer fused tile by tile into a graph: the stages of the header comment, one method each,
// over the layer's fixed context (the EP ring, the expert TP groups, the SM split).
class TileFusedLayer {
  template <typename V>
  static auto& at(V& v, int i) {
    return v[static_cast<std::size_t>(i)];
  }

 public:
  TileFusedLayer(GraphBuilder& b, const RankStreams& st, const Moe& m, const MoeRouting& routing,
                 const TileFusedKnobs& knobs, const std::string& prefix)
      : b_(b),
        hw_(b.hardware()),
        m_(m),
        routing_(routing),
        prefix_(prefix),
        n_(m.ep),
        etp_(std::max(1, m.expert_tp)),
        ranks_(n_ * etp_),
        per_rank_(m.experts / m.ep),
        signal_(knobs.signal),
        comm_sms_(std::min(knobs.comm_sms, hw_.gpu.sm_count - 1)),
        gemm_sms_(hw_.gpu.sm_count - comm_sms_),
        pieces_(std::min(knobs.dispatch_pieces, n_)),
        compute_(st.compute),
        comm_(st.comm),
        sh_(moe_shapes(m, routing.tokens)),
        tokens_(routing.tokens),
        ffn_(m.d_ffn_expert / etp_),
        gathered_(etp_ > 1 ? moe_etp_shapes(m, tokens_) : sh_),
        row_bytes_(activation_bytes(1, m.d_model, m.dtype)) {}

  // The router on every rank, rank r's after start[r] (empty: none).
  void add_router(const std::vector<OpId>& start) {
    for (int r = 0; r < ranks_; ++r) {
      GemmOptions o;
      o.name = prefix_ + "router";
      if (!start.empty() && start[static_cast<std::size_t>(r)] != kNoOp) o.deps = {start[static_cast<std::size_t>(r)]};
      router_.push_back(b_.add_gemm(r, at(compute_, r), moe_router_gemm(m_), o));
    }
  }

  // Dispatch: piece p carries, to every rank r, the tokens of the sources r - j for j in its offsets;
  // each piece's gate+up grouped GEMM starts once it has landed.
  void add_dispatch() {
    std::vector<std::vector<OpId>> after_router;
    for (const OpId o : router_) after_router.push_back({o});
    last_up_.assign(static_cast<std::size_t>(ranks_), kNoOp);
    for (int p = 0; p < pieces_; ++p) {
      const auto [j0, j1] = offsets_of(p, pieces_, n_);
      std::vector<OpId> landed(static_cast<std::size_t>(ranks_), kNoOp);
      if (j1 - j0 > (j0 == 0 ? 1 : 0)) {
        overlap::PairBytes sends(static_cast<std::size_t>(n_), std::vector<Bytes>(static_cast<std::size_t>(n_), 0));
        for (int r = 0; r < n_; ++r)
          for (int j = std::max(j0, 1); j < j1; ++j) {
            const int src = (r - j + n_) % n_;
            at(sends, src)[static_cast<std::size_t>(r)] =
                sh_.dispatch[static_cast<std::size_t>(src)][static_cast<std::size_t>(r)];
          }
        for (int j = std::max(j0, 1); j < j1; ++j) {
          const std::vector<OpId> o = step(fmt::format("dispatch[{}]", p), j, sends, after_router);
          if (o[0] != kNoOp) landed = o;
        }
      }
      add_up_projection(p, j0, j1, landed);
    }
  }

  // Down projection, its tiles ordered by destination (rank r+1's rows of every local expert, then
  // r+2's, ..., the rank's own last), signalling a counter.
  void add_down_projection() {
    through_.assign(static_cast<std::size_t>(ranks_), {});
    for (int r = 0; r < ranks_; ++r) {
      const int e_rank = r / etp_;
      MemoryKernel act;
      act.name = prefix_ + "experts.act";
      act.bytes = at(gathered_.activation_bytes, e_rank);
      act.deps = {at(last_up_, r)};
      const OpId a = b_.add_memory(r, at(compute_, r), act);
      std::vector<GemmShape> down;
      for (int i = 1; i <= n_; ++i)
        for (int e = 0; e < per_rank_; ++e)
          down.push_back(GemmShape{etp_ * tokens_[static_cast<std::size_t>((e_rank + i) % n_)]
                                                 [static_cast<std::size_t>(e_rank * per_rank_ + e)],
                                   m_.d_model, ffn_, m_.dtype});
      const GroupedGemmPlan plan = plan_grouped_gemm(hw_, down);
      std::int64_t done = 0;
      at(through_, r).assign(static_cast<std::size_t>(n_), 0);
      for (int i = 1; i <= n_; ++i) {
        for (int e = 0; e < per_rank_; ++e) done += plan.groups[static_cast<std::size_t>((i - 1) * per_rank_ + e)].tiles;
        at(through_, r)[static_cast<std::size_t>(i % n_)] = done;
      }
      counters_.push_back(b_.add_counter(fmt::format("{}r{}.down.tiles", prefix_, r)));
      GemmOptions o;
      o.name = prefix_ + "experts.down.signalling";
      o.deps = {a};
      o.tile_counters = {counters_.back()};
      o.sm_budget = gemm_sms_;
      o.epilogue_overhead = signal_;
      down_ops_.push_back(b_.add_grouped_gemm(r, at(compute_, r), down, o));
    }
  }

  // Combine: step j sends rank r+j its rows once the tiles through them are done (with expert TP, once
  // their partial sums are reduce-scattered over the ETP group); the own rows, last, are
  // reduce-scattered and not sent.
  void add_combine() {
    scattered_.assign(static_cast<std::size_t>(ranks_), kNoOp);
    for (int j = 1; j <= n_; ++j) {
      const int offset = j % n_;  // j = n: the rank's own rows, last, reduce-scattered but not sent
      if (offset == 0 && etp_ == 1) break;
      std::vector<OpId> ready;
      for (int r = 0; r < ranks_; ++r)
        ready.push_back(b_.add_wait(r, at(comm_, r), at(counters_, r), at(through_, r)[static_cast<std::size_t>(offset)],
                                    fmt::format("{}wait.combine.{}", prefix_, offset)));
      ready = etp_collective(fmt::format("scatter.{}", offset), Primitive::reduce_scatter, rows_to(offset), ready);
      if (offset == 0) {
        scattered_ = ready;
        break;
      }
      std::vector<std::vector<OpId>> deps;
      for (const OpId o : ready) deps.push_back({o});
      step("combine", offset, sh_.combine, deps);
    }
  }

  // Each rank's last op: shared experts after the down projection; join_end: one op after both the
  // compute and the comm stream (a zero delay on the comm stream), for a caller that goes on after it.
  std::vector<OpId> add_end(bool join_end) {
    std::vector<OpId> end = down_ops_;
    if (m_.shared_experts > 0)
      for (int r = 0; r < ranks_; ++r)
        at(end, r) = add_moe_shared_experts(b_, r, at(compute_, r), m_, at(down_ops_, r), prefix_);
    if (join_end)
      for (int r = 0; r < ranks_; ++r)
        at(end, r) = b_.add_delay(r, at(comm_, r), 0, prefix_ + "end", {at(end, r)}, true);
    else if (etp_ > 1)
      // The layer's output rows are reduced once the own rows' reduce-scatter ends: each rank's end waits
      // for it as well as for its compute stream.
      for (int r = 0; r < ranks_; ++r)
        at(end, r) = b_.add_delay(r, at(compute_, r), 0, prefix_ + "end", {at(end, r), at(scattered_, r)});
    return end;
  }

  std::string description() const {
    std::int64_t most = 0;
    for (int r = 0; r < n_; ++r) most = std::max(most, routing_.received(r));
    return fmt::format(
        "Comet-style tile fusion: comm on {} of {} SMs, dispatch in {} piece{}, combine in {} ring steps as the tiles "
        "finish, signal {:.1f} % per tile; busiest {}rank runs {} expert rows{}{}",
        comm_sms_, hw_.gpu.sm_count, pieces_, pieces_ == 1 ? "" : "s", n_ - 1, 100 * signal_, etp_ > 1 ? "EP " : "",
        etp_ * most, routing_.dropped() > 0 ? fmt::format(", {} slots dropped", routing_.dropped()) : "",
        etp_ > 1 ? fmt::format(", expert_tp = {}: an NCCL all-gather per dispatch piece and reduce-scatter per combine "
                               "step over each ETP group",
                               etp_)
                 : "");
  }

 private:
  int graph_rank(int e, int k) const { return e * etp_ + k; }

  // Ring step j of a transfer: in every EP group (the graph ranks of one ETP index k), every EP rank e
  // sends sends[e][e+j] to EP rank e+j (a permutation: every rank writes to one peer and reads from one)
  // by one SM copy kernel of comm_sms CTAs on its comm stream, after deps[rank]. Steps run one after
  // another on the stream, so a rank moves at most comm_sms x cta_gbps at a time and the engine carries
  // one flow per rank, not one per rank pair. Returns the graph ranks' ops; nothing (kNoOp) when no rank
  // has bytes for offset j.
  std::vector<OpId> step(const std::string& name, int j, const overlap::PairBytes& sends,
                         const std::vector<std::vector<OpId>>& deps) {
    std::vector<OpId> out(static_cast<std::size_t>(ranks_), kNoOp);
    bool any = false;
    for (int r = 0; r < n_ && !any; ++r) any = sends[static_cast<std::size_t>(r)][static_cast<std::size_t>((r + j) % n_)] > 0;
    if (!any) return out;
    for (int k = 0; k < etp_; ++k) {
      const std::int64_t id = b_.new_collective_id();
      for (int r = 0; r < n_; ++r) {
        const int dst = (r + j) % n_, src = (r - j + n_) % n_;
        const int g = graph_rank(r, k);
        const Bytes out_bytes = sends[static_cast<std::size_t>(r)][static_cast<std::size_t>(dst)];
        P2pSpec x;
        x.name = fmt::format("{}{}.{}", prefix_, name, j);
        x.transport = Transport::sm_copy;
        x.channels = comm_sms_;
        x.collective = id;
        x.members = n_;
        x.sends.push_back({graph_rank(dst, k), out_bytes});
        x.recvs.push_back({graph_rank(src, k), sends[static_cast<std::size_t>(src)][static_cast<std::size_t>(r)]});
        b_.add_required_bytes(g, graph_rank(dst, k), out_bytes);
        x.deps = deps[static_cast<std::size_t>(g)];
        at(out, g) = b_.add_p2p(g, at(comm_, g), x);
      }
    }
    return out;
  }

  // With expert TP, an all-gather or reduce-scatter over every ETP group as NCCL runs it (the fused
  // kernels move the EP group's bytes only: the header comment), of rows[e] rows x d_model per member
  // (nccl-tests S = expert_tp x that), rank r's member after deps[r]; without expert TP, `deps`.
  std::vector<OpId> etp_collective(const std::string& name, Primitive primitive, const std::vector<std::int64_t>& rows,
                                   const std::vector<OpId>& deps) {
    if (etp_ == 1) return deps;
    std::vector<OpId> out(static_cast<std::size_t>(ranks_), kNoOp);
    for (int e = 0; e < n_; ++e) {
      CollectiveSpec s;
      s.name = prefix_ + name;
      s.primitive = primitive;
      s.bytes = checked_mul(etp_ * rows[static_cast<std::size_t>(e)], row_bytes_);
      for (int k = 0; k < etp_; ++k) {
        const int g = graph_rank(e, k);
        s.ranks.push_back(g);
        s.streams.push_back(at(comm_, g));
        const OpId dep = deps[static_cast<std::size_t>(g)];
        s.deps.push_back(dep == kNoOp ? std::vector<OpId>{} : std::vector<OpId>{dep});
      }
      const std::vector<OpId> ops = b_.add_collective(s);
      for (std::size_t i = 0; i < ops.size(); ++i) at(out, s.ranks[i]) = ops[i];
    }
    return out;
  }

  // Dispatch piece p's gate+up grouped GEMM on every rank, after the router and the piece's landing
  // (with expert TP, the piece's ETP all-gather after its last ring step, or after the router for the
  // rank's own tokens).
  void add_up_projection(int p, int j0, int j1, std::vector<OpId> landed) {
    // The piece's rows per EP rank and expert (each member received them; its ETP group gathers them).
    std::vector<std::vector<std::int64_t>> piece_rows(static_cast<std::size_t>(n_));
    std::vector<std::int64_t> piece_total(static_cast<std::size_t>(n_), 0);
    for (int r = 0; r < n_; ++r)
      for (int e = 0; e < per_rank_; ++e) {
        const std::size_t expert = static_cast<std::size_t>(r * per_rank_ + e);
        std::int64_t rows = 0;
        for (int j = j0; j < j1; ++j) rows += tokens_[static_cast<std::size_t>((r - j + n_) % n_)][expert];
        at(piece_rows, r).push_back(rows);
        at(piece_total, r) += rows;
      }
    if (etp_ > 1) {
      std::vector<OpId> after(static_cast<std::size_t>(ranks_));
      for (int r = 0; r < ranks_; ++r) at(after, r) = at(landed, r) != kNoOp ? at(landed, r) : at(router_, r);
      landed = etp_collective(pieces_ > 1 ? fmt::format("gather[{}]", p) : std::string("gather"), Primitive::all_gather,
                              piece_total, after);
    }
    for (int r = 0; r < ranks_; ++r) {
      const int e_rank = r / etp_;
      std::vector<GemmShape> up;
      for (int e = 0; e < per_rank_; ++e)
        up.push_back(
            GemmShape{etp_ * at(piece_rows, e_rank)[static_cast<std::size_t>(e)], 2 * ffn_, m_.d_model, m_.dtype});
      GemmOptions o;
      o.name = prefix_ + (pieces_ > 1 ? fmt::format("experts.up[{}]", p) : std::string("experts.up"));
      o.deps = {at(router_, r)};
      if (at(landed, r) != kNoOp) o.deps.push_back(at(landed, r));
      o.sm_budget = gemm_sms_;
      o.epilogue_overhead = signal_;
      at(last_up_, r) = b_.add_grouped_gemm(r, at(compute_, r), up, o);
    }
  }

  // The rows EP rank e's step j sends (those of destination e + j), per EP rank.
  std::vector<std::int64_t> rows_to(int j) const {
    std::vector<std::int64_t> rows(static_cast<std::size_t>(n_), 0);
    for (int e = 0; e < n_; ++e)
      for (int x = 0; x < per_rank_; ++x)
        rows[static_cast<std::size_t>(e)] +=
            tokens_[static_cast<std::size_t>((e + j) % n_)][static_cast<std::size_t>(e * per_rank_ + x)];
    return rows;
  }

  GraphBuilder& b_;
  const HardwareProfile& hw_;
  const Moe& m_;
  const MoeRouting& routing_;
  const std::string prefix_;
  const int n_;         // EP ranks: the ring's members
  const int etp_;       // expert TP
  const int ranks_;     // graph ranks: rank = ep_index x expert_tp + etp_index
  const int per_rank_;  // experts per EP rank
  const double signal_;
  const int comm_sms_;
  const int gemm_sms_;
  const int pieces_;
  const std::vector<StreamId>& compute_;
  const std::vector<StreamId>& comm_;
  const MoeShapes sh_;
  const CountMatrix& tokens_;
  // Each member's GEMMs: the ETP group's gathered rows (expert_tp x every count) at 1 / expert_tp of the
  // FFN (moe_etp_shapes); the model as one member sees it.
  const std::int64_t ffn_;
  const MoeShapes gathered_;
  const Bytes row_bytes_;
  std::vector<OpId> router_;
  std::vector<OpId> last_up_;
  std::vector<CounterId> counters_;
  std::vector<OpId> down_ops_;
  std::vector<std::vector<std::int64_t>> through_;  // [rank][j]: tiles through offset j
  std::vector<OpId> scattered_;
};

// One MoE layer fused tile by tile into `b` on the streams `st` (compute, comm), rank r's router after
// start[r] (empty: none), names prefixed by `prefix`. join_end: each rank's end is one op after both its
// compute and its comm stream (a zero delay on the comm stream), for a caller that goes on after it.
// With expert TP (ep x expert_tp graph ranks, ETP innermost) the ring steps run inside every EP group,
// each dispatch piece is all-gathered over the ETP group before its gate+up GEMM, and each combine
// step's rows are reduce-scattered over the ETP group before the step sends them (the header comment).
MoeLayerOps emit_moe_tile_fused(GraphBuilder& b, const RankStreams& st, const Moe& m, const MoeRouting& routing,
                                const TileFusedKnobs& knobs, const std::vector<OpId>& start, const std::string& prefix,
                                bool join_end) {
  TileFusedLayer layer(b, st, m, routing, knobs, prefix);
  layer.add_router(start);
  layer.add_dispatch();
  layer.add_down_projection();
  layer.add_combine();
  std::vector<OpId> end = layer.add_end(join_end);
  return {end, layer.description()};
}

BuiltScheme build_moe_tile_fused(const BuildContext& ctx) {
  const TileFusedKnobs knobs{ctx.number(kFusedTileSignal), ctx.integer(kFusedCommSms), ctx.integer(kDispatchPieces)};
  if (ctx.workload.kind == WorkloadKind::transformer) {
    // No backward form (the fused kernels' backward, dgrad tiles fused with the all-to-alls, is not built):
    // a MoE transformer's step is refused, never run with another scheme's backward.
    if (has_backward(ctx.workload))
      throw InputError("", 0, "workload.pass",
                       fmt::format("pass {}: moe_tile_fused has no backward form (its fused dispatch and combine "
                                   "are modelled for the forward only); schemes with a MoE backward: no_overlap, "
                                   "moe_pipeline, moe_flashoverlap",
                                   pass_name(ctx.workload.training.pass)));
    MoeBlockForms forms;
    forms.forward = [knobs](GraphBuilder& b, const RankStreams& st, const Moe& m, const MoeRouting& routing,
                            const std::vector<OpId>& start, const std::string& prefix) {
      return emit_moe_tile_fused(b, st, m, routing, knobs, start, prefix, true);
    };
    return build_moe_transformer(ctx, false, forms);
  }
  const Moe& m = std::get<Moe>(ctx.workload.shape);
  GraphBuilder b(ctx, m.ep * std::max(1, m.expert_tp));
  RankStreams st;
  st.compute = b.add_streams("compute", 0);
  st.comm = b.add_streams("moe.comm", 1);
  MoeLayerOps ops = emit_moe_tile_fused(b, st, m, moe_routing(m), knobs, {}, "", false);
  return b.finish(std::move(ops.reason));
}

}  // namespace

SchemeInfo make_moe_tile_fused_scheme() {
  return {.name = "moe_tile_fused",
          .source = "flashoverlap-paper Sec. 2.4.2: Comet (Zhang et al., MLSys 2025) thread-block specialisation, "
                    "FLUX (arXiv 2406.06858) tile-level fusion",
          .summary = "MoE layer with the all-to-alls fused into the expert GEMMs: tokens consumed by source group as "
                     "they land, output tiles sent as they finish, communication on comm_sms dedicated SMs (with expert_tp, "
                     "NCCL ETP collectives between the fused stages)",
          .params = {kFusedTileSignal, kFusedCommSms, kDispatchPieces},
          // Its own SM copies are its all-to-all: with workload.all_to_all other than nccl it does not apply.
          .applies = [](const Workload& w) { return has_moe_layers(w) && !moe_all_to_all_refusal(w, "moe_tile_fused"); },
          .build = build_moe_tile_fused};
}

}  // namespace overlap::sim
