#pragma once
// GEMM tile/wave model (design.md "The simulation model", GPU): a GEMM is a grid of output tiles
// (CTAs) dispatched onto SMs; its time is waves * per-CTA time when compute-bound, and weight bytes
// over HBM bandwidth when memory-bound (batch-1 decode GEMV streams the weights: delayed-tp-blog
// "Theoretical Exposed Wait-time"). The simulator dispatches CTAs itself; gemm_time_ps() is the
// closed form of the same model for tuners and closed-form predictors.
#include <cstdint>

#include "cost_model/hardware_profile.hpp"

namespace overlap {

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;  // C[m,n] = A[m,k] * B[k,n]; B is the weight
  DType dtype = DType::bf16;
};

struct GemmPlan {
  int tile_m = 128, tile_n = 128;
  std::int64_t tiles = 0;   // ceil(m / tile_m) * ceil(n / tile_n)
  int ctas_per_sm = 1;
  Ps cta_ps = 0;            // one CTA (output tile over all of K, ctas_per_sm of them sharing an SM) on an otherwise idle GPU
  // SMs busy with this GEMM's tiles when cta_ps was measured or fitted: its grid on the profile's
  // sm_count SMs, min(sm_count, ceil(tiles / ctas_per_sm)). gemm_saturation_factor() rescales
  // cta_ps from that to the SMs busy when it runs.
  int reference_sms = 0;
  bool calibrated = false;  // tile shape and cta_ps from a GemmProfileEntry
  bool memory_bound = false;  // memory_ps > compute time on all SMs
  Bytes weight_bytes = 0;   // k * n * dtype bytes
  double total_flop = 0;    // 2 m n k
  Ps memory_ps = 0;         // weight_bytes / (hbm_bandwidth * hbm_efficiency)

  // ceil(tiles / (sm_avail * ctas_per_sm)); 0 tiles -> 0 waves.
  std::int64_t waves(int sm_avail) const;
};

// Tile shape: the calibrated entry for (m, n, k, dtype) if the profile has one; otherwise, when the
// profile has the CTA roofline (gpu.gemm_sm_load_gbps > 0), the candidate tile with the fewest
// waves x roofline CTA time (gemm_roofline.hpp), and the CTA time is that roofline's; otherwise a
// cuBLAS/CUTLASS-like heuristic (FlashOverlap's CUTLASS configs use 128/256 x 128/256 tiles, facts.md
// "FlashOverlap's published implementation"): 256x128 (m >= n) or 128x256 when both m and n are at
// least 256 and the bigger tile still gives a full wave; for m < 128 a tile of max(16, m rounded up
// to a power of two) rows by 128; 128x128 otherwise, at the per-SM tensor-core rate.
// Throws std::invalid_argument for non-positive dims or a dtype with no peak_tflops.
GemmPlan plan_gemm(const HardwareProfile& profile, const GemmShape& shape);

// GpuSpec::gemm_full_rate_sms: how much longer a GEMM tile takes with `busy_sms` SMs of its physical
// GPU running GEMM tiles than with the `reference_sms` its CTA time was measured with,
// max(S, busy) / max(S, reference); 1 when S is 0 (not modelled) or the reference is unknown (0).
// Below 1 when fewer SMs are busy than at calibration (a GEMM confined to a partition).
double gemm_saturation_factor(const GpuSpec& gpu, int reference_sms, int busy_sms);
// SMs the last of plan.waves(sm_avail) waves holds: its remaining tiles over ctas_per_sm (0 tiles: 0).
int last_wave_sms(const GemmPlan& plan, int sm_avail);

// Per-CTA slowdown while `busy_sms` SMs run communication kernels (GpuSpec::gemm_comm_interference).
double gemm_comm_slowdown(const GpuSpec& gpu, int busy_sms);
// One CTA's duration with `busy_sms` SMs taken by communication.
Ps cta_time_ps(const HardwareProfile& profile, const GemmPlan& plan, int busy_sms);

// Whole-GEMM time on `sms_available` SMs (the rest busy with communication): waves * cta_ps
// (slowed by the busy SMs) when compute-bound, max(that, memory_ps) when memory-bound. With
// gpu.gemm_full_rate_sms each wave's CTA time is rescaled by gemm_saturation_factor for the SMs
// that wave keeps busy (the last wave may hold fewer), as the engine does.
Ps gemm_time_ps(const HardwareProfile& profile, const GemmShape& shape, int sms_available);
Ps gemm_time_ps(const HardwareProfile& profile, const GemmShape& shape);  // all SMs

}  // namespace overlap
