#pragma once
// One launch of a GEMM as a library runs it, for pricing traced kernels (calibrate/traces/
// gemm_pricing.hpp): TF32 math, a batched grid, split-K. Defined in gemm_model.cpp beside
// gemm_time_ps, whose plan and wave timing it reuses; `run` keeps gemm_time_ps.
#include <cstdint>
#include <optional>

#include "cost_model/gemm_model.hpp"

namespace overlap {

// TF32: fp32 operands on the tensor cores (cuBLAS with CUBLAS_TF32_TENSOR_OP_MATH, PyTorch with
// torch.backends.cuda.matmul.allow_tf32). Every datasheet the shipped profiles cite gives the dense
// TF32 tensor rate as half the dense 16-bit one (NVIDIA A100 datasheet: 156 vs 312 TFLOP/s; H100 SXM
// datasheet: 494.7 vs 989.4; H200: the same as H100; B200 (HGX B200 datasheet): 1.1 vs 2.25 PFLOP/s
// dense; RTX 4090 (Ada whitepaper, Appendix A): 82.6 vs 165.2; MI300X datasheet: 653.7 vs 1307.4),
// so the profile's TF32 rate is peak_tflops.bf16 (or fp16) / 2; nullopt without either.
std::optional<double> tf32_peak_tflops(const GpuSpec& gpu);

struct GemmLaunchOptions {
  std::int64_t batch = 1;  // strided-batched: `batch` problems of the shape in one grid
  bool split_k = false;    // may split K across CTAs when the tiles fill fewer than the SMs
  bool tf32 = false;       // fp32 operands on TF32 tensor cores (dtype must be fp32)
};

// Shortest K a split keeps: four 64-deep k-blocks, the depth of a multistage main loop's pipeline
// (CUTLASS's sm80 GEMMs keep 3-4 stages of 32-64 K in flight): a shorter split is all prologue.
inline constexpr std::int64_t kMinSplitK = 256;

struct GemmLaunch {
  std::int64_t batch = 1, split_k = 1;
  GemmPlan plan;           // one problem's plan over K / split_k (TF32: at the TF32 rate)
  std::int64_t ctas = 0;   // plan.tiles * batch * split_k
  std::int64_t waves = 0;  // ceil(ctas / (sm_count * ctas_per_sm))
  Ps compute_ps = 0;       // waves * plan.cta_ps
  Ps memory_ps = 0;        // batch * the full-K weight bytes over HBM (as plan_gemm's memory_ps)
  Ps partials_ps = 0;      // split-K: batch * split_k * m * n fp32 partial sums written over HBM
  Ps time_ps = 0;          // max(compute, memory) + partials; batch 1, no split: gemm_time_ps exactly
};

// One launch over all SMs. A batched launch is one grid of batch x tiles CTAs in waves, not `batch`
// GEMMs in a row (cublasGemmStridedBatchedEx, aten::bmm). With split_k and batch x tiles below the
// SM count, K is split s ways for the s in 1 .. min(SM slots / (batch x tiles), ceil(K / kMinSplitK))
// that finishes first (ties: the smaller s), as cuBLAS' heuristics pick split-K for small M x N and
// large K (cuBLAS documentation, cublasLtMatmulAlgoConfigAttributes_t CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
// the reduction of the partials is its own kernel (cuBLAS' splitKreduce_kernel) and not counted here.
// Throws as gemm_time_ps; std::invalid_argument for batch < 1, TF32 on a non-fp32 dtype or a profile
// with no TF32 rate.
GemmLaunch plan_gemm_launch(const HardwareProfile& profile, const GemmShape& shape, const GemmLaunchOptions& options);

}  // namespace overlap
