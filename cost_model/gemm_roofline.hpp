#pragma once
// One GEMM CTA's time on its SM (design.md "The simulation model", GPU): a fixed part (filling the
// operand pipeline, the epilogue's stores) plus the longer of its tensor-core work and its operand
// loads, (tile_m + tile_n) x K elements from L2. The loads are what make small tiles slow: a
// 32x64 tile over K = 4096 does 1/16 of a 128x256 tile's FLOP but reads 1/4 of its bytes, so
// cuBLASLt's small-M GEMMs run at the per-SM load bandwidth, not the tensor-core rate (H100,
// calibrate/results/nvidia-h100-80gb-hbm3-vm, gemm_waves). ctas_per_sm co-resident CTAs share the
// SM's tensor cores and load port. Dependency-free: the calibration's profile writer fits the same
// formula that the GEMM model evaluates.
#include <algorithm>
#include <cstdint>

namespace overlap {

struct GemmRoofline {
  double tile_us = 0;      // one 128x128x1024 tile's tensor-core time on one SM (gpu.gemm_tile_us)
  double load_gbps = 0;    // one SM's operand load bandwidth (gpu.gemm_sm_load_gbps); 0 = not modelled
  double overhead_us = 0;  // fixed time per CTA (gpu.gemm_cta_overhead_us)
};

inline double gemm_cta_us(const GemmRoofline& r, int tile_m, int tile_n, std::int64_t k, int element_bytes, int ctas_per_sm) {
  const double flop_us = static_cast<double>(tile_m) * tile_n * static_cast<double>(k) / (128.0 * 128.0 * 1024.0) * r.tile_us;
  const double load_us =
      r.load_gbps > 0 ? static_cast<double>(tile_m + tile_n) * static_cast<double>(k) * element_bytes / (r.load_gbps * 1e3) : 0.0;
  return r.overhead_us + std::max(1, ctas_per_sm) * std::max(flop_us, load_us);
}

}  // namespace overlap
