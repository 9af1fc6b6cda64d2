// GEMM tile/wave model.
#include <catch2/catch.hpp>

#include <cmath>

#include "cost_model/gemm_model.hpp"
#include "cost_model/gemm_roofline.hpp"
#include "cost_model/profile_loader.hpp"

using namespace overlap;

namespace {
HardwareProfile h100() {
  return load_profile("h100-sxm-8x-nvswitch", std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware");
}
}  // namespace

TEST_CASE("large GEMM: big tiles, waves, per-CTA time from peak", "[gemm]") {
  const HardwareProfile p = h100();
  const GemmPlan plan = plan_gemm(p, {8192, 8192, 8192, DType::bf16});
  CHECK(plan.tile_m == 256);
  CHECK(plan.tile_n == 128);
  CHECK(plan.tiles == 32 * 64);
  CHECK(plan.waves(132) == 16);            // ceil(2048 / 132)
  CHECK(plan.waves(130) == 16);
  CHECK(plan.waves(100) == 21);
  const double per_sm = 989.0 * 0.8 / 132;  // FLOP/ps
  CHECK(plan.cta_ps == static_cast<Ps>(std::ceil(2.0 * 256 * 128 * 8192 / per_sm)));
  CHECK_FALSE(plan.memory_bound);
  CHECK(gemm_time_ps(p, {8192, 8192, 8192, DType::bf16}) == 16 * plan.cta_ps);
}

TEST_CASE("small shapes use 128x128 tiles", "[gemm]") {
  const HardwareProfile p = h100();
  const GemmPlan plan = plan_gemm(p, {1024, 1024, 4096, DType::bf16});  // 256x128 would give 32 tiles < 132
  CHECK(plan.tile_m == 128);
  CHECK(plan.tile_n == 128);
  CHECK(plan.tiles == 64);
}

TEST_CASE("decode GEMV is weight streaming", "[gemm]") {
  const HardwareProfile p = h100();
  const GemmShape s{1, 8192, 8192, DType::bf16};
  const GemmPlan plan = plan_gemm(p, s);
  CHECK(plan.tile_m == 16);
  CHECK(plan.memory_bound);
  CHECK(plan.weight_bytes == 8192LL * 8192 * 2);
  CHECK(plan.memory_ps == transfer_ps(plan.weight_bytes, 3350 * 0.9));
  CHECK(gemm_time_ps(p, s) == plan.memory_ps);
}

TEST_CASE("calibrated entries and communication slowdown", "[gemm]") {
  HardwareProfile p = h100();
  GemmProfileEntry e;
  e.m = 4096;
  e.n = 4096;
  e.k = 4096;
  e.tile_m = 128;
  e.tile_n = 256;
  e.duration_us = 200;
  p.gemm_profiles.push_back(e);
  const GemmPlan plan = plan_gemm(p, {4096, 4096, 4096, DType::bf16});
  CHECK(plan.calibrated);
  CHECK(plan.tiles == 32 * 16);
  CHECK(plan.cta_ps == ps_from_us(50));  // 200 us over ceil(512 / 132) = 4 waves
  CHECK(gemm_comm_slowdown(p.gpu, 0) == 1.0);
  CHECK(gemm_comm_slowdown(p.gpu, 33) == Approx(1.125));  // 1 + 0.5 * 33/132
  // 99 SMs left: ceil(512 / 99) = 6 waves of 50 us * 1.125.
  CHECK(gemm_time_ps(p, {4096, 4096, 4096, DType::bf16}, 99) == 6 * ps_from_us(56.25));
  CHECK_THROWS_AS(plan_gemm(p, {0, 1, 1, DType::bf16}), std::invalid_argument);
  CHECK_THROWS_AS(plan_gemm(p, {1, 1, 1, DType::fp32}), std::invalid_argument);
}

TEST_CASE("co-resident CTAs share their SM's rate: same whole-GEMM time in full waves", "[gemm]") {
  HardwareProfile one = h100();
  HardwareProfile two = one;
  two.gpu.gemm_ctas_per_sm = 2;
  // 8192^3 on 256x128 tiles: 2048 tiles; 132 SMs x 2 slots = 264 per wave.
  const GemmShape s{8192, 8192, 8192, DType::bf16};
  const GemmPlan p1 = plan_gemm(one, s), p2 = plan_gemm(two, s);
  CHECK(p2.cta_ps == static_cast<Ps>(std::ceil(2.0 * 2.0 * 256 * 128 * 8192 / (989.0 * 0.8 / 132))));
  CHECK(p2.cta_ps >= 2 * p1.cta_ps - 1);
  CHECK(p2.cta_ps <= 2 * p1.cta_ps);
  CHECK(p2.waves(132) == 8);  // ceil(2048 / 264)
  CHECK(gemm_time_ps(two, s) == 8 * p2.cta_ps);
  // 2048 tiles are 15.5 waves of 132 and 7.76 of 264: both round up to the same SM-time.
  CHECK(std::abs(static_cast<double>(gemm_time_ps(two, s)) / static_cast<double>(gemm_time_ps(one, s)) - 1.0) < 1e-6);
}

TEST_CASE("CTA roofline: overhead plus the longer of tensor-core time and operand loads", "[gemm]") {
  const GemmRoofline r{5.0, 120.0, 4.0};
  // 128x128 over K = 4096: 4 tile-units of compute (20 us) vs 256 x 4096 x 2 B / 120 GB/s (17.48 us).
  CHECK(gemm_cta_us(r, 128, 128, 4096, 2, 1) == Approx(4.0 + 20.0));
  // 32x64: 2.5 us of compute (half a tile-unit), 96 x 4096 x 2 / 120e3 = 6.5536 us of loads.
  CHECK(gemm_cta_us(r, 32, 64, 4096, 2, 1) == Approx(4.0 + 6.5536));
  CHECK(gemm_cta_us(r, 32, 64, 4096, 2, 2) == Approx(4.0 + 2 * 6.5536));  // two CTAs share the SM
  CHECK(gemm_cta_us(GemmRoofline{5.0, 0.0, 0.0}, 32, 64, 4096, 2, 1) == Approx(2.5));  // loads not modelled
}

TEST_CASE("with the roofline, uncalibrated GEMMs take the tile that finishes first", "[gemm]") {
  HardwareProfile p = h100();
  p.gpu.gemm_tile_us = 5.0;
  p.gpu.gemm_sm_load_gbps = 120.0;
  p.gpu.gemm_cta_overhead_us = 4.0;
  const GemmRoofline r{5.0, 120.0, 4.0};
  // 128 x 2048 x 4096: a 32x64 tile gives 128 CTAs, one wave of 10.55 us; any taller or wider tile
  // leaves SMs idle and loads more per CTA (cuBLASLt chose 32x64 on the H100 too).
  const GemmPlan small = plan_gemm(p, {128, 2048, 4096, DType::bf16});
  CHECK(small.tile_m == 32);
  CHECK(small.tile_n == 64);
  CHECK(small.cta_ps == static_cast<Ps>(std::ceil(gemm_cta_us(r, 32, 64, 4096, 2, 1) * 1e6)));
  CHECK(gemm_time_ps(p, {128, 2048, 4096, DType::bf16}) == small.cta_ps);
  // A large GEMM gets a big tile (fewer bytes per FLOP: 160x192 here, 17 waves, just ahead of
  // 256x128's 16 waves of longer CTAs), and its time is waves x the roofline CTA.
  const GemmPlan big = plan_gemm(p, {8192, 8192, 8192, DType::bf16});
  CHECK(big.tile_m * big.tile_n >= 128 * 192);
  CHECK(big.waves(132) * gemm_cta_us(r, big.tile_m, big.tile_n, 8192, 2, 1) <= 16 * gemm_cta_us(r, 256, 128, 8192, 2, 1));
  CHECK(gemm_time_ps(p, {8192, 8192, 8192, DType::bf16}) == big.waves(132) * big.cta_ps);
  // The search is the minimum: no candidate beats it.
  for (int tm : {16, 32, 64, 96, 128, 160, 192, 256}) {
    for (int tn : {64, 128, 192, 256}) {
      if (tm * tn > 256 * 128) continue;
      const std::int64_t tiles = ((128 + tm - 1) / tm) * ((2048 + tn - 1) / tn);
      CHECK(static_cast<double>((tiles + 131) / 132) * gemm_cta_us(r, tm, tn, 4096, 2, 1) >= gemm_cta_us(r, 32, 64, 4096, 2, 1) - 1e-9);
    }
  }
}

TEST_CASE("full-rate SMs: tiles slow above the limit, a calibrated entry still gives its duration", "[gemm][saturation]") {
  HardwareProfile p = h100();
  p.gpu.gemm_comm_interference = 0;  // missing SMs are not communication here
  GemmProfileEntry e;
  e.m = e.n = e.k = 4096;
  e.tile_m = 128;
  e.tile_n = 256;
  e.duration_us = 200;
  p.gemm_profiles.push_back(e);
  const GemmShape s{4096, 4096, 4096, DType::bf16};
  // Not modelled: every factor is 1, and the entry is 4 equal waves.
  CHECK(gemm_saturation_factor(p.gpu, 132, 66) == 1.0);
  CHECK(plan_gemm(p, s).cta_ps == ps_from_us(50));

  p.gpu.gemm_full_rate_sms = 99;
  CHECK(gemm_saturation_factor(p.gpu, 132, 132) == 1.0);
  CHECK(gemm_saturation_factor(p.gpu, 132, 99) == Approx(0.75));
  CHECK(gemm_saturation_factor(p.gpu, 132, 8) == Approx(0.75));   // below the limit: the uncontended rate
  CHECK(gemm_saturation_factor(p.gpu, 66, 132) == Approx(132.0 / 99));
  CHECK(gemm_saturation_factor(p.gpu, 0, 132) == 1.0);            // no reference: never rescaled
  const GemmPlan plan = plan_gemm(p, s);
  // 512 tiles: 3 full waves on 132 SMs and a last of 116 tiles, which ran at 116/132 of a wave's
  // time: the 200 us are (3 + 116/132) waves, so a full wave is 200 x 132 / 512 = 51.5625 us.
  CHECK(plan.reference_sms == 132);
  CHECK(plan.cta_ps == 51'562'500);
  CHECK(gemm_time_ps(p, s) == ps_from_us(200));
  // On 99 SMs every wave runs uncontended (0.75 of a full-GPU wave): ceil(512 / 99) = 6 waves.
  CHECK(gemm_time_ps(p, s, 99) == 6 * 38'671'875);
  CHECK(gemm_time_ps(p, s, 64) == 8 * 38'671'875);
}
