// CommFuse (commfuse-paper Sec. 3.2, Sec. 4, Alg. 1-5, Appendix A): reduce-scatter, all-gather and
// the Ulysses all-to-all decomposed into P2P steps, with the computation cut into m x T slices and
// ordered rank-adaptively so that the last step needs no communication.
//
// Transport: the algorithms issue paired, two-sided `p2p_send` / `p2p_recv` calls (Alg. 1 lines
// 16-17, Alg. 2 lines 20-21) through the communication library (NCCL send/recv on GPUs, HCCL on
// Ascend), whose kernels run on SMs and match sender with receiver. So every exchange is a
// comm_kernel whose phase holds the sends and receives: the engine matches them across ranks,
// shares the links, and the kernel holds its channels' SMs while it runs (transport nccl, the
// default). transport copy_engine replaces each exchange by the receiver's copy-engine pull, which
// holds no SMs: what the reference kernels run on virtual ranks of one GPU.
#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "cost_model/collective_model.hpp"
#include "cost_model/gemm_model.hpp"
#include "cost_model/input_error.hpp"
#include "sim/backward_shapes.hpp"
#include "sim/schemes/commfuse_schedule.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/schemes/param_rows.hpp"
#include "sim/schemes/reusable_builders.hpp"
#include "sim/schemes/training_step.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

namespace {

struct CommFuseParams {
  int m = 1;  // slicing granularity: the sequence is cut into m x T slices (Sec. 3.2)
  CommFuseSchedule schedule = CommFuseSchedule::ring;
  bool query_split = true;  // attention_tpsp: Alg. 4 (true) or the row-parallel projection (Alg. 3)
  int channels = 0;         // SMs an exchange kernel holds
  // How a step's exchange moves its bytes: an NCCL send/recv kernel holding `channels` SMs (Alg. 1
  // lines 16-17, ncclSend / ncclRecv), or a copy-engine pull by the receiver (cudaMemcpyAsync: no
  // SMs; what the reference kernels run on virtual ranks, kernels/schemes/commfuse.cpp).
  bool copy_engine = false;
};

const SchemeParam kM = int_param(knobs::kCommFuseM, "slicing granularity: the sequence is cut into m x T slices (Sec. 3.2)")
                          .tune({1, 2, 4});
const SchemeParam kSchedule =
    choice_param(knobs::kCommFuseSchedule,
                 "ring (Alg. 1/2) | pairwise (App. A.3 bidirectional) | circular (App. A.4)")
        .tune({"ring", "pairwise", "circular"});
const SchemeParam kAttention = choice_param("attention", {"query_split", "row_parallel"},
                                            "attention_tpsp: query_split (Alg. 4) | row_parallel (Alg. 3)");
const SchemeParam kCommFuseTransport =
    choice_param(knobs::kCommFuseTransport,
                 "nccl: NCCL send/recv kernels holding `channels` SMs (Alg. 1) | copy_engine: the receiver pulls by copy "
                 "engine, no SMs (the reference kernels on virtual ranks); not in tune's grid: the paper's CommFuse is "
                 "NCCL's");
const SchemeParam kChannels = [] {
  SchemeParam p = comm_sms_param("channels", -1, 1, "SMs each P2P exchange kernel holds; -1 = the profile's comm.p2p_channels");
  p.sentinel = -1;
  p.sentinel_meaning = "profile comm.p2p_channels";
  return p.tune({-1, 8, 16}).production("NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS (one SM per channel); TransformerEngine num_sm");
}();

CommFuseParams read_commfuse_params(const BuildContext& ctx) {
  CommFuseParams p;
  p.m = ctx.integer(kM);
  p.schedule = *parse_commfuse_schedule(ctx.text(kSchedule));  // the row allows only the names it parses
  p.query_split = ctx.text(kAttention) == "query_split";
  p.copy_engine = ctx.text(kCommFuseTransport) == "copy_engine";
  const int ch = ctx.integer(kChannels);
  const int sms = ctx.hardware.gpu.sm_count;
  p.channels = ch > 0 ? ch : std::clamp(ctx.hardware.comm.p2p_channels, 1, std::max(1, sms - 1));
  return p;
}

// Rows of slice `slice` (of `slices`), sub-slice `sub` (of m): the sequence cut into m x T pieces.
std::int64_t unit_rows(std::int64_t rows, int slices, int slice, int m, int sub) {
  return chunk_bytes(chunk_bytes(rows, slices, slice), m, sub);
}

struct Pipeline {
  GraphBuilder& b;
  const CommFuseParams& p;
  RankStreams streams;
  int T = 0;
  std::int64_t rows = 0;   // rows (tokens) of the whole sequence the collective is over
  Bytes row_bytes = 0;     // bytes one row carries over the wire
  std::string tag;

  Bytes unit_bytes(int slice, int sub) const { return unit_rows(rows, T, slice, p.m, sub) * row_bytes; }
  std::vector<Bytes> slice_bytes() const {
    std::vector<Bytes> s;
    for (int l = 0; l < T; ++l) s.push_back(chunk_bytes(rows, T, l) * row_bytes);
    return s;
  }

  // Collective ids: one per (round, sub-slice), shared by every rank taking part in that round.
  std::vector<std::int64_t> ids;
  std::vector<int> members;  // ranks with an exchange in each round
  void reserve_ids(const std::vector<std::vector<FuseStep>>& orders) {
    int rounds = 0;
    for (const auto& o : orders)
      for (const FuseStep& s : o) rounds = std::max(rounds, s.round + 1);
    members.assign(static_cast<std::size_t>(rounds), 0);
    for (const auto& o : orders)
      for (const FuseStep& s : o)
        if (s.round >= 0) ++members[static_cast<std::size_t>(s.round)];
    ids.clear();
    for (int i = 0; i < rounds * p.m; ++i) ids.push_back(b.new_collective_id());
  }

  // One round's paired p2p_send / p2p_recv (Alg. 1 lines 16-17, Alg. 2 lines 20-21). Returns the op
  // after which `rank` has received its bytes. `sent`: the op producing what `rank` sends this round
  // (kNoOp: there from the start).
  //   nccl: an NCCL send/recv kernel holding its channels' SMs, costed as the profile's nccl_p2p
  //     transport; the sender's kernel starts after `deps`.
  //   copy_engine: the receiver pulls from the sender with a copy engine on one of two copy streams
  //     (alternating by round, as the reference kernels do), once the sender's `sent` is done; no
  //     SMs. The sender does nothing, so `deps` do not apply.
  OpId exchange(int rank, const FuseStep& st, int sub, Bytes send_bytes, Bytes recv_bytes,
                const std::vector<OpId>& deps, const std::string& name, OpId sent) {
    if (p.copy_engine) {
      sent_by[{rank, st.round, sub}] = sent;
      const StreamId cs = copy_stream(rank, st.round);
      if (st.recv_from < 0 || recv_bytes <= 0) return b.add_delay(rank, cs, 0, name, {}, true);
      const OpId pull = b.add_copy(rank, cs, st.recv_from, rank, recv_bytes, name, {}, false);
      pulls.push_back({pull, st.recv_from, st.round, sub});
      return pull;
    }
    P2pSpec x;
    x.name = name;
    x.transport = Transport::nccl_p2p;
    x.channels = p.channels;
    x.collective = ids[static_cast<std::size_t>(st.round * p.m + sub)];
    x.members = members[static_cast<std::size_t>(st.round)];
    if (send_bytes > 0) x.sends.push_back({st.send_to, send_bytes});
    if (recv_bytes > 0) x.recvs.push_back({st.recv_from, recv_bytes});
    x.deps = deps;
    return b.add_p2p(rank, streams.comm[static_cast<std::size_t>(rank)], x);
  }

  // Copy-engine pulls: each waits for what its sender sends that round. The senders' ops are known
  // only once every rank's steps are built, so the dependencies are added afterwards.
  struct Pull {
    OpId copy;
    int sender, round, sub;
  };
  std::vector<Pull> pulls;
  std::map<std::tuple<int, int, int>, OpId> sent_by;  // (rank, round, sub) -> op producing what it sends
  std::vector<std::array<StreamId, 2>> copy_streams;
  StreamId copy_stream(int rank, int round) {
    if (copy_streams.empty()) {
      const std::vector<StreamId> a = b.add_streams("copy0"), c = b.add_streams("copy1");
      for (int r = 0; r < T; ++r) copy_streams.push_back({a[static_cast<std::size_t>(r)], c[static_cast<std::size_t>(r)]});
    }
    return copy_streams[static_cast<std::size_t>(rank)][static_cast<std::size_t>(round & 1)];
  }
  void link_pulls() {
    for (const Pull& x : pulls) {
      const auto it = sent_by.find({x.sender, x.round, x.sub});
      if (it == sent_by.end()) throw GraphError(fmt::format("commfuse: rank {} sends nothing in round {}", x.sender, x.round));
      if (it->second != kNoOp) b.graph().depend(x.copy, it->second);
    }
    pulls.clear();
    sent_by.clear();
  }

  // FuseRS (Alg. 2 / 3 / 4): compute each slice's partial output, send it on; the own slice last.
  // Returns, per rank, the op that completes the rank's reduced output.
  std::vector<OpId> fuse_rs(const UnitCompute& compute, const std::vector<OpId>& start) {
    std::vector<std::vector<FuseStep>> orders;
    for (int r = 0; r < T; ++r) orders.push_back(fuse_rs_order(r, T, p.schedule));
    reserve_ids(orders);
    std::vector<OpId> done;
    for (int r = 0; r < T; ++r) {
      const auto& order = orders[static_cast<std::size_t>(r)];
      const StreamId cs = streams.compute[static_cast<std::size_t>(r)];
      const StreamId xs = streams.comm[static_cast<std::size_t>(r)];
      std::vector<OpId> last_exchange(static_cast<std::size_t>(p.m), kNoOp);
      std::vector<std::vector<OpId>> received(static_cast<std::size_t>(p.m));  // every exchange, per sub-slice
      std::vector<OpId> ends;
      for (std::size_t i = 0; i < order.size(); ++i) {
        const FuseStep& st = order[i];
        for (int s = 0; s < p.m; ++s) {
          const std::string nm = fmt::format("{}.rs.slice{}.{}", tag, st.slice, s);
          std::vector<OpId> deps;
          if (i == 0 && s == 0 && !start.empty()) deps.push_back(start[static_cast<std::size_t>(r)]);
          const OpId g = compute(r, cs, unit_rows(rows, T, st.slice, p.m, s), nm, deps);
          const Bytes ub = unit_bytes(st.slice, s);
          if (st.send_to >= 0) {
            std::vector<OpId> xdeps{g};
            if (p.schedule == CommFuseSchedule::ring && i > 0) {
              // Alg. 2 line 16: O <- B_in + O before the accumulator is forwarded (read 2, write 1),
              // once the accumulator has arrived.
              // (NCCL: the exchange before it on the comm stream; copy engine: the pull.)
              std::vector<OpId> adeps{g};
              if (p.copy_engine && last_exchange[static_cast<std::size_t>(s)] != kNoOp)
                adeps.push_back(last_exchange[static_cast<std::size_t>(s)]);
              xdeps = {b.add_memory(r, xs, MemoryKernel{nm + ".add", 3 * ub, adeps, 0})};
            }
            // Ring: what arrives is the accumulator of the next slice; direct: a partial of ours.
            const Bytes rb = p.schedule == CommFuseSchedule::ring ? unit_bytes(order[i + 1].slice, s) : unit_bytes(r, s);
            last_exchange[static_cast<std::size_t>(s)] = exchange(r, st, s, ub, rb, xdeps, nm + ".p2p", xdeps.back());
            received[static_cast<std::size_t>(s)].push_back(last_exchange[static_cast<std::size_t>(s)]);
          } else {
            // Own slice: ring adds the arrived accumulator; direct schedules aggregate the T buffers
            // (Alg. 2: "the aggregation over the N buffers").
            const Bytes red = p.schedule == CommFuseSchedule::ring ? 3 * ub : (T + 1) * ub;
            // Every received buffer: NCCL's exchanges end in order on the comm stream, the last
            // implying the others; copies on two streams end in no fixed order.
            std::vector<OpId> deps2{g};
            if (p.copy_engine) {
              for (OpId x : received[static_cast<std::size_t>(s)]) deps2.push_back(x);
            } else if (last_exchange[static_cast<std::size_t>(s)] != kNoOp) {
              deps2.push_back(last_exchange[static_cast<std::size_t>(s)]);
            }
            ends.push_back(b.add_memory(r, cs, MemoryKernel{nm + ".reduce", red, deps2, 0}));
          }
        }
      }
      done.push_back(ends.back());
    }
    link_pulls();
    add_required(fuse_rs_required_bytes(slice_bytes(), p.schedule));
    return done;
  }

  // FuseAG (Alg. 1, Sec. 4.2 column-parallel): local shard first, then each shard as it arrives.
  // `start`: per-rank ops producing the local shard (empty: none); the first compute and the first
  // exchange wait for it (later exchanges follow on the comm stream).
  std::vector<OpId> fuse_ag(const UnitCompute& compute, const std::vector<OpId>& start = {}) {
    std::vector<std::vector<FuseStep>> orders;
    for (int r = 0; r < T; ++r) orders.push_back(fuse_ag_order(r, T, p.schedule));
    reserve_ids(orders);
    std::vector<OpId> done;
    for (int r = 0; r < T; ++r) {
      const auto& order = orders[static_cast<std::size_t>(r)];
      const StreamId cs = streams.compute[static_cast<std::size_t>(r)];
      OpId last = kNoOp;
      std::vector<OpId> first_deps;  // what the rank's first compute and first exchange wait for
      if (!start.empty()) first_deps.push_back(start[static_cast<std::size_t>(r)]);
      bool first_compute = true, first_exchange = true;
      const OpId own = start.empty() ? kNoOp : start[static_cast<std::size_t>(r)];
      std::vector<OpId> prev_recv(static_cast<std::size_t>(p.m), kNoOp);
      for (std::size_t i = 0; i < order.size(); ++i) {
        const FuseStep& st = order[i];
        for (int s = 0; s < p.m; ++s) {
          const std::string nm = fmt::format("{}.ag.shard{}.{}", tag, st.slice, s);
          std::vector<OpId> deps;
          if (first_compute) deps = first_deps;
          first_compute = false;
          if (st.recv_from >= 0) {
            // Ring forwards the shard used one step earlier; direct schedules send their own shard.
            const bool ring = p.schedule == CommFuseSchedule::ring;
            const int sent = ring ? order[i - 1].slice : r;
            const OpId sent_op = ring && prev_recv[static_cast<std::size_t>(s)] != kNoOp ? prev_recv[static_cast<std::size_t>(s)] : own;
            const OpId got = exchange(r, st, s, unit_bytes(sent, s), unit_bytes(st.slice, s),
                                      first_exchange ? first_deps : std::vector<OpId>{}, nm + ".p2p", sent_op);
            deps.push_back(got);
            prev_recv[static_cast<std::size_t>(s)] = got;
            first_exchange = false;
          }
          last = compute(r, cs, unit_rows(rows, T, st.slice, p.m, s), nm, deps);
        }
      }
      done.push_back(last);
    }
    link_pulls();
    add_required(fuse_ag_required_bytes(slice_bytes(), p.schedule));
    return done;
  }

  // Fuse All-to-All (Alg. 5): query slice j's attention output goes to rank j; own slice last.
  std::vector<OpId> fuse_a2a(const UnitCompute& compute, const std::vector<OpId>& start) {
    std::vector<std::vector<FuseStep>> orders;
    for (int r = 0; r < T; ++r) {
      // Alg. 5 lines 11-13: send to j = r+i+1 (its slice l = j), receive from k = r-i-1. That is the
      // circular order; pairwise exchanges with the round's partner instead. Both end on slice r.
      orders.push_back(fuse_rs_order(r, T, p.schedule == CommFuseSchedule::pairwise ? CommFuseSchedule::pairwise
                                                                                   : CommFuseSchedule::circular));
    }
    reserve_ids(orders);
    std::vector<OpId> done;
    for (int r = 0; r < T; ++r) {
      const auto& order = orders[static_cast<std::size_t>(r)];
      const StreamId cs = streams.compute[static_cast<std::size_t>(r)];
      std::vector<OpId> ends;
      for (std::size_t i = 0; i < order.size(); ++i) {
        const FuseStep& st = order[i];
        for (int s = 0; s < p.m; ++s) {
          const std::string nm = fmt::format("{}.a2a.slice{}.{}", tag, st.slice, s);
          std::vector<OpId> deps;
          if (i == 0 && s == 0 && !start.empty()) deps.push_back(start[static_cast<std::size_t>(r)]);
          const OpId g = compute(r, cs, unit_rows(rows, T, st.slice, p.m, s), nm, deps);
          if (st.send_to >= 0)
            ends.push_back(exchange(r, st, s, unit_bytes(st.slice, s), unit_bytes(r, s), {g}, nm + ".p2p", g));
          else
            ends.push_back(g);
        }
      }
      // Alg. 5 line 25: wait for all communication, then concatenate (the receive buffers are the output).
      done.push_back(b.add_delay(r, cs, 0, tag + ".a2a.wait_all", ends));
    }
    link_pulls();
    add_required(fuse_a2a_required_bytes(slice_bytes()));
    return done;
  }

  // Byte accounting from the schedule's closed form (commfuse_schedule.hpp), not from the ops.
  void add_required(const std::vector<std::vector<Bytes>>& req) {
    for (int src = 0; src < T; ++src)
      for (int dst = 0; dst < T; ++dst) b.add_required_bytes(src, dst, req[static_cast<std::size_t>(src)][static_cast<std::size_t>(dst)]);
  }
};

// The one-line reason: one step's compute against one step's transfer, the latter as the engine
// costs it (rank 0 to its ring neighbour on an idle node, by the params' transport).
// `also`: a GEMM the step runs besides `g` (the up-projection when a step runs the whole MLP).
std::string step_reason(const GraphBuilder& b, int T, const RankGemm& g, std::int64_t rows, Bytes row_bytes,
                        const CommFuseParams& p, const char* what, const RankGemm* also = nullptr) {
  const int m = p.m;
  const HardwareProfile& hw = b.hardware();
  const std::int64_t unit = std::max<std::int64_t>(1, rows / (static_cast<std::int64_t>(T) * m));
  Ps c = gemm_time_ps(hw, overlap::GemmShape{unit, g.n, g.k, g.dtype});
  if (also) c += gemm_time_ps(hw, overlap::GemmShape{unit, also->n, also->k, also->dtype});
  const Ps x = b.transfer_ps(0, 1 % T, unit * row_bytes, p.copy_engine ? Transport::copy_engine : Transport::nccl_p2p);
  if (x > c)
    return fmt::format("{}: comm > compute per step ({:.1f} > {:.1f} us): about (T-1)(p-c) exposed", what,
                       us_from_ps(x), us_from_ps(c));
  return fmt::format("{}: compute >= comm per step ({:.1f} >= {:.1f} us): only the first step's head is exposed",
                     what, us_from_ps(c), us_from_ps(x));
}

void check_m(const CommFuseParams& p, int T, std::int64_t rows) {
  if (rows / T < p.m)
    throw InputError("", 0, "params.m", fmt::format("{} rows per rank cannot be cut into m = {} slices", rows / T, p.m));
}

// The column-parallel GEMM in its conventional form when the input needs no gathering
// (gather_input = false; commfuse-paper Sec. 5 keeps that projection as Megatron has it).
std::vector<OpId> plain_gemm(Pipeline& pl, const RankGemm& g, const std::vector<OpId>& start, const std::string& name) {
  std::vector<OpId> out;
  for (int r = 0; r < pl.T; ++r) {
    GemmOptions o;
    o.name = name;
    if (!start.empty()) o.deps = {start[static_cast<std::size_t>(r)]};
    out.push_back(pl.b.add_gemm(r, pl.streams.compute[static_cast<std::size_t>(r)], g, o));
  }
  return out;
}

// One layer's blocks. `start`: per-rank ops the block waits for (empty: none); returns per-rank ops
// that complete the rank's reduced output. Appends the S of each collective it decomposes to
// `collectives`; `prefix` names the layer's ops in a composed model; `reason` gets the one-line why.
std::vector<OpId> emit_mlp(Pipeline& pl, const MlpTpSp& mlp, const std::vector<OpId>& start, const std::string& prefix,
                           std::vector<Bytes>& collectives, std::string& reason) {
  GraphBuilder& b = pl.b;
  const int T = pl.T;
  const MlpShapes s = mlp_shapes(mlp, T);
  check_m(pl.p, T, s.col.m);
  pl.rows = s.col.m;
  pl.row_bytes = s.col.k * dtype_bytes(s.col.dtype);
  if (!mlp.gather_input) {
    // The input is whole on every rank, so each FuseRS step can run the whole MLP on its sequence
    // slice (up-projection, activation, down-projection) before sending the partial on: the
    // "additional operations ... incorporated to enhance compute-communication overlap" of Sec. 3.2
    // (commfuse-paper line 136). Table 1's figures need it: 43.8 ms of reduce-scatter hidden to
    // 0.1 ms, more than the down-projection alone (at most half of the 78.5 ms) could cover.
    collectives.push_back(s.reduce_scatter_bytes);
    pl.row_bytes = s.row.n * dtype_bytes(s.row.dtype);
    pl.tag = prefix + "mlp";
    const RankGemm col = s.col, row = s.row;
    const Bytes act_per_row = s.activation_bytes / std::max<std::int64_t>(1, s.col.m);
    UnitCompute whole = [&b, col, row, act_per_row](int rank, StreamId stream, std::int64_t rows, const std::string& name,
                                                    const std::vector<OpId>& deps) {
      GemmOptions up;
      up.name = name + ".fc1";
      up.deps = deps;
      b.add_gemm(rank, stream, GemmShape{rows, col.n, col.k, col.dtype}, up);
      b.add_memory(rank, stream, MemoryKernel{name + ".act", rows * act_per_row, {}, 0});
      GemmOptions down;
      down.name = name + ".fc2";
      return b.add_gemm(rank, stream, GemmShape{rows, row.n, row.k, row.dtype}, down);
    };
    const std::vector<OpId> end = pl.fuse_rs(whole, start);
    reason = step_reason(b, T, s.row, s.row.m, pl.row_bytes, pl.p, "FuseRS over the whole MLP per slice", &s.col);
    return end;
  }
  pl.tag = prefix + "fc1";
  const std::vector<OpId> ag = pl.fuse_ag(gemm_unit(b, s.col), start);
  collectives.push_back(s.all_gather_bytes);
  collectives.push_back(s.reduce_scatter_bytes);
  std::vector<OpId> act;
  for (int r = 0; r < T; ++r)
    act.push_back(b.add_memory(r, pl.streams.compute[static_cast<std::size_t>(r)],
                               MemoryKernel{prefix + "activation", s.activation_bytes, {ag[static_cast<std::size_t>(r)]}, 0}));
  pl.row_bytes = s.row.n * dtype_bytes(s.row.dtype);
  pl.tag = prefix + "fc2";
  const std::vector<OpId> end = pl.fuse_rs(gemm_unit(b, s.row), act);
  reason = step_reason(b, T, s.row, s.row.m, pl.row_bytes, pl.p, "FuseAG + FuseRS");
  return end;
}

std::vector<OpId> emit_attention(Pipeline& pl, const AttentionTpSp& att, const std::vector<OpId>& start,
                                 const std::string& prefix, std::vector<Bytes>& collectives, std::string& reason) {
  GraphBuilder& b = pl.b;
  const int T = pl.T;
  const AttentionShapes s = attention_shapes(att, T);
  check_m(pl.p, T, s.qkv.m);
  pl.rows = s.qkv.m;
  pl.row_bytes = s.qkv.k * dtype_bytes(s.qkv.dtype);
  pl.tag = prefix + "qkv";
  const std::vector<OpId> ag = att.gather_input ? pl.fuse_ag(gemm_unit(b, s.qkv), start) : plain_gemm(pl, s.qkv, start, prefix + "qkv");
  if (s.all_gather_bytes > 0) collectives.push_back(s.all_gather_bytes);
  collectives.push_back(s.reduce_scatter_bytes);
  pl.row_bytes = s.out.n * dtype_bytes(s.out.dtype);
  pl.tag = prefix + "attn_out";
  const std::int64_t total_rows = s.out.m;
  if (pl.p.query_split) {
    // Alg. 4: attention of one query slice (against all keys) + its output projection per step.
    // Attention FLOPs are taken proportional to the slice's rows (causal masking makes late slices
    // somewhat dearer; the split keeps the total exact).
    const RankGemm out = s.out;
    const double flops = s.attention_flops;
    const std::int64_t tiles = s.attention_tiles;
    const DType dt = att.dtype;
    UnitCompute qs = [&b, out, flops, tiles, total_rows, dt](int rank, StreamId stream, std::int64_t rows,
                                                             const std::string& name, const std::vector<OpId>& deps) {
      const double frac = static_cast<double>(rows) / static_cast<double>(total_rows);
      const std::int64_t t = std::max<std::int64_t>(1, (tiles * rows + total_rows - 1) / total_rows);
      const OpId a = b.add_flop_kernel(rank, stream, name + ".attn", flops * frac, t, dt, deps);
      GemmOptions o;
      o.name = name + ".proj";
      (void)a;  // the projection follows the attention in stream order
      return b.add_gemm(rank, stream, GemmShape{rows, out.n, out.k, out.dtype}, o);
    };
    const std::vector<OpId> end = pl.fuse_rs(qs, ag);
    reason = step_reason(b, T, s.out, total_rows, pl.row_bytes, pl.p, "query-split FuseRS");
    return end;
  }
  std::vector<OpId> attn;
  for (int r = 0; r < T; ++r)
    attn.push_back(add_core_attention(b, r, pl.streams.compute[static_cast<std::size_t>(r)], s, att.dtype,
                                      prefix + "attention", {ag[static_cast<std::size_t>(r)]}));
  const std::vector<OpId> end = pl.fuse_rs(gemm_unit(b, s.out), attn);
  reason = step_reason(b, T, s.out, total_rows, pl.row_bytes, pl.p, "row-parallel FuseRS");
  return end;
}

// gemm_collective: one GEMM with FuseRS (Alg. 3) or FuseAG (Sec. 4.2) in place of its collective.
std::vector<OpId> emit_gemm_collective(Pipeline& pl, const Workload& w, const std::vector<OpId>& start,
                                       std::vector<Bytes>& collectives, std::string& reason) {
  GraphBuilder& b = pl.b;
  const int T = pl.T;
  const GemmCollective gc = gemm_collective_shape(w);
  const RankGemm g{gc.m, gc.n, gc.k, gc.dtype};
  check_m(pl.p, T, gc.m);
  pl.rows = gc.m;
  if (gc.primitive == Primitive::reduce_scatter) {
    // Alg. 3: row-parallel projection, partial outputs of each sequence slice sent on.
    pl.row_bytes = gc.n * dtype_bytes(gc.dtype);
    pl.tag = "rowpar";
    collectives.push_back(gc.m * pl.row_bytes);
    reason = step_reason(b, T, g, gc.m, pl.row_bytes, pl.p, "FuseRS");
    return pl.fuse_rs(gemm_unit(b, g), start);
  }
  // Sec. 4.2: column-parallel projection over the gathered sequence, shard by shard.
  pl.row_bytes = gc.k * dtype_bytes(gc.dtype);
  pl.tag = "colpar";
  collectives.push_back(gc.m * pl.row_bytes);
  reason = step_reason(b, T, g, gc.m, pl.row_bytes, pl.p, "FuseAG");
  return pl.fuse_ag(gemm_unit(b, g), start);
}

// Ulysses attention (Sec. 4.4, Alg. 5): the first all-to-all (sequence -> heads) stays a collective;
// Alg. 5 fuses the second one with attention over query slices.
std::vector<OpId> emit_ulysses(Pipeline& pl, const AttentionUlysses& att, const std::vector<OpId>& start,
                               std::vector<Bytes>& collectives, std::string& reason) {
  GraphBuilder& b = pl.b;
  const int T = pl.T;
  const UlyssesShapes s = ulysses_shapes(att, T);
  CollectiveSpec a2a;
  a2a.name = "qkv_all_to_all";
  a2a.primitive = Primitive::all_to_all;
  a2a.bytes = s.qkv_all_to_all_bytes;
  a2a.streams = pl.streams.compute;
  if (!start.empty())
    for (int r = 0; r < T; ++r) a2a.deps.push_back({start[static_cast<std::size_t>(r)]});
  const std::vector<OpId> first = b.add_collective(a2a);
  // Rows: the whole sequence of every sample; one row carries d_model / T features of the rank's heads.
  const std::int64_t rows = att.batch * att.seq;
  check_m(pl.p, T, rows);
  pl.rows = rows;
  pl.row_bytes = att.d_model / T * dtype_bytes(att.dtype);
  pl.tag = "ulysses";
  const double flops = s.attention_flops;
  const std::int64_t tiles = s.attention_tiles;
  const DType dt = att.dtype;
  UnitCompute qs = [&b, flops, tiles, rows, dt](int rank, StreamId stream, std::int64_t r_rows,
                                                const std::string& name, const std::vector<OpId>& deps) {
    const double frac = static_cast<double>(r_rows) / static_cast<double>(rows);
    const std::int64_t t = std::max<std::int64_t>(1, (tiles * r_rows + rows - 1) / rows);
    return b.add_flop_kernel(rank, stream, name + ".attn", flops * frac, t, dt, deps);
  };
  collectives.push_back(s.qkv_all_to_all_bytes);
  collectives.push_back(s.out_all_to_all_bytes);
  reason = "Fuse All-to-All: each query slice's attention hides the previous slice's transfer";
  return pl.fuse_a2a(qs, first);
}

// One block of the forward (Block::whole: the whole workload), after `start`; returns its end ops.
std::vector<OpId> emit_block(Pipeline& pl, const Workload& w, Block block, const std::vector<OpId>& start,
                             const std::string& prefix, std::vector<Bytes>& collectives, std::string& reason) {
  if (const auto* t = std::get_if<Transformer>(&w.shape)) {
    if (block == Block::attention) return emit_attention(pl, transformer_attention(*t), start, prefix, collectives, reason);
    return emit_mlp(pl, transformer_mlp(*t), start, prefix, collectives, reason);
  }
  if (w.kind == WorkloadKind::gemm_collective) return emit_gemm_collective(pl, w, start, collectives, reason);
  if (w.kind == WorkloadKind::mlp_tpsp) return emit_mlp(pl, std::get<MlpTpSp>(w.shape), start, prefix, collectives, reason);
  if (w.kind == WorkloadKind::attention_tpsp) return emit_attention(pl, std::get<AttentionTpSp>(w.shape), start, prefix, collectives, reason);
  if (w.kind == WorkloadKind::attention_ulysses) return emit_ulysses(pl, std::get<AttentionUlysses>(w.shape), start, collectives, reason);
  throw InputError("", 0, "workload.kind", fmt::format("commfuse does not apply to '{}'", workload_kind_name(w.kind)));
}

// A training step's backward with CommFuse's algorithms in place of its collectives. The backward of
// TP + SP has the forward's two patterns with the roles swapped (Korthikanti et al. Sec. 4.2.2), and
// the paper names both passes (Sec. 1: TPSP "involves both RS and AG operations in the forward and
// backward passes"):
//   dY's all-gather -> row-parallel dgrad: FuseAG (Alg. 1; the column-parallel instantiation of
//     Sec. 4.2 with compute_partial_output = dgrad of the slice's rows): the local dY slice first,
//     then each slice as it arrives; the gathered dY is what wgrad reads afterwards.
//   the input's re-gather -> column-parallel wgrad dW = X^T dY: FuseAG along K (the tokens): each
//     arrived input slice's partial wgrad adds into dW (Alg. 1 with a sum for the concatenation of
//     line 23; GEMM beta = 1, no add kernel; one compute stream, so the partials follow one another).
//   column-parallel dgrad -> reduce-scatter: FuseRS (Alg. 2 / Alg. 3's row-parallel instantiation
//     with compute_partial_output = dgrad of a sequence slice): the slice that stays here last.
//   Ulysses (Sec. 4.4, Alg. 5): the backward runs the forward's all-to-alls in reverse. dO's all-to-all
//     (sequence -> heads) stays a collective, as the forward's first one does. Attention's backward
//     then runs over key/value slices (FlashAttention-2's backward order: Dao 2023, Algorithm 2, outer
//     loop over K/V blocks, dQ accumulated across them):
//     slice j's dK_j and dV_j are final after its step and go to rank j, the owner of sequence slice
//     j, while the next slice is computed (Alg. 5's schedule with compute_partial_output = the
//     backward of one K/V slice; the own slice last). dQ sums over every K/V slice, so it is final only
//     after the last step: its third of the all-to-all runs after it as a collective.
// An all-reduce (no SP) has no FuseAG / FuseRS form and runs as no_overlap runs it.
class CommFusePass final : public PassEmitter {
 public:
  CommFusePass(GraphBuilder& b, Pipeline& pl, const Workload& w, std::vector<Bytes>& collectives)
      : PassEmitter(b, pl.streams), pl_(pl), w_(w), collectives_(collectives) {}

  const std::string& forward_reason() const { return reason_; }

  PerRank forward(Block block, const PerRank& start, const std::string& prefix) override {
    std::string why;
    const PerRank end = emit_block(pl_, w_, block, start, prefix, collectives_, why);
    if (reason_.find(why) == std::string::npos) reason_ += (reason_.empty() ? "" : "; ") + why;
    return end;
  }

  PerRank gather_gemm(const GatherGemm& g, const PerRank& start) override {
    if (g.primitive != Primitive::all_gather) return PassEmitter::gather_gemm(g, start);
    const std::int64_t total = g.split_k ? g.gemm.k : g.gemm.m;
    check_m(pl_.p, pl_.T, total);
    pl_.rows = total;
    pl_.row_bytes = g.bytes / total;
    pl_.tag = g.name;
    collectives_.push_back(g.bytes);
    if (!g.split_k) return pl_.fuse_ag(gemm_unit(b_, g.gemm), start);
    const UnitCompute partial = gemm_unit_split_k(b_, g.gemm);
    return pl_.fuse_ag(partial, start);
  }

  PerRank gemm_scatter(const GemmScatter& g, const PerRank& start) override {
    if (g.primitive != Primitive::reduce_scatter) return PassEmitter::gemm_scatter(g, start);
    check_m(pl_.p, pl_.T, g.gemm.m);
    pl_.rows = g.gemm.m;
    pl_.row_bytes = g.bytes / g.gemm.m;
    pl_.tag = g.name;
    collectives_.push_back(g.bytes);
    return pl_.fuse_rs(gemm_unit(b_, g.gemm), start);
  }

  PerRank ulysses(const UlyssesPass& u, const PerRank& start) override {
    const PerRank d_out = collective(Primitive::all_to_all, u.in_bytes, start, u.name + ".all_to_all_out");
    // Rows: the whole sequence of every sample, as in the forward. The Ulysses shapes are multi-head
    // attention (sim/workload_shapes.cpp: Q, K and V each one third of the all-to-all), so dK and dV
    // are two thirds of dQKV and dQ the remaining third.
    const std::int64_t rows = step_tokens(w_);
    check_m(pl_.p, pl_.T, rows);
    const Bytes dq_bytes = u.out_bytes / 3;
    pl_.rows = rows;
    pl_.row_bytes = (u.out_bytes - dq_bytes) / rows;
    pl_.tag = u.name;
    GraphBuilder& b = b_;
    const double flops = u.flops;
    const std::int64_t tiles = u.tiles;
    const DType dt = u.dtype;
    UnitCompute kv = [&b, flops, tiles, rows, dt](int rank, StreamId stream, std::int64_t r_rows, const std::string& name,
                                                  const std::vector<OpId>& deps) {
      const double frac = static_cast<double>(r_rows) / static_cast<double>(rows);
      const std::int64_t t = std::max<std::int64_t>(1, (tiles * r_rows + rows - 1) / rows);
      return b.add_flop_kernel(rank, stream, name + ".attention_backward", flops * frac, t, dt, deps);
    };
    const PerRank dkv = pl_.fuse_a2a(kv, d_out);
    collectives_.push_back(u.in_bytes);
    collectives_.push_back(u.out_bytes);
    return collective(Primitive::all_to_all, dq_bytes, dkv, u.name + ".all_to_all_dq");
  }

 private:
  Pipeline& pl_;
  const Workload& w_;
  std::vector<Bytes>& collectives_;
  std::string reason_;
};

BuiltScheme build_commfuse(const BuildContext& ctx) {
  const CommFuseParams p = read_commfuse_params(ctx);
  const Workload& w = ctx.workload;
  validate_workload(w);
  GraphBuilder b(ctx);
  Pipeline pl{b, p, b.add_compute_and_comm_streams(), w.tp, 0, 0, "cf", {}, {}, {}, {}, {}};
  const int T = w.tp;
  std::string reason;
  std::vector<Bytes> collectives;  // S of every decomposed collective (each rank receives (T-1)/T of it)
  const std::string how = fmt::format("schedule {}, m = {}", commfuse_schedule_name(p.schedule), p.m);

  if (is_training_step(w)) {
    CommFusePass pass(b, pl, w, collectives);
    BuiltScheme built = build_training_step(ctx, pass, TrainingStepOptions{column_backward(ctx), ""});
    // The forward's reasons are known once its blocks are built.
    built.reason = fmt::format("forward {}; backward FuseAG, FuseRS{} ({}); {}", pass.forward_reason(),
                               w.kind == WorkloadKind::attention_ulysses ? ", Alg. 5 on dK / dV" : "", how, built.reason);
    // Every decomposed collective of the step crosses the same ports, one after another.
    built.bound_ps = decomposition_bound_ps(ctx.hardware, T, collectives, true);
    return built;
  }
  if (w.kind == WorkloadKind::transformer) {
    const Transformer& t = std::get<Transformer>(w.shape);
    std::string attention_reason, mlp_reason;
    compose_layers(
        t.layers,
        [&](const std::vector<OpId>& start, const std::string& prefix) {
          return emit_block(pl, w, Block::attention, start, prefix, collectives, attention_reason);
        },
        [&](const std::vector<OpId>& start, const std::string& prefix) {
          return emit_block(pl, w, Block::mlp, start, prefix, collectives, mlp_reason);
        });
    reason = fmt::format("{} layers; attention {}; MLP {}", t.layers, attention_reason, mlp_reason);
  } else {
    emit_block(pl, w, Block::whole, {}, "", collectives, reason);
  }
  const Ps bound = decomposition_bound_ps(ctx.hardware, T, collectives, w.kind == WorkloadKind::transformer);
  return b.finish(fmt::format("{} ({})", reason, how), bound);
}

bool commfuse_applies(const Workload& w) {
  if (w.tp < 2) return false;
  if (w.kind == WorkloadKind::gemm_collective) {
    const auto* gc = std::get_if<GemmCollective>(&w.shape);
    return gc && (gc->primitive == Primitive::reduce_scatter || gc->primitive == Primitive::all_gather);
  }
  return is_tpsp_block(w.kind) || w.kind == WorkloadKind::attention_ulysses;
}

}  // namespace

SchemeInfo make_commfuse_scheme() {
  return {.name = "commfuse",
          .source = "commfuse-paper Sec. 3-4, Alg. 1-5, Appendix A",
          .summary = "reduce-scatter / all-gather / Ulysses all-to-all decomposed into P2P steps; rank-adaptive slice "
                     "order so the last step needs no communication",
          .params = {kM, kSchedule, kAttention, kCommFuseTransport, kChannels, column_backward_param()},
          .backward = "FuseAG (Alg. 1, Sec. 4.2) on dY's all-gather -> dgrad and on the input's re-gather -> wgrad "
                      "along K (partial wgrads accumulating); FuseRS (Alg. 2-3) on dgrad -> reduce-scatter; Ulysses: "
                      "Alg. 5 sends each K/V slice's dK, dV as attention's backward makes them, dQ after",
          .applies = commfuse_applies,
          .build = build_commfuse};
}

}  // namespace overlap::sim
