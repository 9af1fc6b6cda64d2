// delayed-tp-blog "Theoretical Exposed Wait-time" and flashoverlap-paper Sec. 6.4, on hand-computed cases.
#include <catch2/catch.hpp>

#include "cost_model/closed_forms.hpp"

using namespace overlap;

TEST_CASE("DTP family: tau_c below the streaming times", "[closed_forms]") {
  // N_L = 4, tau_c = 10, tau_att = 4, tau_mlp = 8 (tau_c above tau_att, below tau_att + tau_mlp).
  const WeightStreamingTimes t{4, 10, 4, 8};
  CHECK(exposed_tp_baseline_ps(t) == 80);  // 2 N_L tau_c
  CHECK(exposed_gptj_ps(t) == 40);         // N_L tau_c
  CHECK(exposed_pt_transformer_ps(t, 1) == 40);
  CHECK(exposed_pt_transformer_ps(t, 2) == 20);  // 1 of 2 MLP all-reduces kept
  CHECK(exposed_ladder_residual_ps(t) == 10 + 3 * (6 + 2));
  CHECK(exposed_dtp_ps(t, 1) == 3 * 6 + 4 * 2);
  CHECK(exposed_dtp_ps(t, 2) == 0);  // tau_c <= tau_att + tau_mlp: fully hidden
  CHECK(exposed_dtp_ps(t, 4) == 0);
}

TEST_CASE("DTP family: tau_c above the streaming times", "[closed_forms]") {
  const WeightStreamingTimes t{4, 30, 4, 8};
  CHECK(exposed_ladder_residual_ps(t) == 30 + 3 * (26 + 22));
  CHECK(exposed_dtp_ps(t, 1) == 3 * 26 + 4 * 22);
  CHECK(exposed_dtp_ps(t, 2) == (8 - 2) * (30 - 12));
  CHECK(exposed_dtp_ps(t, 4) == (8 - 4) * (30 - 24));
  CHECK(exposed_dtp_ps(t, 6) == 0);  // 3 * 12 = 36 >= 30
  CHECK_THROWS_AS(exposed_dtp_ps(t, 3), std::invalid_argument);
}

TEST_CASE("DTP on the blog's MI300X setting", "[closed_forms]") {
  // Architecture A1 (N_L = 24, d = 1024), fp8 (p = 1), v_b = 4 TB/s, tau_c = 0.7 us, L = 8:
  // tau_att = 4 * 1024^2 B / 32 B/ps = 131072 ps, tau_mlp = 262144 ps.
  const WeightStreamingTimes t = weight_streaming_times(24, 1024, 1, 8, 4000, ps_from_us(0.7));
  CHECK(t.tau_att_ps == 131072);
  CHECK(t.tau_mlp_ps == 262144);
  CHECK(exposed_tp_baseline_ps(t) == 48 * 700000);
  CHECK(exposed_dtp_ps(t, 2) == 46 * (700000 - 393216));
  CHECK(exposed_dtp_ps(t, 4) == 0);  // 2 * 393216 > 700000
}

TEST_CASE("FlashOverlap bound (Sec. 6.4) and no overlap", "[closed_forms]") {
  CHECK(no_overlap_ps(400, 50) == 450);
  // GEMM dominates: GEMM + last wave's communication.
  CHECK(flashoverlap_bound_ps(400, 50, 100, 20) == 420);
  // Communication dominates: first wave's GEMM + all communication.
  CHECK(flashoverlap_bound_ps(400, 450, 100, 150) == 550);
}
