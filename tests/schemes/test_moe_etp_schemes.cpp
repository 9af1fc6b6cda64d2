// moe_flashoverlap and moe_tile_fused with expert tensor parallelism (Moe::expert_tp; docs/guide/moe.md
// "Expert tensor parallelism"; sim/schemes/moe_flashoverlap.cpp groups_of, moe_tile_fused.cpp's header)
// on the idealised node of ideal_profile.hpp: every rank pair carries no_overlap's bytes, the ETP
// collectives no_overlap's in total, each member runs 1 / expert_tp of the expert FLOPs of the same tokens
// per EP rank without expert TP, one wave group is no_overlap exactly, no latency beats its compute-only
// run, the busiest rank sets the latency under skew, runs repeat, and moe_flashoverlap's step is its
// forward plus its backward with the all-to-alls' bytes transposed.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

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

using Params = nlohmann::json;

// The two schemes with the parameters worth covering (several wave groups and the predictor; the
// dispatch whole and in pieces).
std::vector<std::pair<std::string, Params>> etp_forms() {
  return {{"moe_flashoverlap", Params{{"group_waves", 0}}},
          {"moe_flashoverlap", Params{{"group_waves", 1}}},
          {"moe_tile_fused", Params{{"dispatch_pieces", 1}}},
          {"moe_tile_fused", Params{{"dispatch_pieces", 3}}}};
}

Workload with_pass(Workload w, Pass p) {
  w.training.pass = p;
  return w;
}

// nccl-tests S of every call of `primitive` in `b`, summed.
Bytes collective_bytes(const BuiltScheme& b, Primitive primitive) {
  Bytes out = 0;
  for (const CollectiveCall& c : b.collectives)
    if (c.primitive == primitive) out += c.bytes;
  return out;
}

// Per graph rank, the tile work (tiles x tile time) of its expert GEMMs (tiled or persistent ops named experts.up*,
// experts.down*): on the ideal profile a tile's time is proportional to its FLOPs, so with no padded
// tile this is the rank's expert FLOPs up to one constant.
std::vector<double> expert_work(const BuiltScheme& b) {
  const TaskGraph& g = b.graph;
  std::vector<double> out(static_cast<std::size_t>(g.num_ranks()), 0);
  for (const Op& op : g.ops()) {
    if (op.kind != OpKind::tiled && op.kind != OpKind::persistent) continue;
    if (op.name.rfind("experts.up", 0) != 0 && op.name.rfind("experts.down", 0) != 0) continue;
    out[static_cast<std::size_t>(g.streams()[static_cast<std::size_t>(op.stream)].rank)] +=
        static_cast<double>(op.ctas) * static_cast<double>(op.cta_ps);
  }
  return out;
}

// Rank r's gathered expert GEMMs (moe_etp_shapes of EP rank r / expert_tp) alone on every SM.
Ps gathered_experts_ps(const HardwareProfile& hw, const MoeShapes& sh, int e) {
  return plan_grouped_gemm(hw, sh.up[static_cast<std::size_t>(e)]).time_ps(hw.gpu.sm_count) +
         plan_grouped_gemm(hw, sh.down[static_cast<std::size_t>(e)]).time_ps(hw.gpu.sm_count);
}

}  // namespace

TEST_CASE("moe expert_tp schemes: every rank pair carries no_overlap's bytes, the ETP collectives its S",
          "[moe][moe_etp]") {
  const HardwareProfile hw = test::ideal_profile(8);
  for (const Workload& w : {test::with_expert_tp(moe_workload(4, 8, 2, 1024, 1024, 512), 2),
                            test::with_expert_tp(moe_workload(4, 8, 2, 1000, 512, 256, test::zipf_routing(1.2)), 2),
                            test::with_expert_tp(moe_workload(2, 8, 2, 1000, 512, 256, test::zipf_routing(1.2)), 4)}) {
    const BuiltScheme plain = test::build_moe_scheme("no_overlap", w, hw);
    const Moe& m = std::get<Moe>(w.shape);
    const MoeShapes ep = moe_shapes(m, moe_routing(m).tokens);
    Bytes gathered = 0;
    for (int e = 0; e < m.ep; ++e) gathered += moe_etp_gathered_bytes(m, ep, e);
    REQUIRE(collective_bytes(plain, Primitive::all_gather) == gathered);
    REQUIRE(collective_bytes(plain, Primitive::reduce_scatter) == gathered);
    for (const auto& [scheme, params] : etp_forms()) {
      INFO(scheme << " " << params.dump());
      // Required and (steps fidelity) moved bytes per rank pair: no_overlap's, which test_moe.cpp pins
      // to the dispatch and combine per EP group and the ETP collectives inside each pair.
      test::check_pair_bytes(scheme, w, hw, params, plain.required_bytes);
      const BuiltScheme b = test::build_moe_scheme(scheme, w, hw, params);
      CHECK(collective_bytes(b, Primitive::all_gather) == gathered);
      CHECK(collective_bytes(b, Primitive::reduce_scatter) == gathered);
    }
    // The wave groups' all-to-allvs carry the combine's per-pair bytes (and nothing across EP groups).
    const BuiltScheme fine = test::build_moe_scheme("moe_flashoverlap", w, hw, {{"group_waves", 1}});
    REQUIRE(fine.collectives.size() > plain.collectives.size());
    CHECK(test::sends_of(fine, "combine.group") == test::sends_of(plain, "combine"));
  }
}

TEST_CASE("moe expert_tp schemes: each member runs 1 / expert_tp of the expert FLOPs of its EP rank's tokens",
          "[moe][moe_etp]") {
  // Uniform routing with every GEMM a whole number of tiles: EP 4, top 2 of 8, so every (source,
  // expert) pair carries T/4 slots; expert_tp 2 with T tokens per GPU against expert_tp 1 with 2T per
  // EP rank (the same tokens per EP rank, the FFN whole).
  const HardwareProfile hw = test::ideal_profile(8);
  const std::int64_t T = 4096, d = 1024, f = 1024;
  const Workload split = test::with_expert_tp(moe_workload(4, 8, 2, T, d, f), 2);
  const Workload whole = moe_workload(4, 8, 2, 2 * T, d, f);
  const std::vector<double> reference = expert_work(test::build_moe_scheme("no_overlap", whole, hw));
  const std::vector<double> plain = expert_work(test::build_moe_scheme("no_overlap", split, hw));
  REQUIRE(reference[0] > 0);
  for (const auto& [scheme, params] : etp_forms()) {
    INFO(scheme << " " << params.dump());
    Params p = params;
    if (scheme == "moe_tile_fused") p["tile_signal_overhead"] = 0.0;
    const std::vector<double> work = expert_work(test::build_moe_scheme(scheme, split, hw, p));
    REQUIRE(work.size() == 8);
    for (int r = 0; r < 8; ++r) {
      INFO("rank " << r);
      CHECK(work[static_cast<std::size_t>(r)] == Approx(reference[static_cast<std::size_t>(r / 2)] / 2).epsilon(1e-6));
      CHECK(work[static_cast<std::size_t>(r)] == Approx(plain[static_cast<std::size_t>(r)]).epsilon(1e-6));
    }
  }
}

TEST_CASE("moe expert_tp schemes: moe_flashoverlap with one wave group is no_overlap exactly", "[moe][moe_etp]") {
  // One group: the wait ends with the down projection's last tile, its reduce-scatter carries the whole
  // S and its all-to-allv the whole combine, as no_overlap's reduce-scatter and combine; the shared
  // experts follow the combine in both. The backward's one group runs beside the gate+up wgrad, so it is
  // no slower than no_overlap's (wgrad, then reduce-scatter and dispatch backward).
  const HardwareProfile hw = test::ideal_profile(8);
  for (Workload w : {test::with_expert_tp(moe_workload(4, 8, 2, 2048, 1024, 512, test::zipf_routing(1.0, 9)), 2),
                     test::with_expert_tp(moe_workload(2, 8, 2, 1000, 512, 256, test::zipf_routing(1.2)), 4)}) {
    std::get<Moe>(w.shape).shared_experts = 1;
    const Params one{{"group_waves", 1 << 20}};
    CHECK(test::moe_scheme_latency("moe_flashoverlap", w, hw, one) == test::moe_scheme_latency("no_overlap", w, hw));
    const BuiltScheme b = test::build_moe_scheme("moe_flashoverlap", w, hw, one);
    const BuiltScheme plain = test::build_moe_scheme("no_overlap", w, hw);
    CHECK(b.required_bytes == plain.required_bytes);
    CHECK(b.collectives.size() == plain.collectives.size());
    const Workload bwd = with_pass(w, Pass::backward);
    CHECK(test::moe_scheme_latency("moe_flashoverlap", bwd, hw, one) <= test::moe_scheme_latency("no_overlap", bwd, hw));
  }
}

TEST_CASE("moe expert_tp schemes: never below the compute-only run; the busiest rank sets the latency under skew",
          "[moe][moe_etp]") {
  const HardwareProfile hw = test::ideal_profile(8);
  const Workload w = test::with_expert_tp(moe_workload(4, 8, 2, 2048, 1024, 512, test::zipf_routing(1.5, 3)), 2);
  const Moe& m = std::get<Moe>(w.shape);
  const MoeRouting routing = moe_routing(m);
  const MoeShapes sh = moe_etp_shapes(m, routing.tokens);
  Ps slowest = 0, fastest = -1;
  for (int e = 0; e < m.ep; ++e) {
    const Ps g = gathered_experts_ps(hw, sh, e);
    slowest = std::max(slowest, g);
    fastest = fastest < 0 ? g : std::min(fastest, g);
  }
  REQUIRE(slowest > fastest + fastest / 2);  // the skew is real
  const Ps router = gemm_time_ps(hw, moe_router_gemm(m));
  for (const auto& [scheme, params] : etp_forms()) {
    INFO(scheme << " " << params.dump());
    const SchemeResult r = evaluate(*find_scheme(scheme), BuildContext{w, hw, params, Fidelity::curve});
    CHECK(r.compute_only_ps > 0);
    CHECK(r.latency_ps >= r.compute_only_ps);
    // Every rank of the busiest EP rank's ETP group runs its gathered rows, whatever the overlap: the
    // layer takes at least the router and those GEMMs on every SM, not the mean rank's.
    CHECK(r.latency_ps >= router + slowest);
    // The same at uniform routing (the same slots in all) is faster.
    Workload uniform = w;
    std::get<Moe>(uniform.shape).routing = MoeRoutingSpec{};
    CHECK(test::moe_scheme_latency(scheme, uniform, hw, params) < r.latency_ps);
  }
}

TEST_CASE("moe expert_tp schemes: a fixed seed gives the same graph, bytes and latency", "[moe][moe_etp]") {
  const HardwareProfile hw = test::ideal_profile(8);
  const Workload w = test::with_expert_tp(moe_workload(4, 16, 4, 1024, 512, 256, test::zipf_routing(1.0, 42)), 2);
  for (const auto& [scheme, params] : etp_forms()) {
    INFO(scheme << " " << params.dump());
    const BuiltScheme a = test::build_moe_scheme(scheme, w, hw, params), b = test::build_moe_scheme(scheme, w, hw, params);
    CHECK(a.required_bytes == b.required_bytes);
    CHECK(a.graph.ops().size() == b.graph.ops().size());
    CHECK(a.reason == b.reason);
    CHECK(test::moe_scheme_latency(scheme, w, hw, params) == test::moe_scheme_latency(scheme, w, hw, params));
  }
}

TEST_CASE("moe expert_tp schemes: moe_flashoverlap's step is its forward plus its backward, bytes transposed",
          "[moe][moe_etp]") {
  const HardwareProfile hw = test::ideal_profile(8);
  for (const Workload& base : {test::with_expert_tp(moe_workload(4, 8, 2, 2048, 1024, 512), 2),
                               test::with_expert_tp(moe_workload(4, 8, 2, 1000, 512, 256, test::zipf_routing(1.2)), 2)}) {
    for (const Params& params : {Params{{"group_waves", 0}}, Params{{"group_waves", 1}}}) {
      INFO(params.dump());
      const Ps forward = test::moe_scheme_latency("moe_flashoverlap", base, hw, params);
      const Ps backward = test::moe_scheme_latency("moe_flashoverlap", with_pass(base, Pass::backward), hw, params);
      CHECK(test::moe_scheme_latency("moe_flashoverlap", with_pass(base, Pass::step), hw, params) == forward + backward);
      // The backward's all-to-allvs are the forward's transposed (combine backward = the dispatch's bytes
      // reversed, dispatch backward = the combine's), so a step moves every pair's bytes twice, as
      // no_overlap's step does; the ETP collectives mirror the forward's (an all-gather and the
      // reduce-scatters of the same S).
      const BuiltScheme fwd = test::build_moe_scheme("moe_flashoverlap", base, hw, params);
      const BuiltScheme bwd = test::build_moe_scheme("moe_flashoverlap", with_pass(base, Pass::backward), hw, params);
      const BuiltScheme step = test::build_moe_scheme("moe_flashoverlap", with_pass(base, Pass::step), hw, params);
      auto transpose = [](const std::map<std::pair<int, int>, Bytes>& sends) {
        std::map<std::pair<int, int>, Bytes> out;
        for (const auto& [pair, bytes] : sends) out[{pair.second, pair.first}] += bytes;
        return out;
      };
      const auto dispatch = test::sends_of(fwd, "dispatch"), combine = test::sends_of(fwd, "combine.group");
      REQUIRE_FALSE(dispatch.empty());
      CHECK(test::sends_of(bwd, "bwd.combine") == transpose(combine));
      // The backward's wave groups split the gate+up dgrad's tiles, not the down projection's; summed
      // over the groups they carry the dispatch's bytes transposed.
      CHECK(test::sends_of(bwd, "bwd.dispatch.group") == transpose(dispatch));
      CHECK(collective_bytes(bwd, Primitive::all_gather) == collective_bytes(fwd, Primitive::reduce_scatter));
      CHECK(collective_bytes(bwd, Primitive::reduce_scatter) == collective_bytes(fwd, Primitive::all_gather));
      std::vector<std::vector<Bytes>> twice = fwd.required_bytes;
      for (auto& row : twice)
        for (Bytes& x : row) x *= 2;
      CHECK(step.required_bytes == twice);
      CHECK(step.required_bytes == test::build_moe_scheme("no_overlap", with_pass(base, Pass::step), hw).required_bytes);
    }
  }
}

TEST_CASE("moe expert_tp schemes: every moe scheme applies; moe_tile_fused still has no backward form",
          "[moe][moe_etp]") {
  const Workload w = test::with_expert_tp(moe_workload(4, 8, 2, 1024, 512, 256), 2);
  for (const std::string scheme : {"no_overlap", "moe_pipeline", "moe_flashoverlap", "moe_tile_fused"}) {
    INFO(scheme);
    CHECK(find_scheme(scheme)->applies(w));
    CHECK_FALSE(moe_expert_tp_refusal(w, scheme).has_value());
  }
  CHECK(find_scheme("moe_flashoverlap")->applies(with_pass(w, Pass::step)));
  CHECK_FALSE(find_scheme("moe_tile_fused")->applies(with_pass(w, Pass::step)));
}
