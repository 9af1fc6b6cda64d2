// TransformerEngine userbuffers (sim/schemes/te_userbuffers.cpp) on the ideal profile: the methods run
// through async TP's and data slicing's builders with TE's knobs, so where the knobs coincide the
// graphs coincide and the latencies are equal to the picosecond:
//   - pipeline with num_splits = 1 and num_sm = NCCL's channel count is no_overlap (one slice: the
//     GEMM, then its collective);
//   - ring_exchange with use_ce (copy engine) is async TP's copy-engine Looped CollectiveEinsum on two
//     streams; with use_ce false and num_sm = k it is async TP's SM copies of copy_sms = k;
//   - bulk on a forward has nothing independent to overlap: no_overlap again.
// Whatever the method, the bytes every rank must send are no_overlap's (the same collectives, cut).
// set_sm_margin: the overlapped GEMM is a grid of exactly sm_count - num_sm CTAs per slot (TE's
// CommOverlapCore _math_sms), so a GEMM of exactly one full wave (132 tiles) takes two tile times.
#include <catch2/catch.hpp>

#include "ideal_profile.hpp"

#include "cost_model/gemm_model.hpp"
#include "cost_model/input_error.hpp"
#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "sim/node_builder.hpp"
#include "sim/schemes/scheme.hpp"

using namespace overlap;
using namespace overlap::sim;
using namespace overlap::sim::test;

namespace {

Workload mlp_workload(int tp) {
  Workload w;
  w.kind = "mlp_tpsp";
  w.tp = tp;
  w.shape = MlpTpSp{2048, 1024, 2048, true, DType::bf16};
  return w;
}

BuiltScheme build(const std::string& scheme, const Workload& w, const HardwareProfile& hw,
                  const nlohmann::json& params) {
  const SchemeInfo* s = find_scheme(scheme);
  REQUIRE(s);
  BuildContext ctx{w, hw, params, Fidelity::steps};
  return s->build(ctx);
}

Ps latency(const std::string& scheme, const Workload& w, const HardwareProfile& hw, const nlohmann::json& params) {
  const BuiltScheme b = build(scheme, w, hw, params);
  return run(b.graph, make_node(hw, w.tp)).makespan_ps;
}

Bytes total(const std::vector<std::vector<Bytes>>& m) {
  Bytes t = 0;
  for (const auto& row : m)
    for (Bytes b : row) t += b;
  return t;
}

std::vector<Workload> workloads() {
  return {gemm_workload(4, Primitive::reduce_scatter, 2048, 1024, 1024),
          gemm_workload(4, Primitive::all_gather, 2048, 1024, 1024), mlp_workload(4)};
}

}  // namespace

TEST_CASE("te_userbuffers pipeline with num_splits = 1 is no_overlap", "[te][closed_form]") {
  const HardwareProfile hw = ideal_profile(4, 1000, 8);
  for (const Workload& w : workloads()) {
    INFO(w.kind);
    const Ps none = latency("no_overlap", w, hw, nlohmann::json::object());
    // num_sm = the profile's NCCL channels: the collective holds what NCCL's would.
    CHECK(latency("te_userbuffers", w, hw, {{"method", "pipeline"}, {"num_splits", 1}, {"num_sm", 8}}) == none);
    CHECK(latency("te_userbuffers", w, hw, {{"method", "bulk"}, {"num_sm", 8}}) == none);
  }
}

TEST_CASE("te_userbuffers ring_exchange is async TP's Looped CollectiveEinsum with TE's knobs", "[te][closed_form]") {
  const HardwareProfile hw = ideal_profile(4, 1000, 8);
  for (const Workload& w : workloads()) {
    INFO(w.kind);
    CHECK(latency("te_userbuffers", w, hw, {{"method", "ring_exchange"}, {"use_ce", true}}) ==
          latency("async_tp", w, hw, {{"transport", "copy_engine"}, {"streams", 2}}));
    CHECK(latency("te_userbuffers", w, hw, {{"method", "ring_exchange"}, {"use_ce", false}, {"num_sm", 12}}) ==
          latency("async_tp", w, hw, {{"transport", "sm"}, {"streams", 2}, {"copy_sms", 12}}));
  }
}

TEST_CASE("te_userbuffers moves no_overlap's bytes whatever the method", "[te][bytes]") {
  const HardwareProfile hw = ideal_profile(4, 1000, 8);
  const SchemeInfo* te = find_scheme("te_userbuffers");
  REQUIRE(te);
  for (const Workload& w : workloads()) {
    const Bytes want = total(build("no_overlap", w, hw, nlohmann::json::object()).required_bytes);
    REQUIRE(want > 0);
    for (const char* method : {"ring_exchange", "pipeline", "bulk"})
      for (bool ce : {true, false}) {
        INFO(w.kind << " " << method << " use_ce=" << ce);
        const nlohmann::json p = {{"method", method}, {"use_ce", ce}, {"num_splits", 3}};
        CHECK(total(build("te_userbuffers", w, hw, p).required_bytes) == want);
        BuildContext ctx{w, hw, p, Fidelity::curve};
        CHECK_NOTHROW(evaluate(*te, ctx));  // the engine's byte accounting matches the graph's
      }
  }
}

TEST_CASE("te_userbuffers set_sm_margin takes exactly num_sm SMs from the GEMM", "[te][closed_form]") {
  const HardwareProfile hw = ideal_profile(2, 1000, 8);
  // 132 tiles of 128 x 128 over K = 1024: one full wave of 1 us on 132 SMs.
  const Workload w = gemm_workload(2, Primitive::reduce_scatter, 132 * 128, 128, 1024);
  const GemmPlan plan = plan_gemm(hw, overlap::GemmShape{132 * 128, 128, 1024, DType::bf16});
  REQUIRE(plan.tiles == 132);
  REQUIRE(plan.cta_ps == kPsPerUs);
  for (int num_sm : {1, 16, 66}) {
    INFO("num_sm " << num_sm);
    const nlohmann::json p = {{"method", "pipeline"}, {"num_splits", 1}, {"num_sm", num_sm}, {"set_sm_margin", true}};
    const BuiltScheme b = build("te_userbuffers", w, hw, p);
    int gemms = 0;
    for (const Op& op : b.graph.ops()) {
      if (op.name != "gemm") continue;
      ++gemms;
      CHECK(op.max_ctas == (hw.gpu.sm_count - num_sm) * plan.ctas_per_sm);
    }
    CHECK(gemms == 2);
    // 132 tiles on 132 - num_sm CTAs: two rounds of 1 us (num_sm < 66 leaves at most 131 per round).
    const Timeline t = run(b.graph, make_node(hw, 2));
    for (OpId i = 0; i < static_cast<OpId>(b.graph.ops().size()); ++i)
      if (b.graph.op(i).name == "gemm")
        CHECK(t.ops[static_cast<std::size_t>(i)].end_ps - t.ops[static_cast<std::size_t>(i)].start_ps == 2 * kPsPerUs);
  }
  // Without the margin the GEMM is an ordinary tiled kernel on every SM: one wave.
  const BuiltScheme plain = build("te_userbuffers", w, hw, {{"method", "pipeline"}, {"num_splits", 1}});
  for (const Op& op : plain.graph.ops())
    if (op.name == "gemm") CHECK(op.max_ctas == 0);
}

TEST_CASE("te_userbuffers applies to TP+SP linears, runs training steps and refuses what it does not model",
          "[te][params]") {
  const SchemeInfo* s = find_scheme("te_userbuffers");
  REQUIRE(s);
  CHECK_FALSE(s->backward.empty());
  CHECK(s->applies(mlp_workload(4)));
  CHECK_FALSE(s->applies(gemm_workload(4, Primitive::all_reduce, 4096, 1024, 1024)));
  CHECK_FALSE(s->applies(gemm_workload(1, Primitive::all_gather, 4096, 1024, 1024)));
  const HardwareProfile hw = ideal_profile(4, 1000, 8);
  const Workload w = mlp_workload(4);
  auto key_of = [&](const nlohmann::json& params) {
    BuildContext ctx{w, hw, params, Fidelity::curve};
    try {
      s->build(ctx);
    } catch (const InputError& e) {
      return e.key_path();
    }
    return std::string("none");
  };
  CHECK(key_of({{"atomic_gemm", true}}) == "params.atomic_gemm");
  CHECK(key_of({{"method", "split"}}) == "params.method");
  CHECK(key_of({{"num_sm", 0}}) == "params.num_sm");
  CHECK(key_of({{"num_sm", 132}}) == "params.num_sm");
  CHECK(key_of({{"cga_size", 2}, {"num_splits", 8}, {"method", "pipeline"}}) == "none");

  // A training step of every method: byte accounting holds (checked inside evaluate).
  Workload step = w;
  step.training.pass = Pass::step;
  REQUIRE(s->applies(step));
  for (const char* method : {"ring_exchange", "pipeline", "bulk"}) {
    INFO(method);
    const nlohmann::json p = {{"method", method}};
    BuildContext ctx{step, hw, p, Fidelity::curve};
    const SchemeResult r = evaluate(*s, ctx);
    CHECK(r.latency_ps > 0);
    CHECK(r.compute_only_ps <= r.latency_ps);
  }
}
