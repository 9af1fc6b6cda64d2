// FLUX (Chang et al., "FLUX: Fast Software-based Communication Overlap On GPUs Through Kernel
// Fusion", arXiv 2406.06858; bytedance/flux): the collective fused into the GEMM at tile granularity
// (its Sec. 3: over-decomposition to the GEMM's own output tiles, no separate split GEMMs). facts.md
// "Production overlap implementations": AllGather-GEMM pulls with the copy engine and each tile waits
// on the flag of the rows it reads; GEMM-ReduceScatter on Hopper sends the output tiles to their
// owner from a separate high-priority stream of num_blocks CTAs (default 6), then reduces locally.
//
// GEMM-ReduceScatter (a row-parallel linear, dgrad -> reduce-scatter): one GEMM per rank over every
// output row, its tiles ordered so that the rows owned by rank r+1 come first, then r+2, ..., and the
// rank's own rows last (FLUX's tile swizzle keeps the ranks from all writing to one peer at once).
// Every tile signals a per-GEMM counter as it completes (tile_signal_overhead on each tile's
// epilogue); the communication kernel on the high-priority stream waits for each peer's tiles and
// writes them into that peer's buffer (comm_sms CTAs; 0 = the copy engine). The peer's block goes in
// `transfers_per_peer` pieces as its tiles complete: FLUX sends per tile from one persistent kernel;
// here each piece is an op the engine launches (host and launch gap, and on the SM path a rendezvous
// of the ranks), costs FLUX does not pay per tile, so finer pieces shrink the exposed tail but
// overstate that overhead. The default is one piece per peer block (the tail is then the last
// block's transfer); on a profile without launch costs (tests/schemes/ideal_profile.hpp) one piece
// per tile is FLUX's schedule. Then each rank sums the T partial copies of its rows (a memory-bound
// kernel). With comm_sms > 0 the sends are SM copy kernels whose rate is comm_sms x the profile's
// sm_copy cta_gbps.
// Unlike FlashOverlap (flashoverlap.cpp) there are no wave groups and no NCCL call: the data leaves
// tile by tile, so only the last tiles' transfer and the reduction are exposed.
//
// AllGather-GEMM (a column-parallel linear, dY's all-gather -> dgrad): the peers' shards are pulled
// by the copy engine in ring order (r+1, r+2, ...) while the GEMM starts on the local shard; the tiles
// of a shard start as its pull lands. One fused kernel pays one tail wave, not one per shard: the
// per-shard pieces run on two alternating streams so the next shard's tiles fill the previous one's
// partial wave (as async_tp's two streams do, async-tp-illustrated "Amplified wave quantization").
// Every tile pays tile_signal_overhead (its flag check).
//
// A training step: the same two fusions wherever the backward has their pattern (dY all-gather ->
// row-parallel dgrad; column-parallel dgrad -> reduce-scatter); the input's re-gather -> wgrad and
// what has neither pattern run as no_overlap runs them, or bulk with column_backward bulk.
#include <algorithm>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "cost_model/collective_model.hpp"
#include "cost_model/gemm_model.hpp"
#include "cost_model/input_error.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/schemes/param_rows.hpp"
#include "sim/schemes/reusable_builders.hpp"
#include "sim/schemes/training_step.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

namespace {

const SchemeParam kTileSignal = tile_signal_overhead_param(
    "per-tile signal (GEMM-RS) or flag-wait (AG-GEMM) cost as a fraction of a tile's time",
    "FLUX fused kernels' per-tile flags (no knob)");
const SchemeParam kCommSms = [] {
  SchemeParam p = comm_sms_param("comm_sms", 6, 0,
                                 "CTAs of the GEMM-RS communication kernel (0: copy-engine writes, no SMs); the "
                                 "AllGather-GEMM pulls always use the copy engine");
  return p.tune({0, 6, 24}).production("FLUX GEMM-RS num_blocks (default 6 on Hopper)");
}();
const SchemeParam kTransfers = int_param("transfers_per_peer", 1, 1, 4096,
                                         "pieces a peer's block of output tiles is sent in as its tiles complete "
                                         "(the simulation's grouping of FLUX's per-tile sends)");

struct FluxParams {
  double signal = 0.01;
  int comm_sms = 6;
  int transfers = 4;
};


class FluxEmitter {
 public:
  FluxEmitter(GraphBuilder& b, const FluxParams& p) : b_(b), p_(p), T_(b.ranks()) {
    main_ = b.add_streams("compute", 0);
    second_ = b.add_streams("compute2", 0);
    comm_ = b.add_streams("flux.comm", 1);
  }
  RankStreams streams() const { return RankStreams{main_, comm_}; }
  const std::vector<StreamId>& main_streams() const { return main_; }
  // nccl-tests S of every collective fused so far (for the P2P decomposition bound).
  const std::vector<Bytes>& collectives() const { return collectives_; }

  // GEMM-ReduceScatter of `g` (every output row on every rank; rank d owns rows chunk_bytes(m, T, d)),
  // after `start`. Returns per-rank ends (the local reduction).
  std::vector<OpId> gemm_reduce_scatter(const GemmShape& g, const std::vector<OpId>& start, const std::string& tag) {
    collectives_.push_back(g.m * g.n * dtype_bytes(g.dtype));
    const GemmPlan plan = plan_gemm(b_.hardware(), g);
    const std::int64_t tiles = std::max<std::int64_t>(1, plan.tiles);
    const Bytes row_bytes = g.n * dtype_bytes(g.dtype);
    std::vector<CounterId> counter;
    std::vector<OpId> gemm;
    for (int r = 0; r < T_; ++r) {
      counter.push_back(b_.add_counter(fmt::format("{}r{}.tiles", tag, r)));
      GemmOptions o;
      o.name = tag + ".gemm";
      o.epilogue_overhead = p_.signal;
      o.tile_counters = {counter.back()};
      if (!start.empty() && start[static_cast<std::size_t>(r)] != kNoOp) o.deps = {start[static_cast<std::size_t>(r)]};
      gemm.push_back(b_.add_gemm(r, main_[static_cast<std::size_t>(r)], g, o));
    }
    // Tiles done when block i (the i-th in tile order) is through piece c.
    auto tiles_through = [&](int i, int c) {
      const std::int64_t lo = tiles * i / T_, hi = tiles * (i + 1) / T_;
      return std::max<std::int64_t>(1, lo + (hi - lo) * (c + 1) / p_.transfers);
    };
    auto rows_of = [&](int d) { return static_cast<std::int64_t>(chunk_bytes(g.m, T_, d)); };
    std::vector<OpId> last(static_cast<std::size_t>(T_), kNoOp);
    for (int step = 1; step < T_; ++step) {
      for (int c = 0; c < p_.transfers; ++c) {
        const std::int64_t id = p_.comm_sms > 0 ? b_.new_collective_id() : -1;
        for (int r = 0; r < T_; ++r) {
          const int dst = wrap_mod(r + step, T_), src = wrap_mod(r - step, T_);
          const Bytes out = chunk_bytes(rows_of(dst) * row_bytes, p_.transfers, c);
          const Bytes in = chunk_bytes(rows_of(r) * row_bytes, p_.transfers, c);
          const StreamId s = comm_[static_cast<std::size_t>(r)];
          const OpId wait = b_.add_wait(r, s, counter[static_cast<std::size_t>(r)], tiles_through(step - 1, c),
                                        fmt::format("{}.wait{}.{}", tag, step, c));
          b_.add_required_bytes(r, dst, out);
          PeerCopy x;
          x.name = fmt::format("{}.send{}.{}", tag, step, c);
          x.ctas = p_.comm_sms;  // 0: a copy-engine write to dst
          x.collective = id;
          x.members = T_;
          x.send_to = dst;
          x.send_bytes = out;
          x.recv_from = src;
          x.recv_bytes = in;
          x.push = true;
          x.deps = {wait};
          last[static_cast<std::size_t>(r)] = add_peer_copy(b_, r, s, x);
        }
      }
    }
    // Every rank's pieces for rank r have landed once every rank's last send is done (a copy-engine
    // write completes on the sender's stream): the reduction waits for all of them.
    std::vector<OpId> out;
    for (int r = 0; r < T_; ++r) {
      const Bytes mine = rows_of(r) * row_bytes;
      MemoryKernel k{tag + ".reduce", static_cast<Bytes>(T_ + 1) * mine, {gemm[static_cast<std::size_t>(r)]}, 0};
      for (const OpId o : last)
        if (o != kNoOp) k.deps.push_back(o);
      out.push_back(b_.add_memory(r, main_[static_cast<std::size_t>(r)], k));
    }
    return out;
  }

  // AllGather-GEMM over the gathered rows (g.m in total, rank d's shard chunk_bytes(g.m, T, d) rows of
  // g.k), after `start`; split_k: the gathered rows are the GEMM's K (not used: wgrad runs plain).
  std::vector<OpId> all_gather_gemm(const GemmShape& g, const std::vector<OpId>& start, const std::string& tag) {
    collectives_.push_back(g.m * g.k * dtype_bytes(g.dtype));
    const Bytes row_bytes = g.k * dtype_bytes(g.dtype);
    auto rows_of = [&](int d) { return static_cast<std::int64_t>(chunk_bytes(g.m, T_, d)); };
    std::vector<std::vector<OpId>> ends(static_cast<std::size_t>(T_));
    std::vector<OpId> pulled_prev(static_cast<std::size_t>(T_), kNoOp);
    for (int step = 0; step < T_; ++step) {
      for (int r = 0; r < T_; ++r) {
        const std::size_t ri = static_cast<std::size_t>(r);
        const int src = wrap_mod(r + step, T_);
        std::vector<OpId> deps;
        if (!start.empty() && start[ri] != kNoOp) deps.push_back(start[ri]);
        if (step > 0) {
          // The pull reads the peer's shard (ready after the peer's `start`) after the one before it.
          std::vector<OpId> cdeps = deps;
          if (!start.empty() && start[static_cast<std::size_t>(src)] != kNoOp)
            cdeps.push_back(start[static_cast<std::size_t>(src)]);
          if (pulled_prev[ri] != kNoOp) cdeps.push_back(pulled_prev[ri]);
          pulled_prev[ri] = b_.add_copy(r, comm_[ri], src, r, rows_of(src) * row_bytes,
                                        fmt::format("{}.pull{}", tag, step), cdeps, false);
          b_.add_required_bytes(src, r, rows_of(src) * row_bytes);
          deps.push_back(pulled_prev[ri]);
        }
        GemmOptions o;
        o.name = fmt::format("{}.gemm{}", tag, src);
        o.epilogue_overhead = p_.signal;
        o.deps = deps;
        const StreamId s = step % 2 == 0 ? main_[ri] : second_[ri];
        ends[ri].push_back(b_.add_gemm(r, s, GemmShape{rows_of(src), g.n, g.k, g.dtype}, o));
      }
    }
    std::vector<OpId> out;
    for (int r = 0; r < T_; ++r) {
      const std::size_t ri = static_cast<std::size_t>(r);
      out.push_back(b_.add_delay(r, main_[ri], 0, tag + ".end", ends[ri]));
    }
    return out;
  }

  std::vector<OpId> plain_gemm(const GemmShape& g, const std::vector<OpId>& start, const std::string& tag) {
    std::vector<OpId> out;
    for (int r = 0; r < T_; ++r) {
      GemmOptions o;
      o.name = tag;
      if (!start.empty() && start[static_cast<std::size_t>(r)] != kNoOp) o.deps = {start[static_cast<std::size_t>(r)]};
      out.push_back(b_.add_gemm(r, main_[static_cast<std::size_t>(r)], g, o));
    }
    return out;
  }

  std::vector<OpId> memory(Bytes bytes, const std::vector<OpId>& after, const std::string& tag) {
    std::vector<OpId> out;
    for (int r = 0; r < T_; ++r)
      out.push_back(b_.add_memory(r, main_[static_cast<std::size_t>(r)],
                                  MemoryKernel{tag, bytes, {after[static_cast<std::size_t>(r)]}, 0}));
    return out;
  }

  std::vector<OpId> core_attention(const AttentionShapes& s, DType dt, const std::vector<OpId>& after,
                                   const std::string& tag) {
    std::vector<OpId> out;
    for (int r = 0; r < T_; ++r)
      out.push_back(add_core_attention(b_, r, main_[static_cast<std::size_t>(r)], s, dt, tag, {after[static_cast<std::size_t>(r)]}));
    return out;
  }

 private:
  GraphBuilder& b_;
  const FluxParams& p_;
  int T_;
  std::vector<StreamId> main_, second_, comm_;
  std::vector<Bytes> collectives_;
};

std::vector<OpId> emit_mlp(FluxEmitter& e, const MlpTpSp& mlp, int T, const std::vector<OpId>& start,
                           const std::string& prefix) {
  const MlpShapes s = mlp_shapes(mlp, T);
  const std::vector<OpId> fc1 =
      mlp.gather_input ? e.all_gather_gemm(s.col, start, prefix + "fc1") : e.plain_gemm(s.col, start, prefix + "fc1");
  const std::vector<OpId> act = e.memory(s.activation_bytes, fc1, prefix + "activation");
  return e.gemm_reduce_scatter(s.row, act, prefix + "fc2");
}

std::vector<OpId> emit_attention(FluxEmitter& e, const AttentionTpSp& att, int T, const std::vector<OpId>& start,
                                 const std::string& prefix) {
  const AttentionShapes s = attention_shapes(att, T);
  const std::vector<OpId> qkv =
      att.gather_input ? e.all_gather_gemm(s.qkv, start, prefix + "qkv") : e.plain_gemm(s.qkv, start, prefix + "qkv");
  const std::vector<OpId> core = e.core_attention(s, att.dtype, qkv, prefix + "attention");
  return e.gemm_reduce_scatter(s.out, core, prefix + "out");
}

std::vector<OpId> emit_block(FluxEmitter& e, const Workload& w, Block block, const std::vector<OpId>& start,
                             const std::string& prefix) {
  const int T = w.tp;
  if (const auto* t = std::get_if<Transformer>(&w.shape)) {
    if (block == Block::attention) return emit_attention(e, transformer_attention(*t), T, start, prefix);
    return emit_mlp(e, transformer_mlp(*t), T, start, prefix);
  }
  if (w.kind == WorkloadKind::mlp_tpsp) return emit_mlp(e, std::get<MlpTpSp>(w.shape), T, start, prefix);
  if (w.kind == WorkloadKind::attention_tpsp) return emit_attention(e, std::get<AttentionTpSp>(w.shape), T, start, prefix);
  if (w.kind == WorkloadKind::gemm_collective) {
    const GemmCollective g = gemm_collective_shape(w);
    const GemmShape shape{g.m, g.n, g.k, g.dtype};
    if (g.primitive == Primitive::all_gather) return e.all_gather_gemm(shape, start, prefix + "ag");
    if (g.primitive == Primitive::reduce_scatter) return e.gemm_reduce_scatter(shape, start, prefix + "rs");
  }
  throw InputError("", 0, "workload.kind", fmt::format("flux does not apply to '{}'", workload_kind_name(w.kind)));
}

class FluxPass final : public PassEmitter {
 public:
  FluxPass(GraphBuilder& b, FluxEmitter& e, const Workload& w) : PassEmitter(b, e.streams()), e_(e), w_(w) {}

  PerRank forward(Block block, const PerRank& start, const std::string& prefix) override {
    return emit_block(e_, w_, block, start, prefix);
  }
  // dY's all-gather -> row-parallel dgrad (gathered dimension M): AllGather-GEMM. The input's re-gather
  // -> wgrad gathers the wgrad's K, which FLUX's AG-GEMM (gathering A's rows) does not cover.
  PerRank gather_gemm(const GatherGemm& g, const PerRank& start) override {
    if (g.primitive != Primitive::all_gather || g.split_k) return PassEmitter::gather_gemm(g, start);
    return e_.all_gather_gemm(g.gemm, start, g.name);
  }
  // Column-parallel dgrad -> reduce-scatter: GEMM-ReduceScatter. Without SP (an all-reduce): plain.
  PerRank gemm_scatter(const GemmScatter& g, const PerRank& start) override {
    if (g.primitive != Primitive::reduce_scatter) return PassEmitter::gemm_scatter(g, start);
    return e_.gemm_reduce_scatter(g.gemm, start, g.name);
  }

 private:
  FluxEmitter& e_;
  const Workload& w_;
};

BuiltScheme build_flux(const BuildContext& ctx) {
  FluxParams p;
  p.signal = ctx.number(kTileSignal);
  p.comm_sms = ctx.integer(kCommSms);
  p.transfers = ctx.integer(kTransfers);
  const Workload& w = ctx.workload;
  validate_workload(w);
  GraphBuilder b(ctx);
  FluxEmitter e(b, p);
  const std::string how =
      fmt::format("tile-level fused AG-GEMM / GEMM-RS, RS sends on {}, {} piece{} per peer, signal {:.1f} % per tile",
                  p.comm_sms > 0 ? fmt::format("{} SMs", p.comm_sms) : std::string("the copy engine"), p.transfers,
                  p.transfers == 1 ? "" : "s", 100 * p.signal);
  if (is_training_step(w)) {
    FluxPass pass(b, e, w);
    BuiltScheme built = build_training_step(ctx, pass, TrainingStepOptions{column_backward(ctx), "FLUX " + how});
    built.bound_ps = decomposition_bound_ps(ctx.hardware, w.tp, e.collectives(), true);
    return built;
  }
  if (w.kind == WorkloadKind::transformer) {
    const Transformer& t = std::get<Transformer>(w.shape);
    compose_layers(
        t.layers,
        [&](const std::vector<OpId>& start, const std::string& prefix) {
          return emit_block(e, w, Block::attention, start, prefix);
        },
        [&](const std::vector<OpId>& start, const std::string& prefix) {
          return emit_block(e, w, Block::mlp, start, prefix);
        });
    return b.finish(fmt::format("{} layers, FLUX {}", t.layers, how),
                    decomposition_bound_ps(ctx.hardware, w.tp, e.collectives(), true));
  }
  emit_block(e, w, Block::whole, {}, "");
  return b.finish("FLUX " + how, decomposition_bound_ps(ctx.hardware, w.tp, e.collectives(), false));
}

}  // namespace

SchemeInfo make_flux_scheme() {
  return {.name = "flux",
          .source = "FLUX (arXiv 2406.06858, bytedance/flux): fused AllGather-GEMM and GEMM-ReduceScatter",
          .summary = "communication fused into the GEMM per output tile: tiles signal as they finish and go to their "
                     "owner (GEMM-RS), or wait for the rows they read (AG-GEMM)",
          .params = {kTileSignal, kCommSms, kTransfers, column_backward_param()},
          .backward = "dY all-gather -> dgrad as AllGather-GEMM, dgrad -> reduce-scatter as GEMM-ReduceScatter; the "
                      "input's re-gather -> wgrad unfused (or bulk with column_backward bulk)",
          .applies = applies_to_tp_sp_linears,
          .build = build_flux};
}

}  // namespace overlap::sim
