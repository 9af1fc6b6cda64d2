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
    const BuiltScheme b = test::build_moe_scheme(scheme, w, hw, params);
    CHECK(b.required_bytes == expected);
    // At steps fidelity the engine moves exactly those bytes.
    const BuiltScheme st = test::build_moe_scheme(scheme, w, hw, params, Fidelity::steps);
    const Timeline tl = run(st.graph, make_node(hw, 4));
    std::vector<std::vector<Bytes>> moved(4, std::vector<Bytes>(4, 0));
    for (const auto& p : bytes_by_pair(tl)) moved[p.src][p.dst] += p.bytes;
    CHECK(moved == expected);
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
