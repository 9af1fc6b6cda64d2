#include "cost_model/gemm_model.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>

#include "cost_model/gemm_launch.hpp"
#include "cost_model/gemm_roofline.hpp"

namespace overlap {
namespace {


const GemmProfileEntry* find_calibrated(const HardwareProfile& p, const GemmShape& s) {
  for (const auto& e : p.gemm_profiles) {
    if (e.m == s.m && e.n == s.n && e.k == s.k && e.dtype == s.dtype && e.duration_us > 0) return &e;
  }
  return nullptr;
}

// "GEMM 16777216 x 16777216 x 16777216 (bf16)": the GEMM a RangeError is about.
std::string shape_text(const GemmShape& s) {
  return "GEMM " + std::to_string(s.m) + " x " + std::to_string(s.n) + " x " + std::to_string(s.k) + " (" +
         dtype_name(s.dtype) + ")";
}

Ps gemm_time_unchecked(const HardwareProfile& profile, const GemmShape& shape, int sms_available);

// FLOP per picosecond one SM sustains on a large compute-bound GEMM, at the clock the job holds
// (GpuSpec::compute_clock_ratio: the tensor cores do a fixed number of FLOP per SM clock).
double flop_per_ps_per_sm(const GpuSpec& gpu, DType dtype) {
  if (gpu.gemm_tile_us > 0) return 2.0 * 128 * 128 * 1024 / (gpu.gemm_tile_us * 1e6) * gpu.compute_clock_ratio();
  auto it = gpu.peak_tflops.find(dtype_name(dtype));
  // fp16 and bf16 run at the same tensor-core rate on every GPU in facts.md; accept either.
  if (it == gpu.peak_tflops.end() && (dtype == DType::fp16 || dtype == DType::bf16)) {
    it = gpu.peak_tflops.find(dtype == DType::fp16 ? "bf16" : "fp16");
  }
  if (it == gpu.peak_tflops.end() || !(it->second > 0)) {
    throw std::invalid_argument(std::string("GEMM model: no peak_tflops for dtype ") + dtype_name(dtype));
  }
  if (gpu.sm_count <= 0) throw std::invalid_argument("GEMM model: sm_count must be positive");
  return flop_per_ps_from_tflops(it->second) * gpu.gemm_efficiency / gpu.sm_count * gpu.compute_clock_ratio();
}

// The per-SM rate as gemm_roofline.hpp's tile time (one 128x128x1024 tile, us). The operand loads
// (from L2) and the fixed part are counted in SM clocks too, so the whole CTA time scales with the
// clock and the tile choice does not change.
GemmRoofline roofline_of(const GpuSpec& gpu, DType dtype) {
  const double clock = gpu.compute_clock_ratio();
  return GemmRoofline{2.0 * 128 * 128 * 1024 / (flop_per_ps_per_sm(gpu, dtype) * 1e6), gpu.gemm_sm_load_gbps * clock,
                      gpu.gemm_cta_overhead_us / clock};
}

// Tile shapes cuBLASLt 13.1 chose for bf16 on an H100 over the calibration's grid and wave sweep
// (calibrate/results/nvidia-h100-80gb-hbm3-vm: 16x64 .. 256x128, 128x320 on the largest), as a
// candidate set: every tile_m x tile_n here up to the 256x128 register/shared-memory budget.
constexpr int kTileM[] = {16, 32, 64, 96, 128, 160, 192, 256};
constexpr int kTileN[] = {64, 128, 192, 256};

}  // namespace

std::int64_t GemmPlan::waves(int sm_avail) const {
  if (tiles == 0) return 0;
  if (sm_avail <= 0) throw std::invalid_argument("GemmPlan::waves: no SMs available");
  return ceil_div(tiles, static_cast<std::int64_t>(sm_avail) * ctas_per_sm);
}

namespace {

GemmPlan plan_gemm_unchecked(const HardwareProfile& profile, const GemmShape& s) {
  const GpuSpec& gpu = profile.gpu;
  GemmPlan plan;
  plan.ctas_per_sm = std::max(1, gpu.gemm_ctas_per_sm);
  plan.total_flop = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  plan.weight_bytes = checked_mul(checked_mul(s.k, s.n), dtype_bytes(s.dtype));
  const int slots = gpu.sm_count * plan.ctas_per_sm;

  const GemmProfileEntry* cal = find_calibrated(profile, s);
  const bool roofline = gpu.gemm_sm_load_gbps > 0;
  if (cal) {
    plan.tile_m = cal->tile_m;
    plan.tile_n = cal->tile_n;
  } else if (roofline) {
    // A library's heuristic picks the tile that finishes first: waves x CTA time over the
    // candidates. Small grids get small tiles (more SMs busy, each load-bound); large grids get big
    // tiles (fewer operand bytes per FLOP). Ties go to the larger tile, then the taller.
    const GemmRoofline r = roofline_of(gpu, s.dtype);
    double best_us = 0;
    for (int tm : kTileM) {
      for (int tn : kTileN) {
        if (tm * tn > 256 * 128) continue;
        const std::int64_t tiles = checked_mul(ceil_div(s.m, tm), ceil_div(s.n, tn));
        const double us = static_cast<double>(ceil_div(tiles, slots)) * gemm_cta_us(r, tm, tn, s.k, dtype_bytes(s.dtype), plan.ctas_per_sm);
        const bool better = best_us == 0 || us < best_us * (1 - 1e-9) ||
                            (us <= best_us * (1 + 1e-9) && tm * tn > plan.tile_m * plan.tile_n);
        if (better) {
          best_us = us;
          plan.tile_m = tm;
          plan.tile_n = tn;
        }
      }
    }
  } else if (s.m < 128) {
    // Skinny GEMMs (decode): libraries pick short tiles instead of padding M to 128; 16 is the
    // tensor-core MMA height (mma m16), so a batch-1 GEMV costs 16 rows, not 128.
    plan.tile_m = static_cast<int>(std::max<std::int64_t>(16, std::bit_ceil(static_cast<std::uint64_t>(s.m))));
  } else if (s.m >= 256 && s.n >= 256) {
    const int big_m = s.m >= s.n ? 256 : 128;
    const int big_n = s.m >= s.n ? 128 : 256;
    if (ceil_div(s.m, big_m) * ceil_div(s.n, big_n) >= slots) {
      plan.tile_m = big_m;
      plan.tile_n = big_n;
    }
  }
  plan.tiles = checked_mul(ceil_div(s.m, plan.tile_m), ceil_div(s.n, plan.tile_n));
  plan.reference_sms = static_cast<int>(std::min<std::int64_t>(gpu.sm_count, ceil_div(plan.tiles, plan.ctas_per_sm)));

  if (cal) {
    // Calibrated: the measured duration spread over the measured waves (design.md "Calibration").
    // With gemm_full_rate_sms a last wave on fewer SMs ran faster than the full ones: it counts as
    // gemm_saturation_factor of a wave, so the whole GPU reproduces the measured duration.
    plan.calibrated = true;
    const std::int64_t w = plan.waves(gpu.sm_count);
    const double wave_units =
        static_cast<double>(w - 1) + gemm_saturation_factor(gpu, plan.reference_sms, last_wave_sms(plan, gpu.sm_count));
    // A measured duration holds at peak_clock_mhz; the job's clock scales it like any SM-side rate.
    plan.cta_ps = std::max<Ps>(1, static_cast<Ps>(static_cast<double>(ps_from_us(cal->duration_us)) / wave_units /
                                                  gpu.compute_clock_ratio()));
  } else if (roofline) {
    plan.cta_ps = std::max<Ps>(1, checked_ps(std::ceil(
                                      gemm_cta_us(roofline_of(gpu, s.dtype), plan.tile_m, plan.tile_n, s.k, dtype_bytes(s.dtype), plan.ctas_per_sm) * 1e6)));
  } else {
    // A CTA computes its full tile (edge tiles are padded) over all of K, sharing its SM's tensor
    // cores with the ctas_per_sm - 1 others resident beside it: the SM's rate is per SM, not per CTA.
    const double cta_flop = 2.0 * plan.tile_m * plan.tile_n * static_cast<double>(s.k) * plan.ctas_per_sm;
    plan.cta_ps = std::max<Ps>(1, checked_ps(std::ceil(cta_flop / flop_per_ps_per_sm(gpu, s.dtype))));
  }
  if (gpu.hbm_bandwidth_gbps > 0) {
    plan.memory_ps = transfer_ps(plan.weight_bytes, gpu.hbm_bandwidth_gbps * gpu.hbm_efficiency);
  }
  plan.memory_bound = plan.memory_ps > checked_mul(plan.waves(gpu.sm_count), plan.cta_ps);
  return plan;
}

}  // namespace

GemmPlan plan_gemm(const HardwareProfile& profile, const GemmShape& s) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) throw std::invalid_argument("GEMM model: m, n, k must be positive");
  try {
    return plan_gemm_unchecked(profile, s);
  } catch (const RangeError& e) {
    // Every product of the shape (bytes, tiles, waves x CTA time) is checked; the message says which GEMM.
    throw RangeError(shape_text(s) + ": " + e.what());
  }
}

int last_wave_sms(const GemmPlan& plan, int sm_avail) {
  const std::int64_t w = plan.waves(sm_avail);
  if (w == 0) return 0;
  const std::int64_t last_tiles = plan.tiles - (w - 1) * static_cast<std::int64_t>(sm_avail) * plan.ctas_per_sm;
  return static_cast<int>(ceil_div(last_tiles, static_cast<std::int64_t>(plan.ctas_per_sm)));
}

double gemm_saturation_factor(const GpuSpec& gpu, int reference_sms, int busy_sms) {
  const double s = gpu.gemm_full_rate_sms;
  if (s <= 0 || reference_sms <= 0) return 1.0;
  return std::max(s, static_cast<double>(busy_sms)) / std::max(s, static_cast<double>(reference_sms));
}

double gemm_comm_slowdown(const GpuSpec& gpu, int busy_sms) {
  if (busy_sms <= 0 || gpu.sm_count <= 0) return 1.0;
  const double frac = std::min(1.0, static_cast<double>(busy_sms) / gpu.sm_count);
  return 1.0 + gpu.gemm_comm_interference * frac;
}

Ps cta_time_ps(const HardwareProfile& profile, const GemmPlan& plan, int busy_sms) {
  const double f = gemm_comm_slowdown(profile.gpu, busy_sms);
  return f == 1.0 ? plan.cta_ps : checked_ps(std::round(static_cast<double>(plan.cta_ps) * f));
}

Ps gemm_time_ps(const HardwareProfile& profile, const GemmShape& shape, int sms_available) {
  try {
    return gemm_time_unchecked(profile, shape, sms_available);
  } catch (const RangeError& e) {
    const std::string what = e.what();
    throw RangeError(what.rfind("GEMM ", 0) == 0 ? what : shape_text(shape) + ": " + what);
  }
}

namespace {

Ps gemm_time_unchecked(const HardwareProfile& profile, const GemmShape& shape, int sms_available) {
  const GemmPlan plan = plan_gemm(profile, shape);
  const int busy = std::max(0, profile.gpu.sm_count - sms_available);
  const Ps cta = cta_time_ps(profile, plan, busy);
  const std::int64_t waves = plan.waves(sms_available);
  Ps compute = checked_mul(waves, cta);
  if (profile.gpu.gemm_full_rate_sms > 0 && waves > 0 && plan.memory_ps <= compute) {
    // Full waves keep every available SM busy; the last holds the SMs its remaining tiles need.
    auto scaled = [&](int sms) {
      return checked_ps(std::ceil(static_cast<double>(cta) * gemm_saturation_factor(profile.gpu, plan.reference_sms, sms) - 1e-6));
    };
    compute = checked_add(checked_mul(waves - 1, scaled(sms_available)), scaled(last_wave_sms(plan, sms_available)));
  }
  return std::max(compute, plan.memory_ps);
}

}  // namespace

Ps gemm_time_ps(const HardwareProfile& profile, const GemmShape& shape) {
  return gemm_time_ps(profile, shape, profile.gpu.sm_count);
}

}  // namespace overlap

namespace overlap {

std::optional<double> tf32_peak_tflops(const GpuSpec& gpu) {
  for (const char* t : {"bf16", "fp16"}) {
    const auto it = gpu.peak_tflops.find(t);
    if (it != gpu.peak_tflops.end() && it->second > 0) return it->second / 2;
  }
  return std::nullopt;
}

namespace {

// One problem of `shape` over K / split, as the launch runs it (`hw` already at the TF32 rate).
GemmLaunch launch_with_split(const HardwareProfile& hw, const GemmShape& shape, std::int64_t batch, std::int64_t split) {
  GemmLaunch l;
  l.batch = batch;
  l.split_k = split;
  l.plan = plan_gemm(hw, GemmShape{shape.m, shape.n, ceil_div(shape.k, split), shape.dtype});
  const std::int64_t slots = static_cast<std::int64_t>(hw.gpu.sm_count) * l.plan.ctas_per_sm;
  l.ctas = checked_mul(checked_mul(l.plan.tiles, batch), split);
  l.waves = ceil_div(l.ctas, slots);
  l.compute_ps = checked_mul(l.waves, l.plan.cta_ps);
  if (hw.gpu.hbm_bandwidth_gbps > 0) {
    const double gbps = hw.gpu.hbm_bandwidth_gbps * hw.gpu.hbm_efficiency;
    l.memory_ps = transfer_ps(checked_mul(checked_mul(shape.k, shape.n), checked_mul(static_cast<std::int64_t>(dtype_bytes(shape.dtype)), batch)), gbps);
    if (split > 1) l.partials_ps = transfer_ps(checked_mul(checked_mul(checked_mul(shape.m, shape.n), 4), checked_mul(batch, split)), gbps);
  }
  l.time_ps = checked_add(std::max(l.compute_ps, l.memory_ps), l.partials_ps);
  if (batch == 1 && split == 1) l.time_ps = gemm_time_unchecked(hw, shape, hw.gpu.sm_count);
  return l;
}

}  // namespace

GemmLaunch plan_gemm_launch(const HardwareProfile& profile, const GemmShape& shape, const GemmLaunchOptions& options) {
  if (options.batch < 1) throw std::invalid_argument("GEMM model: batch must be at least 1");
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0) throw std::invalid_argument("GEMM model: m, n, k must be positive");
  HardwareProfile tf32;
  const HardwareProfile* hw = &profile;
  if (options.tf32) {
    if (shape.dtype != DType::fp32) throw std::invalid_argument("GEMM model: TF32 needs fp32 operands");
    const auto rate = tf32_peak_tflops(profile.gpu);
    if (!rate) throw std::invalid_argument("GEMM model: no TF32 rate (no peak_tflops for bf16 or fp16)");
    tf32 = profile;
    tf32.gpu.peak_tflops["fp32"] = *rate;  // fp32 operands (4 bytes) at the tensor rate
    hw = &tf32;
  }
  try {
    GemmLaunch best = launch_with_split(*hw, shape, options.batch, 1);
    const std::int64_t slots = static_cast<std::int64_t>(hw->gpu.sm_count) * best.plan.ctas_per_sm;
    const std::int64_t grid = best.ctas;  // batch x tiles without a split
    if (options.split_k && grid < hw->gpu.sm_count) {
      const std::int64_t max_split = std::min(slots / grid, ceil_div(shape.k, kMinSplitK));
      for (std::int64_t s = 2; s <= max_split; ++s) {
        GemmLaunch l = launch_with_split(*hw, shape, options.batch, s);
        if (l.time_ps < best.time_ps) best = l;
      }
    }
    return best;
  } catch (const RangeError& e) {
    const std::string what = e.what();
    throw RangeError(what.rfind("GEMM ", 0) == 0 ? what : shape_text(shape) + ": " + what);
  }
}

}  // namespace overlap
