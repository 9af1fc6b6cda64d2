// evaluate_all simulates a task graph once per scenario: a scheme whose graph equals one already
// simulated takes that graph's runs. The engine is a deterministic function of graph, node and
// options, so the reused figures must be exactly those of the scheme's own simulation; these tests
// hold the reuse to that. The case used: async_tp twice, once with copy_sms set, a knob of its SM
// transport that the default copy-engine transport never reads, so both build one graph.
#include <string>

#include <catch2/catch.hpp>

#include "cost_model/profile_loader.hpp"
#include "sim/metrics.hpp"
#include "sim/schemes/scheme.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

const std::string kHardwareDir = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";

// Two layers of Llama-3-70B at TP 8, a forward and backward step; dp > 1 adds the per-communicator re-runs.
Workload two_layer_step(int dp) {
  Workload w;
  w.kind = "transformer";
  w.tp = 8;
  w.shape = Transformer{.model = "llama3-70b", .layers = 2, .batch = 1, .seq = 8192, .d_model = 8192,
                        .d_ffn = 28672, .heads = 64, .kv_heads = 8, .dtype = DType::bf16};
  DataParallel d;
  d.dp = dp;
  w.training = Training{Pass::step, Recompute::none, d};
  return w;
}

BuiltScheme build(const std::string& scheme, const Workload& w, const HardwareProfile& hw) {
  static const nlohmann::json params = nlohmann::json::object();
  return find_scheme(scheme)->build(BuildContext{w, hw, params, Fidelity::curve});
}

}  // namespace

TEST_CASE("a task graph equals another only field for field, and equal graphs share a fingerprint", "[sim][reuse]") {
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", kHardwareDir);
  const Workload w = two_layer_step(1);
  const BuiltScheme base = build("async_tp", w, hw);
  const TaskGraph again = build("async_tp", w, hw).graph;
  CHECK(again == base.graph);
  CHECK(again.fingerprint() == base.graph.fingerprint());
  CHECK_FALSE(build("no_overlap", w, hw).graph == base.graph);
  // One field of one op, even one the fingerprint does not read, makes the graphs differ.
  TaskGraph g(base.graph.num_ranks());
  for (const Stream& s : base.graph.streams()) g.add_stream(s.rank, s.name, s.priority);
  for (const Counter& c : base.graph.counters()) g.add_counter(c.name);
  bool changed = false;
  for (Op op : base.graph.ops()) {
    if (!changed && op.kind == OpKind::tiled) {
      op.hbm_bytes_per_cta += 1;
      changed = true;
    }
    g.add(std::move(op));
  }
  REQUIRE(changed);
  CHECK(g.fingerprint() == base.graph.fingerprint());
  CHECK_FALSE(g == base.graph);
}

TEST_CASE("a scheme reusing another's runs reports what its own simulation gives", "[sim][reuse][training][dp]") {
  const HardwareProfile hw = load_profile("h100-2node-ib400", kHardwareDir);
  for (const int dp : {1, 2}) {
    INFO("dp " << dp);
    const Workload w = two_layer_step(dp);
    const SchemeRequest plain{"async_tp", nlohmann::json::object()};
    const SchemeRequest knob{"async_tp", {{"copy_sms", 8}}};
    REQUIRE(build("async_tp", w, hw).graph ==
            find_scheme("async_tp")->build(BuildContext{w, hw, knob.params, Fidelity::curve}).graph);
    const std::vector<SchemeResult> both = evaluate_all({plain, knob}, w, hw, Fidelity::curve);
    REQUIRE(both.size() == 2);
    // The second alone: no earlier graph to take runs from.
    const std::vector<SchemeResult> alone = evaluate_all({knob}, w, hw, Fidelity::curve);
    REQUIRE(alone.size() == 1);
    nlohmann::json reused = to_json(both[1]), own = to_json(alone[0]);
    CHECK(reused == own);
    CHECK(reused["params"]["copy_sms"] == 8);
    // The first's figures are the same numbers under its own parameters.
    nlohmann::json first = to_json(both[0]);
    first.erase("params");
    reused.erase("params");
    CHECK(first == reused);
  }
}
