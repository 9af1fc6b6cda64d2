// gpu.peak_clock_mhz and gpu.sustained_clock_mhz: the SM clock the compute rates hold at and the one a
// job sustains under its power limit scale every SM-side GEMM rate by sustained / peak; HBM streaming
// keeps its rate; bad values are refused naming the key.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "cost_model/gemm_model.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/profile_loader.hpp"

using namespace overlap;

namespace {

const std::string kClockHardwareDir = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";

HardwareProfile clocked_h100(const std::vector<std::string>& sets) {
  return load_profile("h100-sxm-8x-nvswitch", kClockHardwareDir, sets);
}

// A GPU whose per-SM rate is exactly 1 FLOP/ps at its peak clock (100 SMs, 100 TFLOP/s, efficiency 1),
// so CTA times are integers before and after halving the clock.
HardwareProfile unit_rate_gpu(double peak_mhz, double sustained_mhz) {
  HardwareProfile p = clocked_h100({});
  p.gpu.sm_count = 100;
  p.gpu.peak_tflops = {{"bf16", 100.0}};
  p.gpu.gemm_efficiency = 1.0;
  p.gpu.gemm_full_rate_sms = 0;
  p.gpu.peak_clock_mhz = peak_mhz;
  p.gpu.sustained_clock_mhz = sustained_mhz;
  return p;
}

}  // namespace

TEST_CASE("sustained clock: a compute-bound GEMM takes exactly peak / sustained longer", "[gemm][clock]") {
  // Exact: a 256x128 tile over K = 1024 is 2^26 FLOP, at 1 FLOP/ps 2^26 ps a CTA; at half the clock
  // the rate is 0.5 FLOP/ps (a power of two, no rounding) and a CTA 2^27 ps. 4096 x 4096 is 512 such
  // tiles, 6 waves on 100 SMs, at either clock.
  const GemmShape s{4096, 4096, 1024, DType::bf16};
  const HardwareProfile boost = unit_rate_gpu(1980, 0);
  const HardwareProfile held = unit_rate_gpu(1980, 990);
  const GemmPlan a = plan_gemm(boost, s), b = plan_gemm(held, s);
  CHECK(a.tile_m == b.tile_m);
  CHECK(a.tile_n == b.tile_n);
  CHECK(a.cta_ps == (Ps{1} << 25) * a.ctas_per_sm * a.tile_m * a.tile_n / (128 * 128));
  CHECK(b.cta_ps == 2 * a.cta_ps);
  CHECK(gemm_time_ps(held, s) == 2 * gemm_time_ps(boost, s));
  // A sustained clock with no peak clock to hold it against scales nothing (the loader refuses it).
  CHECK(plan_gemm(unit_rate_gpu(0, 990), s).cta_ps == a.cta_ps);
}

TEST_CASE("sustained clock: the H100 at 1755 of 1830 MHz, every path of the GEMM model", "[gemm][clock]") {
  const HardwareProfile boost = clocked_h100({});
  const HardwareProfile held = clocked_h100({"gpu.peak_clock_mhz=1830", "gpu.sustained_clock_mhz=1755"});
  const double ratio = 1830.0 / 1755.0;
  const GemmShape big{8192, 8192, 8192, DType::bf16};
  // The CTA time is ceil(FLOP / rate) ps: within 1 ps of the exact ratio per CTA, so per wave.
  const GemmPlan a = plan_gemm(boost, big), b = plan_gemm(held, big);
  CHECK(std::abs(static_cast<double>(b.cta_ps) - ratio * static_cast<double>(a.cta_ps)) <= 1.0);
  const double waves = static_cast<double>(a.waves(boost.gpu.sm_count));
  CHECK(std::abs(static_cast<double>(gemm_time_ps(held, big)) - ratio * static_cast<double>(gemm_time_ps(boost, big))) <=
        waves);
  // A decode GEMV streams its weights from HBM, whose clock the SM clock does not set: unchanged.
  const GemmShape gemv{1, 8192, 8192, DType::bf16};
  REQUIRE(plan_gemm(held, gemv).memory_bound);
  CHECK(gemm_time_ps(held, gemv) == gemm_time_ps(boost, gemv));
  CHECK(streaming_kernel_ps(held, 1 << 30) == streaming_kernel_ps(boost, 1 << 30));

  // A calibrated GEMM (its duration measured at the peak clock) scales the same way.
  HardwareProfile cal_boost = boost, cal_held = held;
  const GemmProfileEntry entry{8192, 8192, 8192, DType::bf16, 256, 128, 1400.0, {}};
  cal_boost.gemm_profiles = {entry};
  cal_held.gemm_profiles = {entry};
  const GemmPlan ca = plan_gemm(cal_boost, big), cb = plan_gemm(cal_held, big);
  REQUIRE(ca.calibrated);
  CHECK(std::abs(static_cast<double>(cb.cta_ps) - ratio * static_cast<double>(ca.cta_ps)) <= 1.0);

  // The CTA roofline: tensor-core time, operand loads and the fixed part all in SM clocks, so the
  // tile choice holds and the CTA time scales.
  HardwareProfile roof_boost = boost, roof_held = held;
  for (HardwareProfile* p : {&roof_boost, &roof_held}) {
    p->gpu.gemm_sm_load_gbps = 60;
    p->gpu.gemm_cta_overhead_us = 1.5;
  }
  const GemmShape skinny{64, 8192, 4096, DType::bf16};
  const GemmPlan ra = plan_gemm(roof_boost, skinny), rb = plan_gemm(roof_held, skinny);
  CHECK(ra.tile_m == rb.tile_m);
  CHECK(ra.tile_n == rb.tile_n);
  CHECK(std::abs(static_cast<double>(rb.cta_ps) - ratio * static_cast<double>(ra.cta_ps)) <= 1.0);
}

TEST_CASE("sustained clock: absent or equal to the peak clock changes nothing", "[gemm][clock]") {
  const GemmShape s{8192, 28672, 8192, DType::bf16};
  const Ps base = gemm_time_ps(clocked_h100({}), s);
  CHECK(gemm_time_ps(clocked_h100({"gpu.peak_clock_mhz=1830"}), s) == base);
  CHECK(gemm_time_ps(clocked_h100({"gpu.peak_clock_mhz=1830", "gpu.sustained_clock_mhz=1830"}), s) == base);
}

TEST_CASE("sustained clock: bad values are refused naming the key", "[gemm][clock][bad_input]") {
  auto refused = [](const std::vector<std::string>& sets, const std::string& key, const std::string& words) {
    try {
      (void)clocked_h100(sets);
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(e.key_path() == key);
      CHECK_THAT(e.what(), Catch::Contains(words));
    }
  };
  refused({"gpu.sustained_clock_mhz=1700"}, "gpu.sustained_clock_mhz", "needs peak_clock_mhz");
  refused({"gpu.peak_clock_mhz=1830", "gpu.sustained_clock_mhz=2500"}, "gpu.sustained_clock_mhz",
          "above the GPU's maximum clock_mhz (1980 MHz)");
  refused({"gpu.peak_clock_mhz=0.5"}, "gpu.peak_clock_mhz", "at least 1 MHz");
  refused({"gpu.peak_clock_mhz=1830", "gpu.sustained_clock_mhz=-5"}, "gpu.sustained_clock_mhz", "");
  refused({"gpu.peak_clock_mhz=1830", "gpu.sustained_clock_mhz=nan"}, "gpu.sustained_clock_mhz", "");
}
