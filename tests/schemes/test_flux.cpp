// FLUX (sim/schemes/flux.cpp) on the ideal profile. What must hold whatever the timings:
//   - the fused forms move what no_overlap's collectives move (the same bytes, sent tile by tile);
//   - compute-only <= latency <= no_overlap (fusion hides communication, never adds any on a profile
//     where a tile's signal is its only cost), and the latency is at least the GEMM alone;
//   - GEMM-RS on the copy engine holds no SMs for communication, on comm_sms CTAs exactly that many;
//   - with transfers_per_peer = tiles per peer block, every send follows its one tile: the exposed tail
//     is no longer than with coarser pieces.
#include <catch2/catch.hpp>

#include "ideal_profile.hpp"
#include "tests/support/scheme_fixtures.hpp"

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

// Large enough that every GEMM has many waves (a one-wave GEMM finishes all its tiles at once and
// leaves tile-level signalling nothing to overlap).
Workload mlp_workload(int tp) { return mlp_tpsp_workload(tp, 8192, 4096, 8192); }

SchemeResult eval(const std::string& scheme, const Workload& w, const HardwareProfile& hw, const nlohmann::json& p) {
  return evaluate_scheme(scheme, w, hw, p);
}
Bytes total(const std::vector<std::vector<Bytes>>& m) { return total_bytes(m); }

}  // namespace

TEST_CASE("flux: compute-only <= latency <= no_overlap, bytes conserved", "[flux][bounds]") {
  // Links slow enough that the collectives matter next to the GEMMs.
  const HardwareProfile hw = ideal_profile(4, 200, 8);
  const SchemeInfo* flux = find_scheme("flux");
  const SchemeInfo* none = find_scheme("no_overlap");
  REQUIRE(flux);
  REQUIRE(none);
  for (const Workload& w : {gemm_workload(4, Primitive::reduce_scatter, 4096, 1024, 1024),
                            gemm_workload(4, Primitive::all_gather, 4096, 1024, 1024), mlp_workload(4)}) {
    REQUIRE(flux->applies(w));
    for (int comm_sms : {0, 6}) {
      INFO(workload_kind_name(w.kind) << " comm_sms " << comm_sms);
      // The tile signal is FLUX's only cost on this profile; without it, fusion can only hide.
      const nlohmann::json p = {{"comm_sms", comm_sms}, {"tile_signal_overhead", 0.0}, {"transfers_per_peer", 8}};
      const SchemeResult f = eval("flux", w, hw, p);
      const SchemeResult n = eval("no_overlap", w, hw, nlohmann::json::object());
      INFO("flux " << f.latency_ps << " compute-only " << f.compute_only_ps << " no_overlap " << n.latency_ps);
      CHECK(f.compute_only_ps <= f.latency_ps);
      CHECK(f.latency_ps <= n.latency_ps);
      CHECK(f.latency_ps < n.latency_ps);  // some communication is hidden on this profile
      const SchemeResult d = eval("flux", w, hw, {{"comm_sms", comm_sms}});  // default 1 % signal
      CHECK(d.compute_only_ps <= d.latency_ps);
      CHECK(d.compute_only_ps > f.compute_only_ps);
      BuildContext cf{w, hw, p, Fidelity::steps};
      const nlohmann::json empty = nlohmann::json::object();
      BuildContext cn{w, hw, empty, Fidelity::steps};
      CHECK(total(flux->build(cf).required_bytes) == total(none->build(cn).required_bytes));
    }
  }
}

TEST_CASE("flux GEMM-RS: the GEMM alone bounds it below; comm SMs are exactly comm_sms", "[flux][closed_form]") {
  const HardwareProfile hw = ideal_profile(4, 1000, 8);
  const Workload w = gemm_workload(4, Primitive::reduce_scatter, 4096, 1024, 1024);
  const GemmPlan plan = plan_gemm(hw, overlap::GemmShape{4096, 1024, 1024, DType::bf16});
  REQUIRE(plan.cta_ps == kPsPerUs);
  // 256 tiles on 132 SMs: 2 waves of 1 us each, the signal adding 1 % to each tile.
  const Ps gemm_ps = 2 * kPsPerUs;
  const SchemeResult r0 = eval("flux", w, hw, {{"comm_sms", 0}, {"tile_signal_overhead", 0.0}});
  CHECK(r0.latency_ps >= gemm_ps);
  CHECK(r0.sms_lost_to_comm == 0);
  const SchemeResult r6 = eval("flux", w, hw, {{"comm_sms", 6}, {"tile_signal_overhead", 0.0}});
  CHECK(r6.sms_lost_to_comm == 6);
  // Finer pieces expose a smaller tail: per-tile sends (64 tiles per peer block) are no slower.
  const SchemeResult coarse = eval("flux", w, hw, {{"comm_sms", 0}, {"transfers_per_peer", 1}});
  const SchemeResult fine = eval("flux", w, hw, {{"comm_sms", 0}, {"transfers_per_peer", 64}});
  CHECK(fine.latency_ps <= coarse.latency_ps);
  // The signal cost lengthens the GEMM: compute-only grows with it.
  const SchemeResult costly = eval("flux", w, hw, {{"comm_sms", 0}, {"tile_signal_overhead", 0.5}});
  CHECK(costly.compute_only_ps > r0.compute_only_ps);
}

TEST_CASE("flux runs training steps and validates its params", "[flux][params]") {
  const SchemeInfo* s = find_scheme("flux");
  REQUIRE(s);
  CHECK_FALSE(s->backward.empty());
  CHECK_FALSE(s->applies(gemm_workload(4, Primitive::all_reduce, 4096, 1024, 1024)));
  const HardwareProfile hw = ideal_profile(4, 1000, 8);
  Workload step = mlp_workload(4);
  step.training.pass = Pass::step;
  REQUIRE(s->applies(step));
  for (const char* column : {"scheme", "bulk"}) {
    INFO(column);
    const SchemeResult r = eval("flux", step, hw, {{"column_backward", column}, {"tile_signal_overhead", 0.0}});
    const SchemeResult n = eval("no_overlap", step, hw, nlohmann::json::object());
    CHECK(r.compute_only_ps <= r.latency_ps);
    CHECK(r.latency_ps <= n.latency_ps);
  }
  auto key_of = [&](const nlohmann::json& params) { return refused_key(*s, mlp_workload(4), hw, params); };
  CHECK(key_of({{"tile_signal_overhead", -0.1}}) == "params.tile_signal_overhead");
  CHECK(key_of({{"comm_sms", 132}}) == "params.comm_sms");
  CHECK(key_of({{"transfers_per_peer", 0}}) == "params.transfers_per_peer");
  CHECK(key_of({{"comm_sms", 0}}) == "none");
}
