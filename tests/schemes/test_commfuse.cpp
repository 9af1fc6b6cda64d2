// CommFuse (commfuse-paper Alg. 1-5, App. A): step orders, byte accounting for every schedule and m,
// and FuseRS's latency on an idealised node: max(T*c, c + (T-1)*p) (Sec. 3.2: fully hidden when the
// per-step transfer p is below the per-step compute c, "maximum possible reduction" otherwise).
#include <catch2/catch.hpp>

#include "ideal_profile.hpp"
#include "tests/support/scheme_fixtures.hpp"

#include <algorithm>
#include <set>

#include "cost_model/gemm_model.hpp"
#include "cost_model/input_error.hpp"
#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "sim/node_builder.hpp"
#include "sim/schemes/commfuse_schedule.hpp"
#include "sim/schemes/scheme.hpp"

using namespace overlap;
using namespace overlap::sim;
using namespace overlap::sim::test;

namespace {

const OpRecord& record_named(const TaskGraph& g, const Timeline& tl, const std::string& name, int rank) {
  for (OpId i = 0; i < static_cast<OpId>(g.ops().size()); ++i)
    if (g.op(i).name == name && g.rank_of(i) == rank) return tl.ops[static_cast<std::size_t>(i)];
  FAIL("no op " << name << " on rank " << rank);
  return tl.ops.front();
}

}  // namespace

TEST_CASE("pairwise schedule is App. A.3's round-robin tournament", "[commfuse][schedule]") {
  // A<->B, C<->D; A<->C, B<->D; A<->D, B<->C.
  CHECK(round_robin_partner(0, 0, 4) == 1);
  CHECK(round_robin_partner(2, 0, 4) == 3);
  CHECK(round_robin_partner(0, 1, 4) == 2);
  CHECK(round_robin_partner(1, 1, 4) == 3);
  CHECK(round_robin_partner(0, 2, 4) == 3);
  CHECK(round_robin_partner(1, 2, 4) == 2);
  for (int T = 2; T <= 9; ++T) {
    std::vector<std::set<int>> met(static_cast<std::size_t>(T));
    for (int round = 0; round < round_robin_rounds(T); ++round)
      for (int r = 0; r < T; ++r) {
        const int p = round_robin_partner(r, round, T);
        if (p < 0) continue;
        CHECK(p != r);
        CHECK(round_robin_partner(p, round, T) == r);  // a matching in every round
        met[static_cast<std::size_t>(r)].insert(p);
      }
    for (int r = 0; r < T; ++r) CHECK(static_cast<int>(met[static_cast<std::size_t>(r)].size()) == T - 1);
  }
}

TEST_CASE("rank-adaptive orders: own slice last (RS) / first (AG), exchanges matched", "[commfuse][schedule]") {
  for (auto sched : {CommFuseSchedule::ring, CommFuseSchedule::pairwise, CommFuseSchedule::circular}) {
    for (int T = 2; T <= 7; ++T) {
      std::vector<std::vector<FuseStep>> rs, ag;
      for (int r = 0; r < T; ++r) {
        rs.push_back(fuse_rs_order(r, T, sched));
        ag.push_back(fuse_ag_order(r, T, sched));
        REQUIRE(static_cast<int>(rs.back().size()) == T);
        CHECK(rs.back().back().slice == r);
        CHECK(rs.back().back().send_to == -1);  // the last step needs no communication
        CHECK(ag.back().front().slice == r);
        CHECK(ag.back().front().recv_from == -1);
        std::set<int> slices;
        for (const auto& s : rs.back()) slices.insert(s.slice);
        CHECK(static_cast<int>(slices.size()) == T);
      }
      // Every send r -> p in round k has p's receive from r in round k.
      for (int r = 0; r < T; ++r)
        for (const FuseStep& s : rs[static_cast<std::size_t>(r)]) {
          if (s.send_to < 0) continue;
          const auto& peer = rs[static_cast<std::size_t>(s.send_to)];
          CHECK(std::any_of(peer.begin(), peer.end(),
                            [&](const FuseStep& q) { return q.round == s.round && q.recv_from == r; }));
        }
      // Ring RS: what arrives is the accumulator of the slice computed next (Alg. 2 line 16).
      if (sched == CommFuseSchedule::ring)
        for (int r = 0; r < T; ++r)
          for (int i = 0; i + 1 < T; ++i) {
            const int sender = rs[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)].recv_from;
            CHECK(rs[static_cast<std::size_t>(sender)][static_cast<std::size_t>(i)].slice ==
                  rs[static_cast<std::size_t>(r)][static_cast<std::size_t>(i + 1)].slice);
          }
    }
  }
}

TEST_CASE("commfuse byte accounting holds for every schedule and m", "[commfuse][bytes]") {
  const SchemeInfo* s = find_scheme("commfuse");
  REQUIRE(s);
  const HardwareProfile hw = ideal_profile(4, 1000);
  for (int T : {2, 3, 4}) {
    for (Primitive prim : {Primitive::reduce_scatter, Primitive::all_gather}) {
      const Workload w = gemm_workload(T, prim, 768 * T, 512, 256);
      for (const char* sched : {"ring", "pairwise", "circular"}) {
        for (int m : {1, 2, 3}) {
         for (const char* transport : {"nccl", "copy_engine"}) {
          const nlohmann::json params = {{"schedule", sched}, {"m", m}, {"transport", transport}};
          BuildContext ctx{w, hw, params, Fidelity::curve};
          INFO("T=" << T << " " << primitive_name(prim) << " " << sched << " m=" << m << " " << transport);
          const BuiltScheme built = s->build(ctx);
          // Closed forms: ring RS sends all slices but its own to the next rank; direct schedules
          // send each peer its slice.
          const Bytes slice = 768 * (prim == Primitive::reduce_scatter ? 512 : 256) * 2;
          const Bytes expect_next = std::string(sched) == "ring" ? (T - 1) * slice : slice;
          CHECK(built.required_bytes[0][static_cast<std::size_t>(1 % T)] == expect_next);
          CHECK_NOTHROW(evaluate(*s, ctx));  // throws InternalError when timeline bytes differ
         }
        }
      }
    }
  }
}

TEST_CASE("commfuse byte closed forms with unequal slices", "[commfuse][bytes]") {
  // Slices of 1, 10, 100 and 1000 bytes (sum 1111), so every entry says which slice it carries.
  const std::vector<Bytes> slices{1, 10, 100, 1000};
  using M = std::vector<std::vector<Bytes>>;
  // Ring r -> r+1: FuseRS all slices but the sender's, FuseAG all but the receiver's.
  CHECK(fuse_rs_required_bytes(slices, CommFuseSchedule::ring) ==
        M{{0, 1110, 0, 0}, {0, 0, 1101, 0}, {0, 0, 0, 1011}, {111, 0, 0, 0}});
  CHECK(fuse_ag_required_bytes(slices, CommFuseSchedule::ring) ==
        M{{0, 1101, 0, 0}, {0, 0, 1011, 0}, {0, 0, 0, 111}, {1110, 0, 0, 0}});
  // Direct r -> p: FuseRS carries the receiver's slice, FuseAG the sender's shard.
  for (CommFuseSchedule sched : {CommFuseSchedule::pairwise, CommFuseSchedule::circular}) {
    INFO(commfuse_schedule_name(sched));
    CHECK(fuse_rs_required_bytes(slices, sched) ==
          M{{0, 10, 100, 1000}, {1, 0, 100, 1000}, {1, 10, 0, 1000}, {1, 10, 100, 0}});
    CHECK(fuse_ag_required_bytes(slices, sched) ==
          M{{0, 1, 1, 1}, {10, 0, 10, 10}, {100, 100, 0, 100}, {1000, 1000, 1000, 0}});
  }
  CHECK(fuse_rs_required_bytes({7}, CommFuseSchedule::ring) == M{{0}});  // one rank sends nothing
  CHECK(fuse_ag_required_bytes({7}, CommFuseSchedule::pairwise) == M{{0}});
}

TEST_CASE("FuseRS latency = max(T*c, c + (T-1)*p) on an idealised node", "[commfuse][closed_form][transport]") {
  const SchemeInfo* s = find_scheme("commfuse");
  REQUIRE(s);
  const int T = 4;
  // Per rank: 4096 x 1024 x 1024; a slice is 1024 rows = 64 tiles (one wave beside the 8 P2P SMs,
  // or on all 132 with copy-engine pulls), so c = 1 us; a slice's partial is 1024 x 1024 x 2 B = 2 MiB.
  const Workload w = gemm_workload(T, Primitive::reduce_scatter, 4096, 1024, 1024);
  const Bytes slice_bytes = 1024 * 1024 * 2;
  for (const char* transport : {"nccl", "copy_engine"}) {
    for (double gbps : {1000.0, 4000.0}) {  // p = 2.10 us > c, and p = 0.52 us < c
      for (const char* sched : {"ring", "circular"}) {
        const HardwareProfile hw = ideal_profile(T, gbps);
        const nlohmann::json params = {{"schedule", sched}, {"transport", transport}};
        BuildContext ctx{w, hw, params, Fidelity::steps};
        const BuiltScheme built = s->build(ctx);
        INFO(transport << " " << sched << " at " << gbps << " GB/s");
        if (std::string(transport) == "copy_engine") {
          // The receiver pulls once the sender's partial exists, and nothing holds SMs for it.
          int copies = 0;
          for (OpId i = 0; i < static_cast<OpId>(built.graph.ops().size()); ++i) {
            const Op& op = built.graph.op(i);
            CHECK(op.kind != OpKind::comm_kernel);
            if (op.kind != OpKind::copy) continue;
            ++copies;
            CHECK(op.dst_gpu == built.graph.rank_of(i));
            CHECK(std::any_of(op.deps.begin(), op.deps.end(), [&](OpId d) { return built.graph.rank_of(d) == op.src_gpu; }));
          }
          CHECK(copies == T * (T - 1));
        }
        const Timeline tl = run(built.graph, make_node(hw, T));
        const Ps c = plan_gemm(hw, overlap::GemmShape{1024, 1024, 1024, DType::bf16}).cta_ps;
        REQUIRE(c == kPsPerUs);
        const Ps p = transfer_ps(slice_bytes, gbps);
        // The one elementwise add of the own slice at the end (ring: B_in + O; direct: sum of the T
        // buffers) and, in the ring, one add before each forward (Alg. 2 line 16): picoseconds here.
        const OpRecord& red = record_named(built.graph, tl, "rowpar.rs.slice0.0.reduce", 0);
        const Ps a_end = red.end_ps - red.start_ps;
        Ps a_fwd = 0;
        if (std::string(sched) == "ring") {
          const OpRecord& add = record_named(built.graph, tl, "rowpar.rs.slice2.0.add", 0);
          a_fwd = add.end_ps - add.start_ps;
        }
        CHECK(a_end < 100);
        CHECK(a_fwd < 100);
        const Ps expected = std::max<Ps>(T * c, c + (T - 1) * p + (T - 2) * a_fwd) + a_end;
        INFO("c=" << c << " p=" << p);
        CHECK(std::llabs(tl.makespan_ps - expected) <= 2 * T);  // rounding of max-min rates
      }
    }
  }
}

TEST_CASE("commfuse applies and validates its params", "[commfuse][params]") {
  const SchemeInfo* s = find_scheme("commfuse");
  REQUIRE(s);
  CHECK(s->applies(gemm_workload(4, Primitive::reduce_scatter, 4096, 1024, 1024)));
  CHECK(s->applies(gemm_workload(4, Primitive::all_gather, 4096, 1024, 1024)));
  CHECK_FALSE(s->applies(gemm_workload(4, Primitive::all_reduce, 4096, 1024, 1024)));
  CHECK_FALSE(s->applies(gemm_workload(1, Primitive::reduce_scatter, 4096, 1024, 1024)));
  Workload dec;
  dec.kind = WorkloadKind::decode_stack;
  dec.tp = 4;
  dec.shape = DecodeStack{};
  CHECK_FALSE(s->applies(dec));
  const HardwareProfile hw = ideal_profile(4, 1000);
  const Workload w = gemm_workload(4, Primitive::reduce_scatter, 4096, 1024, 1024);
  auto key_of = [&](const nlohmann::json& params) { return refused_key(*s, w, hw, params); };
  CHECK(key_of({{"m", 0}}) == "params.m");
  CHECK(key_of({{"m", 2000}}) == "params.m");  // 1024 rows per rank cannot make 2000 slices
  CHECK(key_of({{"schedule", "tree"}}) == "params.schedule");
  CHECK(key_of({{"channels", 0}}) == "params.channels");
  CHECK(key_of({{"transport", "sm"}}) == "params.transport");
  CHECK(key_of({{"m", 2}, {"schedule", "pairwise"}}) == "none");
}

TEST_CASE("commfuse layers: MLP, attention (query-split / row-parallel), Ulysses", "[commfuse][bytes]") {
  const SchemeInfo* s = find_scheme("commfuse");
  REQUIRE(s);
  const HardwareProfile hw = ideal_profile(4, 1000);
  Workload mlp = mlp_tpsp_workload(4, 2048, 1024, 2048);
  Workload att;
  att.kind = WorkloadKind::attention_tpsp;
  att.tp = 4;
  att.shape = AttentionTpSp{2, 1024, 1024, 8, 8, true, DType::bf16};
  Workload uly;
  uly.kind = WorkloadKind::attention_ulysses;
  uly.tp = 4;
  uly.shape = AttentionUlysses{2, 1024, 1024, 8, true, DType::bf16};
  for (const Workload& w : {mlp, att, uly}) {
    REQUIRE(s->applies(w));
    for (const char* sched : {"ring", "pairwise", "circular"})
      for (const char* attention : {"query_split", "row_parallel"}) {
        const nlohmann::json params = {{"schedule", sched}, {"m", 2}, {"attention", attention}};
        BuildContext ctx{w, hw, params, Fidelity::curve};
        INFO(workload_kind_name(w.kind) << " " << sched << " " << attention);
        SchemeResult r;
        REQUIRE_NOTHROW(r = evaluate(*s, ctx));
        CHECK(r.latency_ps >= r.compute_only_ps);
      }
  }
}
