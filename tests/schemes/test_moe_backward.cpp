// The MoE layer's backward and training step (sim/schemes/moe_backward.cpp, docs/guide/moe.md "Training
// step") on the idealised node of ideal_profile.hpp: the step of no_overlap is its forward then its
// backward exactly, the backward's GEMMs are twice the forward's FLOPs, the backward all-to-alls carry the
// forward's per-pair bytes transposed, moe_pipeline's step is no slower than no_overlap's, the figures of
// a step (MFU, tokens/s) count the routed tokens, and the schemes without a backward form are refused.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cost_model/all_to_allv.hpp"
#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "sim/node_builder.hpp"
#include "sim/schemes/moe.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/workload_shapes.hpp"
#include "tests/schemes/ideal_profile.hpp"
#include "tests/support/moe_fixtures.hpp"

using namespace overlap;
using namespace overlap::sim;
using test::moe_workload;

namespace {

Workload with_pass(Workload w, Pass p) {
  w.training.pass = p;
  return w;
}

double flops(const RankGemm& g) {
  return 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
}
double flops(const std::vector<RankGemm>& gs) {
  double out = 0;
  for (const RankGemm& g : gs) out += flops(g);
  return out;
}

// Per (sender rank, peer) the curve bytes of the ops named `name` (one op per member).
std::map<std::pair<int, int>, Bytes> sends_of(const BuiltScheme& b, const std::string& name) {
  std::map<std::pair<int, int>, Bytes> out;
  const TaskGraph& g = b.graph;
  for (const Op& op : g.ops()) {
    if (op.name != name) continue;
    const int r = g.streams()[static_cast<std::size_t>(op.stream)].rank;
    for (const PeerBytes& s : op.curve_sends) out[{r, s.peer}] += s.bytes;
  }
  return out;
}

}  // namespace

TEST_CASE("moe backward: no_overlap's step is its forward alone plus its backward alone, exactly", "[moe]") {
  for (const auto& hw : {test::ideal_profile(4), test::ideal_profile(4, 5000)}) {
    for (const Workload& base :
         {moe_workload(4, 8, 2, 1024, 1024, 512), moe_workload(4, 8, 2, 1000, 512, 256, test::zipf_routing(1.2)),
          [] {
            Workload w = moe_workload(4, 4, 1, 2048, 1024, 512);
            std::get<Moe>(w.shape).shared_experts = 1;
            return w;
          }()}) {
      const Ps forward = test::moe_scheme_latency("no_overlap", base, hw);
      const Ps backward = test::moe_scheme_latency("no_overlap", with_pass(base, Pass::backward), hw);
      const Ps step = test::moe_scheme_latency("no_overlap", with_pass(base, Pass::step), hw);
      REQUIRE(forward > 0);
      // The backward does twice the GEMM work and moves the same bytes: longer than the forward.
      CHECK(backward > forward);
      CHECK(step == forward + backward);
    }
  }
}

TEST_CASE("moe backward: the experts', router's and shared experts' backward GEMMs are 2x the forward's FLOPs",
          "[moe]") {
  for (const Workload& w : {moe_workload(4, 8, 2, 1000, 512, 256, test::zipf_routing(1.5, 3)),
                            moe_workload(4, 16, 4, 1024, 1024, 512)}) {
    Moe m = std::get<Moe>(w.shape);
    m.shared_experts = 2;
    const MoeShapes sh = moe_shapes(m, moe_routing(m).tokens);
    bool empty_expert = false;
    for (int r = 0; r < m.ep; ++r) {
      const auto i = static_cast<std::size_t>(r);
      const double forward = flops(sh.up[i]) + flops(sh.down[i]);
      const MoeExpertBackward b = moe_expert_backward(m, sh, r);
      const double backward = flops(b.up_dgrad) + flops(b.up_wgrad) + flops(b.down_dgrad) + flops(b.down_wgrad);
      CHECK(backward == 2 * forward);
      CHECK(b.up_dgrad.size() == sh.up[i].size());
      for (const RankGemm& g : sh.up[i]) empty_expert = empty_expert || g.m == 0;
      // dgrad M x K x N and wgrad K x N x M of each expert's forward GEMM (rows the reduction of wgrad).
      for (std::size_t e = 0; e < b.down_dgrad.size(); ++e) {
        CHECK(b.down_dgrad[e].m == sh.down[i][e].m);
        CHECK(b.down_dgrad[e].n == m.d_ffn_expert);
        CHECK(b.down_dgrad[e].k == m.d_model);
      }
      for (const RankGemm& g : b.up_wgrad) {
        CHECK(g.m == m.d_model);
        CHECK(g.n == 2 * m.d_ffn_expert);
        CHECK(g.k > 0);  // an expert without rows has no wgrad
      }
    }
    (void)empty_expert;
    // The router's and shared experts' dgrad + wgrad are also 2x their forward.
    for (const RankGemm& g : {moe_router_gemm(m), moe_shared_up(m), moe_shared_down(m)})
      CHECK(flops(RankGemm{g.m, g.k, g.n, g.dtype}) + flops(RankGemm{g.k, g.n, g.m, g.dtype}) == 2 * flops(g));
  }
}

TEST_CASE("moe backward: the backward all-to-alls are the forward's transposed, bytes conserved per pair", "[moe]") {
  const HardwareProfile hw = test::ideal_profile(4);
  const Workload w = moe_workload(4, 8, 2, 1000, 512, 256, test::zipf_routing(1.2));
  for (const auto& [scheme, params] :
       std::vector<std::pair<std::string, nlohmann::json>>{{"no_overlap", nlohmann::json::object()},
                                                           {"moe_pipeline", {{"chunks", 1}}},
                                                           {"moe_pipeline", {{"chunks", 3}}},
                                                           {"moe_flashoverlap", {{"group_waves", 1}}},
                                                           {"moe_flashoverlap", {{"group_waves", 0}}}}) {
    INFO(scheme << " " << params.dump());
    const BuiltScheme fwd = test::build_moe_scheme(scheme, w, hw, params);
    const BuiltScheme bwd = test::build_moe_scheme(scheme, with_pass(w, Pass::backward), hw, params);
    const BuiltScheme step = test::build_moe_scheme(scheme, with_pass(w, Pass::step), hw, params);
    // Per pair the backward moves what the forward moved (dispatch s -> d comes back as the combine
    // backward s -> d, the combine d -> s as the dispatch backward d -> s); a step moves both.
    CHECK(bwd.required_bytes == fwd.required_bytes);
    std::vector<std::vector<Bytes>> twice = fwd.required_bytes;
    for (auto& row : twice)
      for (Bytes& x : row) x *= 2;
    CHECK(step.required_bytes == twice);
    // Direction: rank d's combine-backward sends to s what s combined to d, and the dispatch backward
    // sends back what the dispatch brought.
    const int C = params.contains("chunks") ? params["chunks"].get<int>() : 1;
    const bool grouped = scheme == "moe_flashoverlap";  // the dispatch backward in wave groups
    for (int c = 0; c < C && !grouped; ++c) {
      const std::string tag = C > 1 ? "[" + std::to_string(c) + "]" : "";
      const auto combine = sends_of(step, "combine" + tag), combine_bwd = sends_of(step, "bwd.combine" + tag);
      const auto dispatch = sends_of(step, "dispatch" + tag), dispatch_bwd = sends_of(step, "bwd.dispatch" + tag);
      REQUIRE_FALSE(combine.empty());
      REQUIRE(combine.size() == combine_bwd.size());
      for (const auto& [pair, bytes] : combine) CHECK(combine_bwd.at({pair.second, pair.first}) == bytes);
      for (const auto& [pair, bytes] : dispatch) CHECK(dispatch_bwd.at({pair.second, pair.first}) == bytes);
    }
    // At steps fidelity the engine moves exactly those bytes.
    const BuiltScheme st = test::build_moe_scheme(scheme, with_pass(w, Pass::step), hw, params, Fidelity::steps);
    const Timeline tl = run(st.graph, make_node(hw, 4));
    std::vector<std::vector<Bytes>> moved(4, std::vector<Bytes>(4, 0));
    for (const auto& p : bytes_by_pair(tl)) moved[p.src][p.dst] += p.bytes;
    CHECK(moved == twice);
    // Every backward op is marked as the backward's, and a step starts with the forward's.
    bool saw_backward = false;
    for (const Op& op : step.graph.ops()) {
      const bool bwd_name = op.name.rfind("bwd.", 0) == 0;
      CHECK((op.pass == StepPass::backward) == bwd_name);
      saw_backward = saw_backward || bwd_name;
    }
    CHECK(saw_backward);
  }
}

TEST_CASE("moe backward: moe_pipeline's step is no slower than no_overlap's, and deterministic", "[moe]") {
  // Links slow enough that the all-to-alls matter (on 10x faster links the chunks' half-empty waves cost
  // more than the hidden all-to-alls, in the forward as in the backward).
  const HardwareProfile hw = test::ideal_profile(4);
  for (const Workload& base : {moe_workload(4, 4, 1, 4096, 1024, 512),
                               moe_workload(4, 8, 2, 2048, 1024, 512, test::zipf_routing(1.2, 5))}) {
    for (const Pass p : {Pass::backward, Pass::step}) {
      const Workload w = with_pass(base, p);
      const Ps plain = test::moe_scheme_latency("no_overlap", w, hw);
      for (const int C : {2, 4}) {
        INFO("chunks " << C << " pass " << pass_name(p));
        const Ps piped = test::moe_scheme_latency("moe_pipeline", w, hw, {{"chunks", C}});
        CHECK(piped <= plain);
        CHECK(piped == test::moe_scheme_latency("moe_pipeline", w, hw, {{"chunks", C}}));
      }
      // chunks 1 is no_overlap's graph.
      CHECK(test::moe_scheme_latency("moe_pipeline", w, hw, {{"chunks", 1}}) == plain);
    }
  }
}

TEST_CASE("moe backward: a step's figures count the routed tokens (MFU and tokens/s)", "[moe]") {
  const HardwareProfile hw = test::ideal_profile(4);
  Workload w = with_pass(moe_workload(4, 8, 2, 1024, 1024, 512), Pass::step);
  std::get<Moe>(w.shape).shared_experts = 1;
  const Moe& m = std::get<Moe>(w.shape);
  const nlohmann::json none = nlohmann::json::object();
  const BuildContext ctx{w, hw, none, Fidelity::curve};
  const SchemeResult r = evaluate(*find_scheme("no_overlap"), ctx, {});
  REQUIRE(r.step.present);
  // Uniform top 2 of 8: every expert gets tokens x top_k x ep / experts rows; per GPU the router, the
  // shared expert and its experts' GEMMs.
  const double rows = 1024.0 * 2 * 4 / 8;
  const double d = 1024, f = 512, T = 1024;
  const double experts = 2 * (2.0 * rows * 2 * f * d + 2.0 * rows * d * f);  // 2 local experts
  const double forward = 2 * T * 8 * d + 2 * T * 2 * f * d + 2 * T * d * f + experts;
  CHECK(moe_forward_flops(m) == Approx(forward).epsilon(1e-12));
  CHECK(r.step.model_flops == Approx(3 * forward).epsilon(1e-12));
  const double seconds = static_cast<double>(r.latency_ps) * 1e-12;
  CHECK(r.step.tokens_per_s == Approx(4 * 1024 / seconds).epsilon(1e-12));
  CHECK(r.step.mfu > 0);
  CHECK(r.step.forward.latency_ps > 0);
  CHECK(r.step.backward.latency_ps > r.step.forward.latency_ps);
  // The workload's collectives alone include the backward's all-to-alls: its comm splits at the forward's end.
  CHECK(r.step.forward.comm_ps > 0);
  CHECK(r.step.backward.comm_ps == r.step.forward.comm_ps);
}

TEST_CASE("moe backward: moe_flashoverlap's step is its forward plus its backward; one group is no_overlap's order",
          "[moe]") {
  const HardwareProfile hw = test::ideal_profile(4);
  for (const Workload& base : {moe_workload(4, 8, 2, 2048, 1024, 512),
                               moe_workload(4, 8, 2, 1000, 512, 256, test::zipf_routing(1.2))}) {
    for (const nlohmann::json& params : {nlohmann::json{{"group_waves", 0}}, nlohmann::json{{"group_waves", 1}}}) {
      INFO(params.dump());
      const Ps forward = test::moe_scheme_latency("moe_flashoverlap", base, hw, params);
      const Ps backward = test::moe_scheme_latency("moe_flashoverlap", with_pass(base, Pass::backward), hw, params);
      CHECK(test::moe_scheme_latency("moe_flashoverlap", with_pass(base, Pass::step), hw, params) ==
            forward + backward);
    }
    // One group of every wave: the dispatch backward waits for the whole gate+up dgrad, then runs beside
    // its wgrad, so it is no slower than no_overlap's backward (wgrad, then the all-to-all).
    const Workload bwd = with_pass(base, Pass::backward);
    CHECK(test::moe_scheme_latency("moe_flashoverlap", bwd, hw, {{"group_waves", 1 << 20}}) <=
          test::moe_scheme_latency("no_overlap", bwd, hw));
  }
}

TEST_CASE("moe backward: no_overlap, moe_pipeline and moe_flashoverlap have a backward form, moe_tile_fused none",
          "[moe]") {
  const Workload w = with_pass(moe_workload(4, 8, 2, 1024, 512, 256), Pass::step);
  for (const std::string scheme : {"no_overlap", "moe_pipeline", "moe_flashoverlap"}) {
    CHECK(find_scheme(scheme)->applies(w));
    CHECK_FALSE(find_scheme(scheme)->backward.empty());
  }
  CHECK_FALSE(find_scheme("moe_tile_fused")->applies(w));
  CHECK(find_scheme("moe_tile_fused")->backward.empty());
  // With expert TP the FlashOverlap form runs a step too (tests/schemes/test_moe_etp_schemes.cpp).
  CHECK(find_scheme("moe_flashoverlap")->applies(test::with_expert_tp(w, 2)));
  CHECK_FALSE(find_scheme("moe_tile_fused")->applies(test::with_expert_tp(w, 2)));
  // no_overlap's column_backward shapes a column-parallel linear's backward: a moe step has none, so the
  // knob is neither reported nor tuned, and naming it is refused.
  const SchemeInfo& none = *find_scheme("no_overlap");
  for (const SchemeParam& p : none.params) CHECK_FALSE(param_applies(p, w));
  const auto refused = check_params_apply(none.params, {{"column_backward", "bulk"}}, w);
  REQUIRE(refused);
  CHECK(refused->name == "column_backward");
  CHECK_THAT(refused->why, Catch::Contains("column-parallel"));
  CHECK(evaluate(none, BuildContext{w, test::ideal_profile(4), nlohmann::json::object(), Fidelity::curve}).params ==
        nlohmann::json::object());
}

TEST_CASE("moe backward expert_tp: a step is forward + backward, the ETP collectives mirrored, bytes twice the "
          "forward's", "[moe]") {
  const HardwareProfile hw = test::ideal_profile(8);
  for (const Workload& base : {test::with_expert_tp(moe_workload(4, 8, 2, 1024, 1024, 512), 2),
                               test::with_expert_tp(moe_workload(4, 8, 2, 1000, 512, 256, test::zipf_routing(1.2)), 2)}) {
    const Ps forward = test::moe_scheme_latency("no_overlap", base, hw);
    const Ps backward = test::moe_scheme_latency("no_overlap", with_pass(base, Pass::backward), hw);
    CHECK(backward > forward);
    CHECK(test::moe_scheme_latency("no_overlap", with_pass(base, Pass::step), hw) == forward + backward);
    for (const auto& [scheme, params] :
         std::vector<std::pair<std::string, nlohmann::json>>{{"no_overlap", nlohmann::json::object()},
                                                             {"moe_pipeline", {{"chunks", 3}}}}) {
      INFO(scheme);
      const BuiltScheme fwd = test::build_moe_scheme(scheme, base, hw, params);
      const BuiltScheme step = test::build_moe_scheme(scheme, with_pass(base, Pass::step), hw, params);
      std::vector<std::vector<Bytes>> twice = fwd.required_bytes;
      for (auto& row : twice)
        for (Bytes& x : row) x *= 2;
      CHECK(step.required_bytes == twice);
      // One ETP all-gather and reduce-scatter per chunk in each pass.
      int gathers = 0, scatters = 0, bwd_gathers = 0, bwd_scatters = 0;
      for (const CollectiveCall& c : step.collectives) {
        const bool bwd = c.name.rfind("bwd.", 0) == 0;
        if (c.primitive == Primitive::all_gather) ++(bwd ? bwd_gathers : gathers);
        if (c.primitive == Primitive::reduce_scatter) ++(bwd ? bwd_scatters : scatters);
      }
      CHECK(gathers > 0);
      CHECK(bwd_gathers == gathers);
      CHECK(bwd_scatters == scatters);
    }
    CHECK(test::moe_scheme_latency("moe_pipeline", with_pass(base, Pass::step), hw, {{"chunks", 2}}) <=
          test::moe_scheme_latency("no_overlap", with_pass(base, Pass::step), hw));
    // Each member's experts' backward: 2x the forward's FLOPs on 1 / expert_tp of the FFN.
    const Moe& m = std::get<Moe>(base.shape);
    Moe split = m;
    split.d_ffn_expert /= 2;
    split.expert_tp = 1;
    const MoeShapes sh = moe_etp_shapes(m, moe_routing(m).tokens);
    for (int e = 0; e < m.ep; ++e) {
      const MoeExpertBackward b = moe_expert_backward(split, sh, e);
      CHECK(flops(b.up_dgrad) + flops(b.up_wgrad) + flops(b.down_dgrad) + flops(b.down_wgrad) ==
            2 * (flops(sh.up[static_cast<std::size_t>(e)]) + flops(sh.down[static_cast<std::size_t>(e)])));
    }
  }
}
