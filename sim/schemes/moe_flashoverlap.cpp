// moe_flashoverlap: FlashOverlap's GEMM + All-to-All (flashoverlap-paper Sec. 2.3.3, 3.3.3 (3), 4.2)
// on the moe layer's down projection and combine. Each rank's grouped down-projection GEMM counts its
// finished tiles; on the comm stream, for each wave group, a wait until the group's tiles are done and
// then an all-to-allv of those tiles' rows to the ranks their tokens came from (Sec. 3.3.3 (3): each
// tile split by token into one pool per destination, every pool sent when the group signals). The
// router, dispatch and gate+up GEMM run as in no_overlap; so do the shared experts, after the combine.
//
// Wave groups: `group_waves` waves per group, or 0 for FlashOverlap's predictive search (Sec. 4.2,
// online stage) over group sizes 1, 2, 4, ... waves and the whole GEMM: per group the computation time
// accumulates, the communication time accumulates as max(itself, the computation so far) plus the
// group's all-to-allv, and for imbalanced GEMM+A2A both take the maximum over GPUs (the paper's
// extension for MoE). flashoverlap.cpp's groups serve one GEMM shape and one collective of even sizes;
// here every rank has its own tile count and the groups' all-to-allvs their own byte matrices, so the
// search is its own (restricted to equal groups, as Sec. 4.1 restricts the group sizes).
//
// With expert TP (Moe::expert_tp, docs/guide/moe.md "Expert tensor parallelism") the down projection is
// row-parallel over the ETP group, so its tiles are partial sums: FlashOverlap's GEMM + ReduceScatter
// (Sec. 2.3.2) chained with its GEMM + All-to-All. Each wave group feeds, in order on the comm stream, the
// ETP reduce-scatter of its tiles' partial sums and then the combine all-to-allv of its rows (groups_of
// says how a group's bytes split between the two); the predictor adds the reduce-scatter to each
// group's communication. The backward mirrors it on the gate+up dgrad.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "sim/schemes/moe.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

std::vector<Bytes> moe_etp_tile_range_bytes(const std::vector<GemmShape>& down, const GroupedGemmPlan& plan,
                                            const CountMatrix& tokens, const std::vector<int>& experts,
                                            std::int64_t first, std::int64_t last, int expert_tp, int member) {
  const std::size_t sources = tokens.size();
  const std::int64_t etp = std::max(1, expert_tp);
  std::vector<Bytes> out(sources, 0);
  std::int64_t offset = 0;
  for (std::size_t e = 0; e < down.size(); ++e) {
    const GemmPlan& p = plan.groups[e];
    const std::int64_t lo = std::max(first, offset), hi = std::min(last, offset + p.tiles);
    if (p.tiles > 0 && lo < hi) {
      const GemmShape& g = down[e];
      const std::int64_t cols = (g.n + p.tile_n - 1) / p.tile_n;
      const Bytes elem = dtype_bytes(g.dtype);
      const std::int64_t u0 = lo - offset, u1 = hi - offset;
      // The rows of this expert come from each source in turn: [start[s], start[s] + tokens[s][e]).
      std::size_t src = 0;
      std::int64_t src_start = 0;
      for (std::int64_t band = u0 / cols; band <= (u1 - 1) / cols; ++band) {
        const std::int64_t c0 = std::max(u0, band * cols) - band * cols;
        const std::int64_t c1 = std::min(u1, (band + 1) * cols) - band * cols;
        const std::int64_t width = std::min(c1 * p.tile_n, g.n) - c0 * p.tile_n;
        // The band's rows of the GEMM, then those of `member` among them: with expert TP the gathered
        // row i is member i mod expert_tp's row i / expert_tp (its own rows, in source order).
        const std::int64_t g0 = band * p.tile_m, g1 = std::min((band + 1) * p.tile_m, g.m);
        const std::int64_t r0 = (g0 - member + etp - 1) / etp, r1 = (g1 - member + etp - 1) / etp;
        // Advance to the first source whose rows reach r0, then take every source the band overlaps.
        while (src < sources && src_start + tokens[src][static_cast<std::size_t>(experts[e])] <= r0) {
          src_start += tokens[src][static_cast<std::size_t>(experts[e])];
          ++src;
        }
        std::size_t s = src;
        std::int64_t s_start = src_start;
        while (s < sources && s_start < r1) {
          const std::int64_t s_end = s_start + tokens[s][static_cast<std::size_t>(experts[e])];
          const std::int64_t rows = std::min(s_end, r1) - std::max(s_start, r0);
          if (rows > 0) out[s] = checked_add(out[s], checked_mul(rows * width, elem));
          s_start = s_end;
          ++s;
        }
      }
    }
    offset += p.tiles;
  }
  return out;
}

std::vector<Bytes> moe_tile_range_bytes(const std::vector<GemmShape>& down, const GroupedGemmPlan& plan,
                                        const CountMatrix& tokens, const std::vector<int>& experts, std::int64_t first,
                                        std::int64_t last) {
  return moe_etp_tile_range_bytes(down, plan, tokens, experts, first, last, 1, 0);
}

namespace {

const SchemeParam kGroupWaves = int_param("group_waves", 0, 0, 1 << 20,
                                          "waves of the down-projection GEMM per group; 0 = FlashOverlap's predictive "
                                          "search (max over GPUs, Sec. 4.2)")
                                    .tune({0, 1, 2, 4});

// Each EP rank's grouped GEMM whose tiles signal the wave groups (with expert TP, the one every member
// of its ETP group runs on the gathered rows).
struct RankGemms {
  std::vector<GemmShape> down;
  GroupedGemmPlan plan;
  std::vector<int> experts;
};

// The combine of the groups of `size` waves. Per group: the all-to-allv's [src][dst] byte matrix of
// every EP group (bytes[j][k]: the EP group of ETP index k, src = the EP rank whose GEMM finished the
// tiles, dst = the tokens' EP rank; one matrix without expert TP), with expert TP the reduce-scatter's
// nccl-tests S of every ETP group (the partial sums of the group's tiles, scatter[j][e]), and each EP
// rank's tile target.
struct GroupPlan {
  std::vector<std::vector<overlap::PairBytes>> bytes;  // [group][etp index]
  std::vector<std::vector<Bytes>> scatter;              // [group][EP rank]; empty without expert TP
  std::vector<std::vector<std::int64_t>> target;        // [group][EP rank]: tiles done before it is sent
};

// With expert TP (docs/guide/moe.md "Expert tensor parallelism"), FlashOverlap's GEMM + ReduceScatter
// (Sec. 2.3.2) feeds its GEMM + All-to-All (Sec. 2.3.3): a tile's rows can be combined only once its
// partial sums are reduced over the ETP group. The reduce-scatter's reordering unit is the subtile
// (Sec. 3.3.4 (2): each tile split along its rows into one subtile per GPU, the k-th always landing on
// GPU k), and here the row order is chosen so that the k-th subtile holds member k's own rows: the
// gathered rows of an expert interleave the members row by row (gathered row i is member i mod
// expert_tp's row i / expert_tp), a permutation the layer already pays for when it sorts the gathered
// rows by expert (Megatron-core's sort_chunks_by_idxs after the ETP all-gather) and that Sec. 3.3.3
// allows (the data order inside a group is free; only a row's destination GPU is fixed, (2) and (3)).
// So a group's reduce-scatter sends the partial sums of its tiles (S = the tiles' rows x their width)
// and leaves on every member the reduced rows of its own tokens, which its all-to-allv then sends to
// the tokens' ranks over its EP group: member k of EP rank e sends to (s, k) what its rows of the
// group's tiles hold of source s. Summed over the groups, the reduce-scatters carry the unchunked one's
// S and every EP group's all-to-allvs the combine's per-pair bytes.
GroupPlan groups_of(const std::vector<RankGemms>& ranks, const CountMatrix& tokens, std::int64_t slots,
                    std::int64_t size, int etp) {
  const std::size_t n = ranks.size();
  std::int64_t waves = 1;
  for (const RankGemms& r : ranks) waves = std::max(waves, (r.plan.tiles + slots - 1) / slots);
  GroupPlan g;
  for (std::int64_t w0 = 0; w0 < waves; w0 += size) {
    std::vector<overlap::PairBytes> members(static_cast<std::size_t>(etp),
                                            overlap::PairBytes(n, std::vector<Bytes>(n, 0)));
    std::vector<Bytes> scatter(n, 0);
    std::vector<std::int64_t> target(n, 0);
    for (std::size_t r = 0; r < n; ++r) {
      const std::int64_t first = std::min(ranks[r].plan.tiles, w0 * slots);
      const std::int64_t last = std::min(ranks[r].plan.tiles, (w0 + size) * slots);
      target[r] = last;
      if (first < last)
        for (int k = 0; k < etp; ++k) {
          members[static_cast<std::size_t>(k)][r] =
              moe_etp_tile_range_bytes(ranks[r].down, ranks[r].plan, tokens, ranks[r].experts, first, last, etp, k);
          for (const Bytes x : members[static_cast<std::size_t>(k)][r]) scatter[r] = checked_add(scatter[r], x);
        }
    }
    g.bytes.push_back(std::move(members));
    if (etp > 1) g.scatter.push_back(std::move(scatter));
    g.target.push_back(std::move(target));
  }
  return g;
}

// Sec. 4.2's prediction for one partition, the maximum over GPUs; with expert TP each group's
// communication is its reduce-scatter (the slowest ETP group's, `scatter_ps`) then its all-to-allv
// (the slowest EP group's), one after the other on the comm stream.
Ps predict(const HardwareProfile& hw, const std::vector<RankGemms>& ranks, const GroupPlan& g, std::int64_t slots,
           const std::string& link, const std::function<Ps(Bytes)>& scatter_ps) {
  Ps compute_acc = 0, comm_acc = 0;
  for (std::size_t j = 0; j < g.bytes.size(); ++j) {
    Ps done = 0;  // the slowest GPU's time to finish its tiles of groups 0..j
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      const std::int64_t waves = (g.target[j][r] + slots - 1) / slots;
      done = std::max(done, waves * ranks[r].plan.cta_ps);
    }
    compute_acc = done;
    Ps comm = 0;
    if (!g.scatter.empty())
      for (const Bytes s : g.scatter[j])
        if (s > 0) comm = std::max(comm, scatter_ps(s));
    Ps a2a = 0;
    for (const overlap::PairBytes& m : g.bytes[j]) a2a = std::max(a2a, all_to_allv_cost(hw, m, link).time_ps);
    comm_acc = std::max(comm_acc, compute_acc) + comm + a2a;
  }
  return comm_acc;
}

// The tile slots of one wave: the published implementation cuts waves assuming NCCL holds 2 SMs
// (facts.md: wSize = SMs - 2).
std::int64_t wave_slots(const HardwareProfile& hw, const std::vector<RankGemms>& ranks) {
  return static_cast<std::int64_t>(std::max(1, hw.gpu.sm_count - 2)) * std::max(1, ranks[0].plan.ctas_per_sm);
}

// Waves per group: group_waves when given (> 0), else the size Sec. 4.2's predictor finds fastest among
// 1, 2, 4, ... up to the most waves any rank runs.
std::int64_t group_size(const HardwareProfile& hw, const std::vector<RankGemms>& ranks, const CountMatrix& tokens,
                        std::int64_t slots, const std::string& link, std::int64_t group_waves, int etp,
                        const std::function<Ps(Bytes)>& scatter_ps) {
  if (group_waves > 0) return group_waves;
  std::int64_t waves = 1;
  for (const RankGemms& r : ranks) waves = std::max(waves, (r.plan.tiles + slots - 1) / slots);
  std::int64_t size = 1;
  Ps best = -1;
  for (std::int64_t s = 1;; s = std::min(waves, s * 2)) {
    const Ps t = predict(hw, ranks, groups_of(ranks, tokens, slots, s, etp), slots, link, scatter_ps);
    if (best < 0 || t < best) best = t, size = s;
    if (s >= waves) break;
  }
  return size;
}

// The wave groups' communication on the comm stream (Sec. 3.3.3): per group j, on every rank a wait
// until its counter reaches the group's tile target; with expert TP then the group's reduce-scatter over
// each ETP group ("scatter.group<j>"); then one all-to-allv of the group's bytes over each EP group,
// named `prefix` + `what` + ".group<j>". `counters` are per graph rank (EP rank r / etp). Returns each
// rank's last all-to-allv.
std::vector<OpId> add_grouped_all_to_allv(GraphBuilder& b, const RankStreams& st, const Moe& m,
                                          const std::vector<CounterId>& counters, const GroupPlan& groups,
                                          const std::string& prefix, const std::string& what) {
  const int etp = std::max(1, m.expert_tp);
  std::vector<OpId> last;
  for (std::size_t j = 0; j < groups.bytes.size(); ++j) {
    std::vector<OpId> ready;
    for (std::size_t r = 0; r < counters.size(); ++r)
      ready.push_back(b.add_wait(static_cast<int>(r), st.comm[r], counters[r],
                                 groups.target[j][r / static_cast<std::size_t>(etp)],
                                 fmt::format("{}wait.group{}", prefix, j)));
    if (etp == 1) {
      AllToAllvSpec a;
      a.name = fmt::format("{}{}.group{}", prefix, what, j);
      a.bytes = groups.bytes[j][0];
      a.streams = st.comm;
      for (const OpId w : ready) a.deps.push_back({w});
      last = add_expert_all_to_allv(b, m, a);
      continue;
    }
    for (int e = 0; e < m.ep; ++e) {
      CollectiveSpec s;
      s.name = fmt::format("{}scatter.group{}", prefix, j);
      s.primitive = Primitive::reduce_scatter;
      s.bytes = groups.scatter[j][static_cast<std::size_t>(e)];
      for (int k = 0; k < etp; ++k) {
        const int r = e * etp + k;
        s.ranks.push_back(r);
        s.streams.push_back(st.comm[static_cast<std::size_t>(r)]);
        s.deps.push_back({ready[static_cast<std::size_t>(r)]});
      }
      const std::vector<OpId> ops = b.add_collective(s);
      for (std::size_t i = 0; i < ops.size(); ++i) ready[static_cast<std::size_t>(s.ranks[i])] = ops[i];
    }
    last.assign(counters.size(), kNoOp);
    for (int k = 0; k < etp; ++k) {
      AllToAllvSpec a;
      a.name = fmt::format("{}{}.group{}", prefix, what, j);
      a.bytes = groups.bytes[j][static_cast<std::size_t>(k)];
      for (int e = 0; e < m.ep; ++e) {
        const int r = e * etp + k;
        a.ranks.push_back(r);
        a.streams.push_back(st.comm[static_cast<std::size_t>(r)]);
        a.deps.push_back({ready[static_cast<std::size_t>(r)]});
      }
      const std::vector<OpId> ops = b.add_all_to_allv(a);
      for (std::size_t i = 0; i < ops.size(); ++i) last[static_cast<std::size_t>(a.ranks[i])] = ops[i];
    }
  }
  return last;
}

// The wave groups of one signalling GEMM per EP rank (`gemms`, the local experts' global ids from the
// EP rank): their size (group_waves, or the predictor's) and plan.
struct WaveGroups {
  std::int64_t slots = 0;
  std::int64_t size = 0;
  GroupPlan plan;
};
WaveGroups plan_wave_groups(GraphBuilder& b, const Moe& m, const MoeRouting& routing, std::vector<RankGemms>& ranks,
                            std::int64_t group_waves) {
  const HardwareProfile& hw = b.hardware();
  const int etp = std::max(1, m.expert_tp);
  const int per_rank = m.experts / m.ep;
  for (int r = 0; r < m.ep; ++r) {
    RankGemms& rg = ranks[static_cast<std::size_t>(r)];
    rg.plan = plan_grouped_gemm(hw, rg.down);
    for (int e = 0; e < per_rank; ++e) rg.experts.push_back(r * per_rank + e);
  }
  WaveGroups w;
  w.slots = wave_slots(hw, ranks);
  const std::string link = collective_link_class(hw, m.ep);
  const std::function<Ps(Bytes)> scatter_ps = [&b, etp](Bytes s) {
    return b.collective_ps(Primitive::reduce_scatter, s, etp);
  };
  w.size = group_size(hw, ranks, routing.tokens, w.slots, link, group_waves, etp, scatter_ps);
  w.plan = groups_of(ranks, routing.tokens, w.slots, w.size, etp);
  return w;
}

// One MoE layer as FlashOverlap's GEMM + all-to-all into `b` on `st`, rank r's router after start[r]
// (empty: none), op and counter names prefixed by `prefix`; group_waves 0 = the predictor's choice.
// With expert TP (ep x expert_tp graph ranks, ETP innermost): the dispatch over every EP group, the ETP
// all-gather (as no_overlap runs them: FlashOverlap overlaps the communication after a GEMM, Sec. 2.3),
// the gate+up and the signalling down projection on the gathered rows at 1 / expert_tp of each FFN, and
// per wave group its reduce-scatter then its all-to-allv (groups_of).
MoeLayerOps emit_moe_flashoverlap(GraphBuilder& b, const RankStreams& st, const Moe& m, const MoeRouting& routing,
                                  std::int64_t group_waves, const std::vector<OpId>& start, const std::string& prefix) {
  const int etp = std::max(1, m.expert_tp);
  const int n = m.ep * etp;
  const MoeShapes sh = moe_shapes(m, routing.tokens);
  const MoeShapes gathered = etp > 1 ? moe_etp_shapes(m, routing.tokens) : sh;

  std::vector<RankGemms> ranks(static_cast<std::size_t>(m.ep));
  for (int e = 0; e < m.ep; ++e) ranks[static_cast<std::size_t>(e)].down = gathered.down[static_cast<std::size_t>(e)];
  const WaveGroups wg = plan_wave_groups(b, m, routing, ranks, group_waves);
  const GroupPlan& groups = wg.plan;

  std::vector<OpId> routers;
  for (int r = 0; r < n; ++r) {
    GemmOptions o;
    o.name = prefix + "router";
    if (!start.empty() && start[static_cast<std::size_t>(r)] != kNoOp) o.deps = {start[static_cast<std::size_t>(r)]};
    routers.push_back(b.add_gemm(r, st.compute[static_cast<std::size_t>(r)], moe_router_gemm(m), o));
  }
  const std::vector<OpId> dispatched =
      add_etp_collective(b, st, m, prefix + "gather", Primitive::all_gather, sh,
                         add_ep_all_to_allv(b, st, m, prefix + "dispatch", sh.dispatch, routers));
  std::vector<CounterId> counters;
  for (int r = 0; r < n; ++r) {
    const auto e = static_cast<std::size_t>(r / etp);
    const StreamId cs = st.compute[static_cast<std::size_t>(r)];
    GemmOptions up;
    up.name = prefix + "experts.up";
    up.deps = {dispatched[static_cast<std::size_t>(r)]};
    const OpId u = b.add_grouped_gemm(r, cs, gathered.up[e], up);
    MemoryKernel act;
    act.name = prefix + "experts.act";
    act.bytes = gathered.activation_bytes[e];
    act.deps = {u};
    const OpId a = b.add_memory(r, cs, act);
    counters.push_back(b.add_counter(fmt::format("{}r{}.down.tiles", prefix, r)));
    GemmOptions down;
    down.name = prefix + "experts.down.signalling";
    down.deps = {a};
    down.tile_counters = {counters.back()};
    b.add_grouped_gemm(r, cs, gathered.down[e], down);
  }
  std::vector<OpId> last = add_grouped_all_to_allv(b, st, m, counters, groups, prefix, "combine");
  for (int r = 0; r < n; ++r)
    last[static_cast<std::size_t>(r)] = add_moe_shared_experts(b, r, st.compute[static_cast<std::size_t>(r)], m,
                                                               last[static_cast<std::size_t>(r)], prefix);
  return {last, fmt::format("{} wave groups of {} waves ({} SMs a wave){}{}", groups.bytes.size(), wg.size, wg.slots,
                            group_waves == 0 ? ", predicted (max over GPUs)" : "",
                            etp > 1 ? fmt::format("; expert_tp = {}: each group's ETP reduce-scatter, then its combine",
                                                  etp)
                                    : "")};
}

// The backward's form (docs/guide/moe.md "Training step"): FlashOverlap's GEMM + All-to-All on the GEMM
// that feeds the dispatch backward, the gate+up projection's dgrad (rows x d_model x 2 d_ffn_expert: its
// output rows are the input gradients that go back to the tokens' ranks). Its tiles signal wave groups
// and each group's rows are sent as soon as it is done (Sec. 3.3.3 (3), 4.2, the same tile-to-source
// split and predictor as the forward's down projection); the gate+up wgrad follows on the compute stream,
// beside the groups still in flight. Before it, as no_overlap's backward (moe_backward.cpp): shared
// experts' backward, combine backward, down dgrad + wgrad, activation backward; after it the router's.
// With expert TP the conjugates of the forward's ETP collectives (moe_backward.cpp): an all-gather of the
// output gradients after the combine backward, and the gate+up dgrad's partial sums (its K, the
// column-parallel 2 d_ffn_expert / expert_tp, is split) reduce-scattered per wave group before that
// group's dispatch backward, as the forward's down projection's are (groups_of).
// Op and counter names get `prefix` (the moe workload's "bwd.", a MoE transformer's "bwd.L3.moe.").
MoeLayerOps emit_moe_flashoverlap_backward(GraphBuilder& b, const RankStreams& st, const Moe& m,
                                           const MoeRouting& routing, std::int64_t group_waves,
                                           const std::vector<OpId>& start, const std::string& prefix) {
  const int etp = std::max(1, m.expert_tp);
  const int n = m.ep * etp;
  const MoeShapes sh = moe_shapes(m, routing.tokens);
  const MoeShapes gathered = etp > 1 ? moe_etp_shapes(m, routing.tokens) : sh;
  Moe split = m;  // the model as one ETP member runs it
  split.d_ffn_expert = m.d_ffn_expert / etp;
  split.expert_tp = 1;
  const std::string& pre = prefix;
  std::vector<MoeExpertBackward> bwd;
  std::vector<RankGemms> ranks(static_cast<std::size_t>(m.ep));
  for (int e = 0; e < m.ep; ++e) {
    bwd.push_back(moe_expert_backward(etp > 1 ? split : m, gathered, e));
    ranks[static_cast<std::size_t>(e)].down = bwd.back().up_dgrad;  // the GEMM whose rows the all-to-all sends
  }
  const WaveGroups wg = plan_wave_groups(b, m, routing, ranks, group_waves);
  const GroupPlan& groups = wg.plan;

  auto cs = [&](int r) { return st.compute[static_cast<std::size_t>(r)]; };
  std::vector<OpId> combine_deps;
  for (int r = 0; r < n; ++r) {
    const OpId s0 = start.empty() ? kNoOp : start[static_cast<std::size_t>(r)];
    combine_deps.push_back(add_moe_shared_experts_backward(b, r, cs(r), m, s0, pre));
  }
  // Combine backward: the transpose of the combine's bytes (= the dispatch's), then with expert TP the
  // all-gather of the output gradients over the ETP group.
  const std::vector<OpId> combined =
      add_etp_collective(b, st, m, pre + "gather", Primitive::all_gather, sh,
                         add_ep_all_to_allv(b, st, m, pre + "combine", sh.dispatch, combine_deps));
  std::vector<CounterId> counters;
  std::vector<OpId> wgrad(static_cast<std::size_t>(n), kNoOp);
  for (int r = 0; r < n; ++r) {
    const MoeExpertBackward& e = bwd[static_cast<std::size_t>(r / etp)];
    GemmOptions dd;
    dd.name = pre + "experts.down.dgrad";
    dd.deps = {combined[static_cast<std::size_t>(r)]};
    const OpId ddg = b.add_grouped_gemm(r, cs(r), e.down_dgrad, dd);
    GemmOptions dw;
    dw.name = pre + "experts.down.wgrad";
    dw.deps = {ddg};
    const OpId dwg = b.add_grouped_gemm(r, cs(r), e.down_wgrad, dw);
    MemoryKernel act;
    act.name = pre + "experts.act";
    act.bytes = e.activation_bytes;
    act.deps = {dwg};
    const OpId a = b.add_memory(r, cs(r), act);
    counters.push_back(b.add_counter(fmt::format("{}r{}.up.dgrad.tiles", pre, r)));
    GemmOptions ud;
    ud.name = pre + "experts.up.dgrad.signalling";
    ud.deps = {a};
    ud.tile_counters = {counters.back()};
    const OpId udg = b.add_grouped_gemm(r, cs(r), e.up_dgrad, ud);
    GemmOptions uw;
    uw.name = pre + "experts.up.wgrad";
    uw.deps = {udg};
    wgrad[static_cast<std::size_t>(r)] = b.add_grouped_gemm(r, cs(r), e.up_wgrad, uw);
  }
  // Dispatch backward, one all-to-allv per wave group of the gate+up dgrad (the combine's bytes in all).
  std::vector<OpId> last = add_grouped_all_to_allv(b, st, m, counters, groups, pre, "dispatch");
  // The router's backward after the last group is sent and the wgrad is done.
  for (int r = 0; r < n; ++r) {
    const auto i = static_cast<std::size_t>(r);
    const RankGemm router = moe_router_gemm(m);
    GemmOptions rd;
    rd.name = pre + "router.dgrad";
    rd.deps = {wgrad[i], last[i]};
    const OpId rdg = b.add_gemm(r, cs(r), RankGemm{router.m, router.k, router.n, router.dtype}, rd);
    GemmOptions rw;
    rw.name = pre + "router.wgrad";
    rw.deps = {rdg};
    last[i] = b.add_gemm(r, cs(r), RankGemm{router.k, router.n, router.m, router.dtype}, rw);
  }
  return {last, fmt::format("backward: gate+up dgrad in {} wave groups of {} waves{}{}", groups.bytes.size(), wg.size,
                            group_waves == 0 ? ", predicted (max over GPUs)" : "",
                            etp > 1 ? fmt::format(", expert_tp = {}", etp) : "")};
}

BuiltScheme build_moe_flashoverlap(const BuildContext& ctx) {
  const std::int64_t group_waves = ctx.integer(kGroupWaves);
  const MoeBlockEmitter block = [group_waves](GraphBuilder& b, const RankStreams& st, const Moe& m,
                                              const MoeRouting& routing, const std::vector<OpId>& start,
                                              const std::string& prefix) {
    return emit_moe_flashoverlap(b, st, m, routing, group_waves, start, prefix);
  };
  const MoeBlockEmitter backward = [group_waves](GraphBuilder& b, const RankStreams& st, const Moe& m,
                                                 const MoeRouting& routing, const std::vector<OpId>& start,
                                                 const std::string& prefix) {
    return emit_moe_flashoverlap_backward(b, st, m, routing, group_waves, start, prefix);
  };
  if (ctx.workload.kind == WorkloadKind::transformer) return build_moe_transformer(ctx, false, MoeBlockForms{block, backward});
  const Moe& m = std::get<Moe>(ctx.workload.shape);
  GraphBuilder b(ctx, m.ep * std::max(1, m.expert_tp));
  const RankStreams st = b.add_compute_and_comm_streams();
  const MoeRouting routing = moe_routing(m);
  const Pass pass = ctx.workload.training.pass;
  MoeLayerOps ops;
  if (pass != Pass::backward) ops = block(b, st, m, routing, {}, "");
  if (pass == Pass::forward) return b.finish(std::move(ops.reason));
  b.graph().set_pass(StepPass::backward);
  const MoeLayerOps bwd = backward(b, st, m, routing, ops.end, "bwd.");
  return b.finish(ops.reason.empty() ? fmt::format("{} ({})", bwd.reason, pass_name(pass))
                                     : fmt::format("{}; {} ({})", ops.reason, bwd.reason, pass_name(pass)));
}

}  // namespace

SchemeInfo make_moe_flashoverlap_scheme() {
  return {.name = "moe_flashoverlap",
          .source = "flashoverlap-paper Sec. 2.3.3, 3.3.3 (3), 4.2 (GEMM + All-to-All, imbalance-aware predictor)",
          .summary =
              "MoE layer: the down projection's tiles signal wave groups, each group's rows combined as soon "
              "as it is done (with expert_tp, each group's ETP reduce-scatter then its combine)",
          .params = {kGroupWaves},
          .backward = "FlashOverlap's GEMM + All-to-All on the gate+up dgrad: its wave groups' rows sent back to "
                      "their tokens' ranks (dispatch backward) as they finish, beside the wgrad (moe workload and "
                      "MoE transformer; with expert_tp each group's ETP reduce-scatter first)",
          .applies = [](const Workload& w) { return has_moe_layers(w); },
          .build = build_moe_flashoverlap};
}

}  // namespace overlap::sim
