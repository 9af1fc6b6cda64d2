// GEMM tile/wave model.
#include <catch2/catch.hpp>

#include <cmath>

#include "cost_model/gemm_model.hpp"
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
