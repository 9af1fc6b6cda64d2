// Metrics (design.md "Metrics"): one definition of exposed communication, speedup against the right
// baseline, no NaN when there is nothing to communicate, byte accounting that catches a scheme
// whose traffic differs from what its collectives need, and determinism.
#include <catch2/catch.hpp>

#include <cmath>

#include "sim/metrics.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/schemes/scheme.hpp"
#include "tests/schemes/ideal_profile.hpp"
#include "tests/support/profile_fixtures.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

HardwareProfile metrics_profile(int gpus) { return overlap::test::h100_like_profile("metrics", gpus, 0.5); }

Workload gemm_workload(int tp, Primitive p) { return sim::test::gemm_workload(tp, p, 4096, 4096, 4096); }

bool json_has_nan(const nlohmann::json& j) {
  if (j.is_number_float()) return !std::isfinite(j.get<double>());
  if (j.is_structured())
    for (const auto& v : j) if (json_has_nan(v)) return true;
  return false;
}

// A scheme whose byte accounting claims a transfer that never happens.
SchemeInfo lying_scheme() {
  SchemeInfo s;
  s.name = "lying";
  s.applies = [](const Workload&) { return true; };
  s.build = [](const BuildContext& ctx) {
    GraphBuilder b(ctx);
    const RankStreams st = b.add_compute_and_comm_streams();
    b.add_copy(0, st.comm[0], 0, 1, 1 << 20, "copy");
    b.add_required_bytes(1, 0, 4096);  // nothing moves 1 -> 0
    return b.finish("lies");
  };
  return s;
}

}  // namespace

TEST_CASE("exposed communication is latency minus compute-only latency", "[metrics]") {
  const HardwareProfile hw = metrics_profile(8);
  const Workload w = gemm_workload(8, Primitive::reduce_scatter);
  const std::vector<SchemeRequest> req = {{"no_overlap", nlohmann::json::object()},
                                          {"data_slicing", {{"chunks", 4}}}};
  const auto results = evaluate_all(req, w, hw, Fidelity::curve);
  REQUIRE(results.size() == 2);
  for (const SchemeResult& r : results) {
    INFO(r.scheme);
    CHECK(r.exposed_comm_ps == r.latency_ps - r.compute_only_ps);
    CHECK(r.comm_ps == workload_comm_ps(w, hw, Fidelity::curve));
    CHECK(r.overlap_efficiency_raw ==
          Approx(1.0 - static_cast<double>(r.exposed_comm_ps) / static_cast<double>(r.comm_ps)));
    CHECK(r.pct_of_bound == Approx(100.0 * static_cast<double>(r.bound_ps) / static_cast<double>(r.latency_ps)));
    CHECK(r.utilization.size() == 8);
    CHECK(r.utilization[0].sm > 0);
    CHECK(r.utilization[0].sm <= 1.0);
  }
  CHECK(results[0].speedup_vs_no_overlap == 1.0);
  CHECK(results[1].speedup_vs_no_overlap ==
        Approx(static_cast<double>(results[0].latency_ps) / static_cast<double>(results[1].latency_ps)));
  CHECK(results[0].sms_lost_to_comm == hw.comm.channels);
}

TEST_CASE("speedup baseline: no_overlap for layers, tp_baseline for decode, evaluated when not asked", "[metrics]") {
  const HardwareProfile hw = metrics_profile(4);
  Workload w;
  w.kind = WorkloadKind::decode_stack;
  w.tp = 4;
  DecodeStack d;
  d.layers = 4;
  d.d_model = 2048;
  d.d_ffn = 8192;
  d.heads = 16;
  d.kv_heads = 4;
  d.allreduce_us = 5.0;
  w.shape = d;
  CHECK(baseline_scheme_for(w) == "tp_baseline");
  CHECK(baseline_scheme_for(gemm_workload(4, Primitive::all_reduce)) == "no_overlap");
  const auto only_dtp = evaluate_all({{"dtp", {{"delta", 2}}}}, w, hw, Fidelity::curve);
  REQUIRE(only_dtp.size() == 1);
  const auto both = evaluate_all({{"tp_baseline", nlohmann::json::object()}, {"dtp", {{"delta", 2}}}}, w, hw,
                                 Fidelity::curve);
  REQUIRE(both.size() == 2);
  CHECK(only_dtp[0].speedup_vs_no_overlap == Approx(static_cast<double>(both[0].latency_ps) /
                                                    static_cast<double>(both[1].latency_ps)));
  CHECK(only_dtp[0].speedup_vs_no_overlap > 1.0);
  // Layer schemes are skipped for a decode workload.
  CHECK(evaluate_all({{"data_slicing", nlohmann::json::object()}}, w, hw, Fidelity::curve).empty());
  CHECK_THROWS_AS(evaluate_all({{"no_such_scheme", nlohmann::json::object()}}, w, hw, Fidelity::curve),
                  std::invalid_argument);
}

TEST_CASE("nothing to communicate: no NaN, zero exposed", "[metrics]") {
  const HardwareProfile hw = metrics_profile(1);
  const Workload w = gemm_workload(1, Primitive::all_reduce);
  const auto results = evaluate_all({{"no_overlap", nlohmann::json::object()}, {"data_slicing", {{"chunks", 3}}}},
                                    w, hw, Fidelity::curve);
  REQUIRE(results.size() == 2);
  for (const SchemeResult& r : results) {
    CHECK(r.comm_ps == 0);
    CHECK(r.exposed_comm_ps == 0);
    CHECK(std::isfinite(r.overlap_efficiency));
    CHECK_FALSE(json_has_nan(to_json(r)));
  }
}

TEST_CASE("a byte accounting mismatch is an internal error", "[metrics]") {
  const HardwareProfile hw = metrics_profile(2);
  const Workload w = gemm_workload(2, Primitive::all_reduce);
  const nlohmann::json none = nlohmann::json::object();
  CHECK_THROWS_AS(evaluate(lying_scheme(), BuildContext{w, hw, none, Fidelity::curve}), InternalError);
  EvaluateOptions skip;
  skip.verify_bytes = false;
  CHECK_NOTHROW(evaluate(lying_scheme(), BuildContext{w, hw, none, Fidelity::curve}, skip));
}

TEST_CASE("evaluating twice gives identical results", "[metrics][determinism]") {
  const HardwareProfile hw = metrics_profile(4);
  const Workload w = gemm_workload(4, Primitive::all_reduce);
  for (const SchemeInfo& s : scheme_registry()) {
    if (s.applies && !s.applies(w)) continue;
    INFO(s.name);
    const nlohmann::json none = nlohmann::json::object();
    const SchemeResult a = evaluate(s, BuildContext{w, hw, none, Fidelity::curve});
    const SchemeResult b = evaluate(s, BuildContext{w, hw, none, Fidelity::curve});
    CHECK(to_json(a).dump() == to_json(b).dump());
  }
}
