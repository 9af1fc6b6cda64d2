// evaluate_all simulates a task graph once per scenario: a scheme whose graph equals one already
// simulated takes that graph's runs. The engine is a deterministic function of graph, node and
// options, so the reused figures must be exactly those of the scheme's own simulation; these tests
// hold the reuse to that. The case used: async_tp twice, once with copy_sms set, a knob of its SM
// transport that the default copy-engine transport never reads, so both build one graph.
#include <functional>
#include <optional>
#include <string>
#include <tuple>

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
  w.kind = WorkloadKind::transformer;
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

TEST_CASE("a task graph equals another only field for field, and its digest covers every field", "[sim][reuse]") {
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", kHardwareDir);
  const Workload w = two_layer_step(1);
  const BuiltScheme base = build("async_tp", w, hw);
  const TaskGraph again = build("async_tp", w, hw).graph;
  CHECK(again == base.graph);
  CHECK(again.digest() == base.graph.digest());
  const TaskGraph other = build("no_overlap", w, hw).graph;
  CHECK_FALSE(other == base.graph);
  CHECK_FALSE(other.digest() == base.graph.digest());
  // The graph again with `change` made to the first op `pick` takes (ops added in order, each with
  // its own pass: add() marks an op with the graph's current pass).
  auto copy_changing = [&](const std::function<bool(std::size_t, const Op&)>& pick,
                           const std::function<void(Op&)>& change) {
    TaskGraph g(base.graph.num_ranks());
    for (const Stream& s : base.graph.streams()) g.add_stream(s.rank, s.name, s.priority);
    for (const Counter& c : base.graph.counters()) g.add_counter(c.name);
    const auto& ops = base.graph.ops();
    bool changed = false;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      Op op = ops[i];
      if (!changed && pick(i, op)) {
        change(op);
        changed = true;
      }
      g.set_pass(op.pass);
      g.add(std::move(op));
    }
    g.set_pass(base.graph.pass());
    REQUIRE(changed);
    return g;
  };
  // Every field of Op, one at a time, on the last op (no later op depends on it), makes both the
  // comparison and the digest differ.
  auto with = [&](const std::function<void(Op&)>& change) {
    return copy_changing([&](std::size_t i, const Op&) { return i + 1 == base.graph.ops().size(); }, change);
  };
  const TaskGraph same = with([](Op&) {});
  REQUIRE(same == base.graph);
  REQUIRE(same.digest() == base.graph.digest());
  const std::vector<std::pair<std::string, std::function<void(Op&)>>> changes = {
      {"name", [](Op& o) { o.name += "'"; }},
      {"pass", [](Op& o) { o.pass = o.pass == StepPass::forward ? StepPass::backward : StepPass::forward; }},
      {"communicator", [](Op& o) { o.communicator = o.communicator == Communicator::tp ? Communicator::dp : Communicator::tp; }},
      {"comm", [](Op& o) { o.comm = !o.comm; }},
      {"host_ps", [](Op& o) { o.host_ps += 1; }},
      {"deps", [](Op& o) { o.deps.push_back(0); }},
      {"ctas_per_sm", [](Op& o) { o.ctas_per_sm += 1; }},
      {"hbm_bytes_per_cta", [](Op& o) { o.hbm_bytes_per_cta += 1; }},
      {"reference_sms", [](Op& o) { o.reference_sms += 1; }},
      {"collective", [](Op& o) { o.collective += 1; }},
      {"members", [](Op& o) { o.members += 1; }},
      {"curve_from_switch", [](Op& o) { o.curve_from_switch += 1; }},
      {"curve_reduces", [](Op& o) { o.curve_reduces = !o.curve_reduces; }},
      {"transport", [](Op& o) { o.transport = o.transport ? std::nullopt : std::optional<Transport>(Transport::nccl_p2p); }},
      {"link_efficiency", [](Op& o) { o.link_efficiency *= 0.5; }},
      {"phase_latency_covers_wire", [](Op& o) { o.phase_latency_covers_wire = !o.phase_latency_covers_wire; }},
      {"bytes", [](Op& o) { o.bytes += 1; }},
      {"src_gpu", [](Op& o) { o.src_gpu += 1; }},
      {"dst_gpu", [](Op& o) { o.dst_gpu += 1; }},
      {"counter", [](Op& o) { o.counter += 1; }},
      {"target", [](Op& o) { o.target += 1; }},
      {"amount", [](Op& o) { o.amount += 1; }},
      {"delay_ps", [](Op& o) { o.delay_ps += 1; }},
  };
  for (const auto& [field, change] : changes) {
    INFO("field " << field);
    const TaskGraph g = with(change);
    CHECK_FALSE(g == base.graph);
    CHECK_FALSE(g.digest() == base.graph.digest());
  }
  // The fields the engine validates by kind (a tiled op's sizes, a collective's phases and flows):
  // changed on an op of that kind. (tile_counters and the outside members need counters and a
  // data-parallel collective this graph has not; put_op names every field, so none is left out.)
  auto on_kind = [&](OpKind kind, const std::function<void(Op&)>& change) {
    return copy_changing([kind](std::size_t, const Op& op) { return op.kind == kind; }, change);
  };
  const std::vector<std::tuple<std::string, OpKind, std::function<void(Op&)>>> kind_changes = {
      {"ctas", OpKind::tiled, [](Op& o) { o.ctas += 1; o.tile_counters.clear(); }},
      {"cta_ps", OpKind::tiled, [](Op& o) { o.cta_ps += 1; }},
      {"max_ctas", OpKind::tiled, [](Op& o) { o.max_ctas += 1; }},
      {"channels", OpKind::comm_kernel, [](Op& o) { o.channels += 1; }},
      {"duration_ps", OpKind::comm_kernel, [](Op& o) { o.duration_ps += 1; }},
      {"curve_latency_ps", OpKind::comm_kernel, [](Op& o) { o.duration_ps += 2; o.curve_latency_ps += 1; }},
      {"phases", OpKind::comm_kernel, [](Op& o) { o.phases.push_back(Phase{{}, {}, 1, 0, false}); }},
      {"curve_sends", OpKind::comm_kernel, [](Op& o) { o.curve_sends.push_back(PeerBytes{0, 1}); }},
      {"kind", OpKind::tiled, [](Op& o) { o.kind = OpKind::persistent; }},
      {"stream", OpKind::tiled, [](Op& o) { o.stream = o.stream == 0 ? 1 : 0; o.deps.clear(); }},
  };
  for (const auto& [field, kind, change] : kind_changes) {
    INFO("field " << field);
    const TaskGraph g = on_kind(kind, change);
    CHECK_FALSE(g == base.graph);
    CHECK_FALSE(g.digest() == base.graph.digest());
  }
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
