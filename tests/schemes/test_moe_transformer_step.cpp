// The training step of a mixture-of-experts transformer (sim/schemes/moe_transformer.cpp, docs/guide/moe.md
// "Training step") on the idealised node of ideal_profile.hpp: a step of no_overlap is its forward alone
// plus its backward alone exactly (latency and bytes), the backward's GEMMs are twice the forward's, each
// backward all-to-allv carries its forward one's per-pair bytes transposed, a one-layer step is the
// attention_tpsp step plus the moe workload's step of the same block, an all-dense MoE transformer's step
// is the dense transformer's, MFU counts the active experts, and what is not modelled is refused.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cost_model/input_error.hpp"
#include "sim/backward_shapes.hpp"
#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "sim/node_builder.hpp"
#include "sim/schemes/moe.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/workload_shapes.hpp"
#include "tests/schemes/ideal_profile.hpp"
#include "tests/support/moe_fixtures.hpp"
#include "tests/support/transformer_fixtures.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

// A MoE transformer of `layers` layers over tp ranks (ep = tp), the first `dense` of them dense: 8192
// tokens of width 1024 (16 heads, 4 KV heads), `experts` experts of FFN width 256, top `top_k`.
Workload moe_transformer(int tp, int layers, int dense, MoeRoutingSpec routing = {}, int shared = 0, int experts = 8,
                         int top_k = 2) {
  return test::transformer_on(
      test::with_moe(test::custom_transformer(layers, 2, 4096, 1024, 2048, 16, 4), tp, experts, top_k, 256, dense, routing, shared),
      tp);
}

using test::with_pass;

Workload attention_alone(const Workload& w) {
  return Workload{WorkloadKind::attention_tpsp, w.tp, transformer_attention(std::get<Transformer>(w.shape)), w.training};
}
Workload moe_alone(const Workload& w) { return Workload{WorkloadKind::moe, w.tp, *std::get<Transformer>(w.shape).moe, w.training}; }

using Matrix = std::vector<std::vector<Bytes>>;
Matrix plus(const Matrix& a, const Matrix& b) {
  Matrix out = a;
  for (std::size_t i = 0; i < out.size(); ++i)
    for (std::size_t j = 0; j < out[i].size(); ++j) out[i][j] += b[i][j];
  return out;
}

const std::vector<std::pair<std::string, nlohmann::json>> kBackwardSchemes = {
    {"no_overlap", nlohmann::json::object()},
    {"moe_pipeline", {{"chunks", 3}}},
    {"moe_flashoverlap", {{"group_waves", 1}}},
    {"moe_flashoverlap", {{"group_waves", 0}}}};

}  // namespace

TEST_CASE("moe transformer step: a step is its forward alone plus its backward alone (latency and bytes)",
          "[moe][moe_transformer]") {
  // Exact: the forward ends on every rank at once (its last block ends in an all-to-allv or a
  // reduce-scatter, then the same shared experts everywhere), so the backward starts as it does alone.
  for (const HardwareProfile& hw : {test::ideal_profile(4), test::ideal_profile(4, 5000)}) {
    for (const Workload& base : {moe_transformer(4, 3, 1), moe_transformer(4, 2, 0, test::zipf_routing(1.2, 5), 1)}) {
      for (const auto& [scheme, params] : kBackwardSchemes) {
        INFO(scheme << " " << params.dump());
        const BuiltScheme fwd = test::build_moe_scheme(scheme, base, hw, params);
        const BuiltScheme bwd = test::build_moe_scheme(scheme, with_pass(base, Pass::backward), hw, params);
        const BuiltScheme step = test::build_moe_scheme(scheme, with_pass(base, Pass::step), hw, params);
        const NodeConfig node = make_node(hw, 4);
        const Ps forward = run(fwd.graph, node).makespan_ps;
        const Ps backward = run(bwd.graph, node).makespan_ps;
        CHECK(backward > forward);
        CHECK(run(step.graph, node).makespan_ps == forward + backward);
        CHECK(step.required_bytes == plus(fwd.required_bytes, bwd.required_bytes));
        // The forward's ops carry the forward pass, the backward's (named bwd.) the backward.
        for (const Op& op : step.graph.ops()) CHECK((op.pass == StepPass::backward) == (op.name.rfind("bwd.", 0) == 0));
      }
    }
  }
}

TEST_CASE("moe transformer step: the backward's GEMMs are twice the forward's (experts, attention, router, shared)",
          "[moe][moe_transformer]") {
  // Every GEMM dimension a multiple of 128: 2048 tokens per rank, 128 experts top 8 (512 rows each,
  // uniform), router N = 128, d_model 1024, expert FFN 256, QKV 384 and out_proj K 256 per rank.
  const HardwareProfile hw = test::ideal_profile(4);
  const Workload w = with_pass(moe_transformer(4, 2, 1, {}, 1, 128, 8), Pass::step);
  for (const auto& [scheme, params] : kBackwardSchemes) {
    INFO(scheme << " " << params.dump());
    if (scheme == "moe_pipeline") continue;  // its chunks' rows (512 / 3) are no multiple of 128
    const BuiltScheme b = test::build_moe_scheme(scheme, w, hw, params);
    const Ps forward = test::gemm_tile_ps(b, StepPass::forward);
    REQUIRE(forward > 0);
    CHECK(test::gemm_tile_ps(b, StepPass::backward) == 2 * forward);
  }
  // Recomputation adds GEMMs to the backward (full: the layer's forward again) or none (selective: core
  // attention, a FLOP kernel).
  const BuiltScheme none = test::build_moe_scheme("no_overlap", w, hw);
  const BuiltScheme full = test::build_moe_scheme("no_overlap", with_pass(w, Pass::step, Recompute::full), hw);
  const BuiltScheme selective = test::build_moe_scheme("no_overlap", with_pass(w, Pass::step, Recompute::selective), hw);
  CHECK(test::gemm_tile_ps(full, StepPass::backward) == 3 * test::gemm_tile_ps(none, StepPass::forward));
  CHECK(test::gemm_tile_ps(selective, StepPass::backward) == test::gemm_tile_ps(none, StepPass::backward));
}

TEST_CASE("moe transformer step: each backward all-to-allv is its forward one transposed, bytes conserved per pair",
          "[moe][moe_transformer]") {
  const HardwareProfile hw = test::ideal_profile(4);
  const Workload w = with_pass(moe_transformer(4, 3, 1, test::zipf_routing(1.2, 7), 1), Pass::step);
  for (const auto& [scheme, params] : kBackwardSchemes) {
    INFO(scheme << " " << params.dump());
    const BuiltScheme step = test::build_moe_scheme(scheme, w, hw, params);
    for (const int l : {1, 2}) {
      const std::string layer = "L" + std::to_string(l) + ".moe.";
      // Each all-to-allv's gradient goes back the way it came (Megatron-core's dispatcher swaps the split
      // sizes): the combine backward sends d -> s what the combine sent s -> d, the dispatch backward likewise.
      for (const std::string what : {"dispatch", "combine"}) {
        const auto forward = test::sends_of(step, layer + what);
        const auto backward = test::sends_of(step, "bwd." + layer + what);
        REQUIRE_FALSE(forward.empty());
        CHECK(forward.size() == backward.size());
        for (const auto& [pair, bytes] : forward) CHECK(backward.at({pair.second, pair.first}) == bytes);
      }
    }
    // The dense layer 0 has no MoE block.
    CHECK(test::sends_of(step, "L0.moe.").empty());
    CHECK(test::sends_of(step, "bwd.L0.moe.").empty());
    // At steps fidelity the engine moves what the graph requires: the forward's and the backward's bytes.
    // (moe_flashoverlap's combine groups are refused at steps fidelity on this profile, for the moe
    // workload alone too: tests/schemes/test_moe_transformer.cpp.)
    if (scheme == "moe_flashoverlap") continue;
    const Matrix expected = plus(test::build_moe_scheme(scheme, with_pass(w, Pass::forward), hw, params).required_bytes,
                                 test::build_moe_scheme(scheme, with_pass(w, Pass::backward), hw, params).required_bytes);
    test::check_pair_bytes(scheme, w, hw, params, expected);
  }
}

TEST_CASE("moe transformer step: one layer's step is the attention_tpsp step plus the moe workload's step",
          "[moe][moe_transformer]") {
  // The same block and routing: the moe workload of the transformer's MoE block (tp ranks routing
  // batch x seq / tp tokens each). Exact: the MoE block's forward starts on every rank at the attention's
  // reduce-scatter, as the moe workload's does at 0, and the attention's backward starts with an all-gather
  // after the MoE block's backward has ended on every rank.
  for (const HardwareProfile& hw : {test::ideal_profile(4), test::ideal_profile(4, 5000)}) {
    for (const Workload& base : {moe_transformer(4, 1, 0), moe_transformer(4, 1, 0, test::zipf_routing(1.0, 3), 1)}) {
      const Workload w = with_pass(base, Pass::step);
      const Ps attention = test::moe_scheme_latency("no_overlap", attention_alone(w), hw);
      for (const auto& [scheme, params] : kBackwardSchemes) {
        INFO(scheme << " " << params.dump());
        const Ps moe = test::moe_scheme_latency(scheme, moe_alone(w), hw, params);
        CHECK(test::moe_scheme_latency(scheme, w, hw, params) == attention + moe);
      }
    }
  }
}

TEST_CASE("moe transformer step: with every layer dense it is the dense transformer's step", "[moe][moe_transformer]") {
  const HardwareProfile hw = test::ideal_profile(4);
  for (const Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    for (const std::string column : {"scheme", "bulk"}) {
      INFO(recompute_name(r) << " " << column);
      const Workload w = with_pass(moe_transformer(4, 2, 2), Pass::step, r);
      Workload dense = w;
      std::get<Transformer>(dense.shape).moe.reset();
      std::get<Transformer>(dense.shape).dense_layers = 0;
      const nlohmann::json params = {{"column_backward", column}};
      CHECK(test::moe_scheme_latency("no_overlap", w, hw, params) ==
            run(find_scheme("no_overlap")->build(BuildContext{dense, hw, params, Fidelity::curve}).graph,
                make_node(hw, 4))
                .makespan_ps);
    }
  }
}

TEST_CASE("moe transformer step: MFU counts the active experts, tokens/s the sequence", "[moe][moe_transformer]") {
  const HardwareProfile hw = test::ideal_profile(4);
  const Workload w = with_pass(moe_transformer(4, 3, 1, {}, 1), Pass::step);
  const Transformer& t = std::get<Transformer>(w.shape);
  const nlohmann::json none = nlohmann::json::object();
  const SchemeResult r = evaluate(*find_scheme("no_overlap"), BuildContext{w, hw, none, Fidelity::curve}, {});
  REQUIRE(r.step.present);
  // Per GPU and layer: the attention's (its own workload's count), the dense MLP's (gate+up and down on
  // the gathered tokens, 1/4 of the FFN), and the MoE block's: each of a rank's T = 2048 tokens through
  // its top 2 experts and the shared expert (gate+up 2 x 2f d, down 2 f d each) plus the router (2 T E d).
  const double T = 2048, d = 1024, f = 256, E = 8, k = 2;
  const double attention = forward_flops(attention_alone(w), Block::whole);
  const double mlp = 2.0 * 8192 * (2 * 2048 / 4) * d + 2.0 * 8192 * d * (2048 / 4);
  const double moe = 2 * T * E * d + (k + 1) * T * (2 * 2 * f * d + 2 * f * d);
  CHECK(moe_forward_flops(*t.moe) == Approx(moe).epsilon(1e-12));
  CHECK(r.step.model_flops == Approx(3 * (3 * attention + mlp + 2 * moe)).epsilon(1e-12));
  const double seconds = static_cast<double>(r.latency_ps) * 1e-12;
  CHECK(r.step.tokens_per_s == Approx(8192 / seconds).epsilon(1e-12));
  CHECK(r.step.mfu == Approx(r.step.model_flops / (seconds * 1000e12)).epsilon(1e-12));
  CHECK(r.step.backward.latency_ps > r.step.forward.latency_ps);
  CHECK(r.step.forward.comm_ps > 0);
  CHECK(r.step.backward.comm_ps > r.step.forward.comm_ps);  // the attention's backward has a third collective
  // no_overlap's column_backward shapes the attention's and dense MLP's backward here: it applies.
  for (const SchemeParam& p : find_scheme("no_overlap")->params) CHECK(param_applies(p, w));
}

TEST_CASE("moe transformer step: moe_tile_fused, data parallelism refused; a step is deterministic",
          "[moe][moe_transformer]") {
  const HardwareProfile hw = test::ideal_profile(4);
  const nlohmann::json none = nlohmann::json::object();
  for (const Pass p : {Pass::backward, Pass::step}) {
    const Workload w = with_pass(moe_transformer(4, 2, 0), p);
    for (const std::string scheme : {"no_overlap", "moe_pipeline", "moe_flashoverlap"}) CHECK(find_scheme(scheme)->applies(w));
    const SchemeInfo& fused = *find_scheme("moe_tile_fused");
    CHECK_FALSE(fused.applies(w));
    CHECK(fused.applies(with_pass(w, Pass::forward)));
    // Built anyway (a caller skipping applies), it names workload.pass rather than run another backward.
    try {
      (void)fused.build(BuildContext{w, hw, none, Fidelity::curve});
      FAIL("moe_tile_fused built a backward");
    } catch (const InputError& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains("workload.pass") && Catch::Contains("no backward form"));
    }
    Workload dp = w;
    dp.training.parallel.dp = 2;
    CHECK_THROWS_AS(find_scheme("no_overlap")->build(BuildContext{dp, hw, none, Fidelity::curve}), InputError);
  }
  const Workload w = with_pass(moe_transformer(4, 2, 1, test::zipf_routing(1.2, 9), 1), Pass::step);
  for (const auto& [scheme, params] : kBackwardSchemes) {
    INFO(scheme << " " << params.dump());
    const BuiltScheme a = test::build_moe_scheme(scheme, w, hw, params);
    const BuiltScheme b = test::build_moe_scheme(scheme, w, hw, params);
    CHECK(a.graph.digest() == b.graph.digest());
    CHECK(a.reason == b.reason);
    const NodeConfig node = make_node(hw, 4);
    CHECK(run(a.graph, node).makespan_ps == run(b.graph, node).makespan_ps);
  }
}
