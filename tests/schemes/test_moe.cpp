// The moe workload and its schemes (sim/schemes/moe.hpp) on the idealised node of ideal_profile.hpp,
// where GEMM tiles, all-to-alls and HBM have closed forms: the all-to-allv reduces to the even
// all-to-all, bytes are conserved per rank pair, a balanced chunked pipeline takes its closed form,
// and under skew the slowest rank sets the latency.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <numeric>

#include "cost_model/all_to_allv.hpp"
#include "cost_model/gemm_model.hpp"
#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "sim/node_builder.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/schemes/moe.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/workload_shapes.hpp"
#include "tests/schemes/ideal_profile.hpp"
#include "tests/support/moe_fixtures.hpp"

using namespace overlap;
using namespace overlap::sim;
using test::moe_workload;

namespace {

// Rounding of the memory kernels (SwiGLU) on the ideal profile's near-infinite HBM: at most this
// much per kernel on a path beyond bytes / bandwidth.
constexpr Ps kMemorySlackPs = 4;

// One rank's experts alone: grouped gate+up GEMM, the activation's bytes at HBM speed (rounded
// down; kMemorySlackPs covers the rest), then the grouped down GEMM on all SMs.
Ps experts_ps(const HardwareProfile& hw, const MoeShapes& sh, int r) {
  const double hbm_bytes_per_ps = hw.gpu.hbm_bandwidth_gbps * hw.gpu.hbm_efficiency * 1e-3;
  const Ps act =
      static_cast<Ps>(static_cast<double>(sh.activation_bytes[static_cast<std::size_t>(r)]) / hbm_bytes_per_ps);
  return plan_grouped_gemm(hw, sh.up[static_cast<std::size_t>(r)]).time_ps(hw.gpu.sm_count) + act +
         plan_grouped_gemm(hw, sh.down[static_cast<std::size_t>(r)]).time_ps(hw.gpu.sm_count);
}

}  // namespace

TEST_CASE("moe: a uniform all-to-allv is the even all-to-all exactly (ops, latency, bytes)", "[moe]") {
  const Workload w = moe_workload(4, 4, 1, 1024, 1024, 512);
  for (const Fidelity f : {Fidelity::curve, Fidelity::steps}) {
    for (const HardwareProfile& hw :
         {test::ideal_profile(4), [] {
            HardwareProfile h = test::ideal_profile(4);
            h.comm.tuner.at(NcclAlgorithm::Ring, NcclProtocol::Simple) = NcclLatency{7, {1, 2, 3}};  // latencies too
            return h;
          }()}) {
      const nlohmann::json none = nlohmann::json::object();
      const BuildContext ctx{w, hw, none, f};
      const Bytes S = 8 << 20;  // each rank's send buffer
      GraphBuilder even(ctx, 4), uneven(ctx, 4);
      CollectiveSpec c;
      c.name = "a2a";
      c.primitive = Primitive::all_to_all;
      c.bytes = S;
      c.streams = even.add_streams("comm", 1);
      even.add_collective(c);
      AllToAllvSpec v;
      v.name = "a2a";
      v.bytes.assign(4, std::vector<Bytes>(4, S / 4));
      v.streams = uneven.add_streams("comm", 1);
      uneven.add_all_to_allv(v);
      const BuiltScheme a = even.finish(""), b = uneven.finish("");
      REQUIRE(a.graph.ops().size() == b.graph.ops().size());
      for (std::size_t i = 0; i < a.graph.ops().size(); ++i) {
        const Op& x = a.graph.ops()[i];
        const Op& y = b.graph.ops()[i];
        CHECK(x.duration_ps == y.duration_ps);
        CHECK(x.channels == y.channels);
        CHECK(x.curve_latency_ps == y.curve_latency_ps);
        CHECK(x.host_ps == y.host_ps);
        CHECK(x.bytes == y.bytes);
        REQUIRE(x.curve_sends.size() == y.curve_sends.size());
        for (std::size_t j = 0; j < x.curve_sends.size(); ++j) {
          CHECK(x.curve_sends[j].peer == y.curve_sends[j].peer);
          CHECK(x.curve_sends[j].bytes == y.curve_sends[j].bytes);
        }
        REQUIRE(x.phases.size() == y.phases.size());
        for (std::size_t j = 0; j < x.phases.size(); ++j) {
          CHECK(x.phases[j].latency_ps == y.phases[j].latency_ps);
          CHECK(x.phases[j].sends.size() == y.phases[j].sends.size());
        }
      }
      CHECK(a.required_bytes == b.required_bytes);
      const NodeConfig node = make_node(hw, 4);
      CHECK(run(a.graph, node).makespan_ps == run(b.graph, node).makespan_ps);
    }
  }
}

TEST_CASE("moe: bytes are conserved per rank pair in every scheme", "[moe]") {
  const HardwareProfile hw = test::ideal_profile(4);
  const Workload w = moe_workload(4, 8, 2, 1000, 512, 256, test::zipf_routing(1.2));
  const Moe& m = std::get<Moe>(w.shape);
  const MoeRouting routing = moe_routing(m);
  const CountMatrix dispatch = dispatch_bytes(routing, 512 * 2);
  std::vector<std::vector<Bytes>> expected(4, std::vector<Bytes>(4, 0));
  Bytes off_diagonal = 0;
  for (int s = 0; s < 4; ++s)
    for (int d = 0; d < 4; ++d)
      if (s != d) {
        // dispatch s -> d, and the combine d -> s returns the same rows.
        expected[s][d] += dispatch[s][d] + dispatch[d][s];
        off_diagonal += dispatch[s][d];
      }
  REQUIRE(off_diagonal > 0);
  for (const auto& [scheme, params] :
       std::vector<std::pair<std::string, nlohmann::json>>{{"no_overlap", nlohmann::json::object()},
                                                           {"moe_pipeline", {{"chunks", 3}}},
                                                           {"moe_flashoverlap", {{"group_waves", 1}}},
                                                           {"moe_flashoverlap", {{"group_waves", 0}}},
                                                           {"moe_tile_fused", nlohmann::json::object()},
                                                           {"moe_tile_fused", {{"dispatch_pieces", 1}}}}) {
    INFO(scheme << " " << params.dump());
    test::check_pair_bytes(scheme, w, hw, params, expected);
  }
}

TEST_CASE("moe: a balanced chunked pipeline takes router + a + C g + a, no overlap router + 2A + G", "[moe]") {
  // Fast links make a chunk's all-to-all (a) short beside its experts (g >= 2a): the comm stream
  // (d0, d1, k0, d2, k1, ...) then keeps ahead of the experts, which run back to back after d0, and
  // the last combine follows the last chunk's experts (moe_pipeline.cpp).
  const HardwareProfile hw = test::ideal_profile(4, 5000);
  const int C = 4;
  const std::int64_t T = 4096;  // top 1 of 4 experts, one per rank: every pair T/4, every expert T rows
  const Workload w = moe_workload(4, 4, 1, T, 1024, 512);
  const Moe& m = std::get<Moe>(w.shape);
  const MoeRouting routing = moe_routing(m);
  const MoeShapes full = moe_shapes(m, routing.tokens);
  const MoeShapes chunk = moe_shapes(m, moe_chunk_tokens(routing.tokens, C, 0));
  for (int c = 1; c < C; ++c) REQUIRE(moe_shapes(m, moe_chunk_tokens(routing.tokens, C, c)).dispatch == chunk.dispatch);
  const Ps router = gemm_time_ps(hw, moe_router_gemm(m));
  const Ps a = all_to_allv_cost(hw, chunk.dispatch, "nvlink").time_ps;
  const Ps g = experts_ps(hw, chunk, 0);
  REQUIRE(a > 0);
  REQUIRE(g >= 2 * a);
  const Ps pipelined = test::moe_scheme_latency("moe_pipeline", w, hw, {{"chunks", C}});
  const Ps closed = router + a + C * g + a;
  CHECK(pipelined >= closed);
  CHECK(pipelined <= closed + C * kMemorySlackPs);

  const Ps A = all_to_allv_cost(hw, full.dispatch, "nvlink").time_ps;
  const Ps G = experts_ps(hw, full, 0);
  const Ps plain = test::moe_scheme_latency("no_overlap", w, hw);
  CHECK(plain >= router + 2 * A + G);
  CHECK(plain <= router + 2 * A + G + kMemorySlackPs);
  // The same chunks one after another (router, then dispatch, experts and combine of each chunk).
  CHECK(pipelined < router + C * (2 * a + g));
}

TEST_CASE("moe: under skewed routing the slowest rank sets the latency", "[moe]") {
  const HardwareProfile hw = test::ideal_profile(4);
  const Workload w = moe_workload(4, 8, 2, 2048, 1024, 512, test::zipf_routing(1.5, 3));
  const Moe& m = std::get<Moe>(w.shape);
  const MoeRouting routing = moe_routing(m);
  const MoeShapes sh = moe_shapes(m, routing.tokens);
  Ps slowest = 0, fastest = -1;
  for (int r = 0; r < 4; ++r) {
    const Ps g = experts_ps(hw, sh, r);
    slowest = std::max(slowest, g);
    fastest = fastest < 0 ? g : std::min(fastest, g);
  }
  REQUIRE(slowest > fastest + fastest / 2);  // the skew is real
  // Every rank waits for the dispatch (its slowest rank's time), runs its own experts, and the
  // combine starts when the slowest rank's experts are done.
  const Ps router = gemm_time_ps(hw, moe_router_gemm(m));
  const Ps closed = router + all_to_allv_cost(hw, sh.dispatch, "nvlink").time_ps + slowest +
                    all_to_allv_cost(hw, sh.combine, "nvlink").time_ps;
  const Ps plain = test::moe_scheme_latency("no_overlap", w, hw);
  CHECK(plain >= closed);
  CHECK(plain <= closed + kMemorySlackPs);
  // The all-to-allv is the maximum over ranks, not the mean.
  const AllToAllvCost d = all_to_allv_cost(hw, sh.dispatch, "nvlink");
  CHECK(d.time_ps == *std::max_element(d.rank_time_ps.begin(), d.rank_time_ps.end()));
}

TEST_CASE("moe: a fixed seed gives the same routing, graph and latency", "[moe]") {
  const HardwareProfile hw = test::ideal_profile(4);
  const Workload w1 = moe_workload(4, 16, 4, 1024, 512, 256, test::zipf_routing(1.0, 42));
  const Workload w2 = moe_workload(4, 16, 4, 1024, 512, 256, test::zipf_routing(1.0, 42));
  const Workload w3 = moe_workload(4, 16, 4, 1024, 512, 256, test::zipf_routing(1.0, 43));
  CHECK(moe_routing(std::get<Moe>(w1.shape)).tokens == moe_routing(std::get<Moe>(w2.shape)).tokens);
  CHECK(moe_routing(std::get<Moe>(w1.shape)).tokens != moe_routing(std::get<Moe>(w3.shape)).tokens);
  for (const std::string scheme : {"no_overlap", "moe_pipeline", "moe_flashoverlap", "moe_tile_fused"}) {
    INFO(scheme);
    const BuiltScheme a = test::build_moe_scheme(scheme, w1, hw), b = test::build_moe_scheme(scheme, w2, hw);
    CHECK(a.required_bytes == b.required_bytes);
    CHECK(a.graph.ops().size() == b.graph.ops().size());
    CHECK(test::moe_scheme_latency(scheme, w1, hw) == test::moe_scheme_latency(scheme, w2, hw));
  }
}

TEST_CASE("moe: only the moe schemes apply to moe, and they apply to nothing else", "[moe]") {
  const Workload w = moe_workload(4, 8, 2, 1024, 512, 256);
  for (const SchemeInfo& s : scheme_registry()) {
    INFO(s.name);
    const bool for_moe = s.name == "no_overlap" || s.name == "moe_pipeline" || s.name == "moe_flashoverlap" ||
                         s.name == "moe_tile_fused";
    CHECK(s.applies(w) == for_moe);
  }
  CHECK_FALSE(find_scheme("moe_pipeline")->applies(test::gemm_workload(4, Primitive::all_to_all, 1024, 1024, 1024)));
}

TEST_CASE("moe: moe_flashoverlap with one group of every wave is no_overlap", "[moe]") {
  // One group: the wait ends with the down projection's last tile and the whole combine follows, as
  // in no_overlap; the shared experts run after the combine in both.
  const HardwareProfile hw = test::ideal_profile(4);
  Workload w = moe_workload(4, 8, 2, 2048, 1024, 512, test::zipf_routing(1.0, 9));
  std::get<Moe>(w.shape).shared_experts = 1;
  CHECK(test::moe_scheme_latency("moe_flashoverlap", w, hw, {{"group_waves", 1 << 20}}) == test::moe_scheme_latency("no_overlap", w, hw));
  // Finer groups send the same bytes in more calls.
  const BuiltScheme one = test::build_moe_scheme("moe_flashoverlap", w, hw, {{"group_waves", 1 << 20}});
  const BuiltScheme fine = test::build_moe_scheme("moe_flashoverlap", w, hw, {{"group_waves", 1}});
  CHECK(one.collectives.size() == 2);
  CHECK(fine.collectives.size() > 2);
  CHECK(one.required_bytes == fine.required_bytes);
}

// Expert tensor parallelism (Moe::expert_tp; docs/guide/moe.md "Expert tensor parallelism").
namespace {

// FLOPs of one EP rank's expert GEMMs (gate+up and down) in `sh`.
double expert_flops(const MoeShapes& sh, int e) {
  double f = 0;
  for (const auto* gemms : {&sh.up[static_cast<std::size_t>(e)], &sh.down[static_cast<std::size_t>(e)]})
    for (const RankGemm& g : *gemms) f += 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
  return f;
}

}  // namespace

TEST_CASE("moe expert_tp: uniform no_overlap takes router + A + AG + G/2-wide experts + RS + A", "[moe]") {
  // EP 2 x ETP 2 on 4 GPUs, top 1 of 4 experts: every EP rank sends T/4 slots to every expert, so EP
  // rank e receives 2 x 2 x T/4 = T rows and its ETP pair gathers 2T.
  const HardwareProfile hw = test::ideal_profile(4);
  const std::int64_t T = 4096, d = 1024, f = 512;
  const Workload w1 = moe_workload(2, 4, 1, T, d, f);
  const Workload w2 = test::with_expert_tp(w1, 2);
  REQUIRE(w2.tp == 4);
  const Moe& m = std::get<Moe>(w2.shape);
  const MoeRouting routing = moe_routing(m);
  const MoeShapes ep = moe_shapes(m, routing.tokens);
  const MoeShapes split = moe_etp_shapes(m, routing.tokens);
  for (int e = 0; e < 2; ++e) {
    REQUIRE(routing.received(e) == T);
    for (std::size_t le = 0; le < 2; ++le) {
      CHECK(split.up[static_cast<std::size_t>(e)][le].m == T);  // 2 members x T/2 rows of this expert
      CHECK(split.up[static_cast<std::size_t>(e)][le].n == 2 * f / 2);
      CHECK(split.down[static_cast<std::size_t>(e)][le].k == f / 2);
    }
    // The gather's S: the pair's 2T rows x d_model in bf16.
    CHECK(moe_etp_gathered_bytes(m, ep, e) == 2 * T * d * 2);
  }
  // Per rank, the same tokens per GPU give the same expert FLOPs as expert_tp 1 (twice the rows, half
  // the FFN), and the same tokens per EP rank split over the pair (T/2 each) give half.
  const Moe& m1 = std::get<Moe>(w1.shape);
  const double whole = expert_flops(moe_shapes(m1, moe_routing(m1).tokens), 0);
  CHECK(expert_flops(split, 0) == whole);
  Workload half = moe_workload(2, 4, 1, T / 2, d, f);
  half = test::with_expert_tp(half, 2);
  const Moe& mh = std::get<Moe>(half.shape);
  CHECK(expert_flops(moe_etp_shapes(mh, moe_routing(mh).tokens), 0) == whole / 2);

  // The graph: router, dispatch (two EP groups at once), ETP all-gather, the split experts, ETP
  // reduce-scatter, combine.
  const nlohmann::json none = nlohmann::json::object();
  const BuildContext ctx{w2, hw, none, Fidelity::curve};
  GraphBuilder probe(ctx, 4);
  const std::string link = collective_link_class(hw, 2);
  const Ps router = gemm_time_ps(hw, moe_router_gemm(m));
  const Ps A = all_to_allv_cost(hw, ep.dispatch, link).time_ps;
  const Ps AG = probe.collective_ps(Primitive::all_gather, 2 * T * d * 2, 2);
  const Ps RS = probe.collective_ps(Primitive::reduce_scatter, 2 * T * d * 2, 2);
  const Ps G = experts_ps(hw, split, 0);
  REQUIRE(A > 0);
  REQUIRE(AG > 0);
  const Ps plain = test::moe_scheme_latency("no_overlap", w2, hw);
  const Ps closed = router + A + AG + G + RS + A;
  CHECK(plain >= closed);
  CHECK(plain <= closed + kMemorySlackPs);
  // One all-gather and one reduce-scatter of 2T x d_model per ETP pair, in the call list.
  const BuiltScheme b = test::build_moe_scheme("no_overlap", w2, hw);
  int gathers = 0, scatters = 0;
  for (const CollectiveCall& c : b.collectives) {
    if (c.primitive == Primitive::all_gather) ++gathers;
    if (c.primitive == Primitive::reduce_scatter) ++scatters;
    if (c.primitive == Primitive::all_gather || c.primitive == Primitive::reduce_scatter) {
      CHECK(c.bytes == 2 * T * d * 2);
      CHECK(c.ranks == 2);
    }
  }
  CHECK(gathers == 2);
  CHECK(scatters == 2);
}

TEST_CASE("moe expert_tp: bytes are conserved per rank pair (EP all-to-allvs and ETP collectives)", "[moe]") {
  const HardwareProfile hw = test::ideal_profile(8);
  const Workload w = test::with_expert_tp(moe_workload(4, 8, 2, 1000, 512, 256, test::zipf_routing(1.2)), 2);
  const Moe& m = std::get<Moe>(w.shape);
  const MoeRouting routing = moe_routing(m);
  const CountMatrix dispatch = dispatch_bytes(routing, 512 * 2);
  const MoeShapes ep = moe_shapes(m, routing.tokens);
  // Graph rank g = e x 2 + j: EP traffic between ranks of the same j, ETP traffic inside a pair.
  std::vector<std::vector<Bytes>> expected(8, std::vector<Bytes>(8, 0));
  for (int g = 0; g < 8; ++g)
    for (int h = 0; h < 8; ++h) {
      const int s = g / 2, d = h / 2;
      if (g % 2 == h % 2 && s != d) expected[g][h] += dispatch[s][d] + dispatch[d][s];
      // A two-member all-gather and reduce-scatter of S each send S / 2 to the other member.
      if (s == d && g != h) expected[g][h] += moe_etp_gathered_bytes(m, ep, s);
    }
  for (const auto& [scheme, params] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"no_overlap", nlohmann::json::object()}, {"moe_pipeline", {{"chunks", 3}}}}) {
    INFO(scheme << " " << params.dump());
    test::check_pair_bytes(scheme, w, hw, params, expected);
  }
}

TEST_CASE("moe expert_tp: pipelining overlaps the ETP collectives too; every moe scheme runs it", "[moe]") {
  const HardwareProfile hw = test::ideal_profile(8);
  const Workload w = test::with_expert_tp(moe_workload(4, 8, 2, 4096, 1024, 1024), 2);
  const Ps plain = test::moe_scheme_latency("no_overlap", w, hw);
  const Ps piped = test::moe_scheme_latency("moe_pipeline", w, hw, {{"chunks", 4}});
  CHECK(piped < plain);
  // chunks 1 is no_overlap.
  CHECK(test::moe_scheme_latency("moe_pipeline", w, hw, {{"chunks", 1}}) == plain);
  // moe_flashoverlap and moe_tile_fused have their expert-TP forms (tests/schemes/test_moe_etp_schemes.cpp);
  // none is refused.
  for (const std::string scheme : {"no_overlap", "moe_pipeline", "moe_flashoverlap", "moe_tile_fused"}) {
    INFO(scheme);
    CHECK(find_scheme(scheme)->applies(w));
    CHECK_FALSE(moe_expert_tp_refusal(w, scheme).has_value());
  }
  CHECK(test::moe_scheme_latency("moe_flashoverlap", w, hw) <= plain);
}
