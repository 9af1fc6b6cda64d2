// The decode family of delayed-tp-blog ("Theoretical Exposed Wait-time") as task graphs: on an
// idealised node (HBM at exactly 1 B/ps, no launch overhead, a fixed tau_c) the simulated latency is
// weight streaming plus the blog's closed-form exposed wait-time (cost_model/closed_forms.hpp), in the
// regimes where the blog's per-module reasoning is exact; where it is not (a module's wait overlaps
// the next all-reduce), a hand-computed schedule shows the simulator's answer and that it is below
// the closed form.
#include <catch2/catch.hpp>

#include "cost_model/closed_forms.hpp"
#include "sim/metrics.hpp"
#include "sim/schemes/decode_stack.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/workload_shapes.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

HardwareProfile decode_ideal_profile(int gpus) {
  HardwareProfile h;
  h.name = "ideal-decode";
  h.gpu.sm_count = 132;
  h.gpu.peak_tflops["bf16"] = 1000;
  h.gpu.peak_tflops["fp8"] = 2000;
  h.gpu.gemm_comm_interference = 0;
  h.gpu.hbm_bandwidth_gbps = 1000;  // 1 byte per picosecond: streaming times are exact
  h.gpu.hbm_efficiency = 1;
  h.launch.host_us = 0;
  h.launch.gap_us = 0;
  h.fabric.topology = "nvswitch";
  h.fabric.num_gpus = gpus;
  h.fabric.links["nvlink"] = LinkClass{"nvlink", 450, 0};
  expand_topology(h.fabric);
  h.comm.channels = 8;
  return h;
}

// The blog's Architecture 2 width (d = 1536, 12 heads of 128) with a Llama-3 SwiGLU MLP of 8d/3:
// tau_att = 4 d^2 p / (v_b L), tau_mlp = 8 d^2 p / (v_b L) exactly.
Workload decode_workload(int layers, double tau_c_us) {
  Workload w;
  w.kind = WorkloadKind::decode_stack;
  w.tp = 4;
  DecodeStack d;
  d.layers = layers;
  d.d_model = 1536;
  d.d_ffn = 4096;
  d.heads = 12;
  d.kv_heads = 12;
  d.dtype = DType::fp8;
  d.allreduce_us = tau_c_us;
  w.shape = d;
  return w;
}

SchemeResult run_scheme(const std::string& name, const Workload& w, const HardwareProfile& hw,
                        const nlohmann::json& params = nlohmann::json::object()) {
  const SchemeInfo* s = find_scheme(name);
  REQUIRE(s != nullptr);
  return evaluate(*s, BuildContext{w, hw, params, Fidelity::curve});
}

// An all-reduce reads and writes HBM too (its few kilobytes as flows): where it
// overlaps a module's weight streaming it slows it by a few picoseconds, which the blog's idealisation
// (streaming alone on HBM) leaves out. At most this much per all-reduce of the run.
constexpr Ps kHbmSlackPerAllReduce = 4;

bool within_hbm_slack(Ps actual, Ps expected, int all_reduces) {
  return actual >= expected && actual <= expected + kHbmSlackPerAllReduce * all_reduces;
}

}  // namespace

TEST_CASE("decode streaming times are the blog's 4 d^2 p / (v_b L) and 8 d^2 p / (v_b L)", "[decode]") {
  const HardwareProfile hw = decode_ideal_profile(4);
  const Workload w = decode_workload(4, 1.0);
  const DecodeTimes t = decode_times(std::get<DecodeStack>(w.shape), 4, hw);
  const WeightStreamingTimes blog = weight_streaming_times(4, 1536, 1, 4, 1000, ps_from_us(1.0));
  CHECK(t.tau_att_ps == 4 * 1536 * 1536 / 4);
  CHECK(t.tau_mlp_ps == 8 * 1536 * 1536 / 4);
  CHECK(t.tau_att_ps == blog.tau_att_ps);
  CHECK(t.tau_mlp_ps == blog.tau_mlp_ps);
  CHECK(t.tau_c_ps == kPsPerUs);
}

TEST_CASE("decode family latency = weight streaming + the closed-form exposed wait", "[decode][closed_form]") {
  const HardwareProfile hw = decode_ideal_profile(4);
  const int layers = 6;
  // tau_att = 2.36 us, tau_mlp = 4.72 us. tau_c below both, between them, above both.
  for (double tau_c_us : {1.0, 3.0, 8.0}) {
    INFO("tau_c " << tau_c_us << " us");
    const Workload w = decode_workload(layers, tau_c_us);
    const DecodeTimes t = decode_times(std::get<DecodeStack>(w.shape), 4, hw);
    const WeightStreamingTimes wst{layers, t.tau_c_ps, t.tau_att_ps, t.tau_mlp_ps};
    const Ps streaming = layers * (t.tau_att_ps + t.tau_mlp_ps);

    const SchemeResult base = run_scheme("tp_baseline", w, hw);
    CHECK(base.compute_only_ps == streaming);
    CHECK(base.latency_ps == streaming + exposed_tp_baseline_ps(wst));
    CHECK(base.exposed_comm_ps == exposed_tp_baseline_ps(wst));
    CHECK(base.comm_ps == 2 * layers * t.tau_c_ps);

    CHECK(run_scheme("no_overlap", w, hw).latency_ps == base.latency_ps);
    CHECK(run_scheme("gptj_parallel", w, hw).latency_ps == streaming + exposed_gptj_ps(wst));
    for (int t_d : {1, 2, 3}) {
      INFO("t_d " << t_d);
      CHECK(run_scheme("pt_transformer", w, hw, {{"t_d", t_d}}).latency_ps ==
            streaming + exposed_pt_transformer_ps(wst, t_d));
    }
    const SchemeResult none = run_scheme("no_comm", w, hw);
    CHECK(none.latency_ps == streaming);
    CHECK(none.exposed_comm_ps == 0);

    // Ladder Residual and DTP(1): exact while an exposed wait never follows another one (tau_c at
    // most tau_mlp: only the modules after an attention wait).
    if (t.tau_c_ps <= t.tau_mlp_ps) {
      CHECK(within_hbm_slack(run_scheme("ladder_residual", w, hw).latency_ps,
                             streaming + exposed_ladder_residual_ps(wst), 2 * layers));
      CHECK(within_hbm_slack(run_scheme("dtp", w, hw, {{"delta", 1}}).latency_ps, streaming + exposed_dtp_ps(wst, 1),
                             2 * layers));
    }
    // DTP(2k): exact while the delta modules hide tau_c (the regime the blog designs delta for).
    for (int delta : {2, 4}) {
      INFO("delta " << delta);
      if (t.tau_c_ps <= (delta / 2) * (t.tau_att_ps + t.tau_mlp_ps)) {
        const SchemeResult r = run_scheme("dtp", w, hw, {{"delta", delta}});
        CHECK(within_hbm_slack(r.latency_ps, streaming + exposed_dtp_ps(wst, delta), 2 * layers));
        CHECK(r.exposed_comm_ps <= kHbmSlackPerAllReduce * 2 * layers);
        CHECK(r.overlap_efficiency >= 1.0 - 1e-4);
      }
    }
  }
}

TEST_CASE("Ladder Residual with tau_c above both modules: hand-computed schedule", "[decode][hand]") {
  // N_L = 2, a = tau_att, m = tau_mlp, c = tau_c > m > a. Each all-reduce starts when its module ends:
  //   m0 [0, a]; AR0 [a, a+c]; m1 [a, a+m]; AR1 [a+m, a+m+c]
  //   m2 waits AR0: [a+c, 2a+c]; AR2 [2a+c, 2a+2c]
  //   m3 waits AR1: [a+m+c, a+2m+c]; AR3 [a+2m+c, a+2m+2c]; the LM head waits AR3.
  // Latency a + 2m + 2c. The blog's Delta_LR counts m3's wait as c - a although AR1 was already in
  // flight during m2's own wait, so its total (a + m + 3c) is c - m higher.
  const HardwareProfile hw = decode_ideal_profile(4);
  const Workload w = decode_workload(2, 8.0);
  const DecodeTimes t = decode_times(std::get<DecodeStack>(w.shape), 4, hw);
  const Ps a = t.tau_att_ps, m = t.tau_mlp_ps, c = t.tau_c_ps;
  REQUIRE(c > m);
  const SchemeResult r = run_scheme("ladder_residual", w, hw);
  CHECK(within_hbm_slack(r.latency_ps, a + 2 * m + 2 * c, 4));
  const WeightStreamingTimes wst{2, c, a, m};
  CHECK(2 * (a + m) + exposed_ladder_residual_ps(wst) == a + m + 3 * c);
  CHECK(r.latency_ps < 2 * (a + m) + exposed_ladder_residual_ps(wst));
}

TEST_CASE("DTP(2) with tau_c above two modules: the simulator never exceeds the closed form", "[decode]") {
  const HardwareProfile hw = decode_ideal_profile(4);
  for (int layers : {2, 5}) {
    const Workload w = decode_workload(layers, 20.0);
    const DecodeTimes t = decode_times(std::get<DecodeStack>(w.shape), 4, hw);
    const WeightStreamingTimes wst{layers, t.tau_c_ps, t.tau_att_ps, t.tau_mlp_ps};
    const Ps streaming = layers * (t.tau_att_ps + t.tau_mlp_ps);
    const SchemeResult r = run_scheme("dtp", w, hw, {{"delta", 2}});
    CHECK(r.latency_ps <= streaming + exposed_dtp_ps(wst, 2));
    CHECK(r.latency_ps > streaming);
  }
}

TEST_CASE("decode plans reject out-of-range parameters naming the key", "[decode][errors]") {
  CHECK_THROWS_WITH(dtp_plan(4, 0), Catch::Contains("params.delta"));
  CHECK_THROWS_WITH(dtp_plan(4, 9), Catch::Contains("params.delta"));
  CHECK_THROWS_WITH(pt_transformer_plan(4, 0), Catch::Contains("params.t_d"));
  CHECK_THROWS_WITH(tp_baseline_plan(0), Catch::Contains("workload.layers"));
  // The whole message: the key, its bound and what the bound is, and the value given.
  CHECK_THROWS_WITH(dtp_plan(4, 9), "params.delta: must be in [1, 2 * layers = 8] (got 9)");
  CHECK_THROWS_WITH(pt_transformer_plan(4, 5), "params.t_d: must be in [1, layers = 4] (got 5)");
  // layers is checked before the parameter that it bounds.
  CHECK_THROWS_WITH(dtp_plan(0, 1), Catch::Contains("workload.layers"));
  CHECK_THROWS_WITH(pt_transformer_plan(0, 1), Catch::Contains("workload.layers"));
}
