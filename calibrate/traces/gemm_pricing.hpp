#pragma once
// A traced GEMM kernel priced from its op's shape as the library ran it: the math it ran in (TF32 or
// not, read from the kernel's own name first), one launch for a batched GEMM, and split-K where the
// tiles leave SMs idle (cost_model/gemm_launch.hpp plan_gemm_launch).
#include <optional>
#include <string>

#include "calibrate/traces/trace_model.hpp"
#include "cost_model/gemm_launch.hpp"

namespace overlap::traces {

// What the tensor cores (or not) ran for an op's dtype.
enum class GemmMath : std::uint8_t {
  as_dtype,  // the op's dtype's own rate (bf16, fp16, fp8; fp32 on the SIMT cores)
  tf32,      // fp32 operands on TF32 tensor cores
};

// The math a kernel ran an op of `dtype` in. Only fp32 ops can run as TF32, and the kernel's name
// decides first: cuBLAS and CUTLASS name the operand type they compute in (`..._tf32f32_...`,
// `cutlass_80_tensorop_tf32_s1688gemm_...`) or the MMA shape (Ampere's TF32 MMA is m16n8k8, so an fp32
// op's `s1688gemm` kernel is TF32), and `sgemm` is the SIMT fp32 kernel. A name that says neither
// falls back to PyTorch's default, torch.backends.cuda.matmul.allow_tf32 = False since PyTorch 1.12
// (PyTorch documentation, "TensorFloat-32 (TF32) on Ampere (and later) devices"): fp32.
GemmMath gemm_math(const std::string& kernel, DType dtype);

struct GemmPrice {
  std::optional<double> ns;  // nullopt: not priced, `why` says why
  std::string why;
  GemmMath math = GemmMath::as_dtype;
  GemmLaunch launch;         // the launch priced (when ns)
};

// The kernel `kernel` running `shape` (the op's Input Dims; its dtype as PyTorch names it) on an idle
// GPU of `hw`: one launch of batch x tiles, split-K allowed, TF32 where gemm_math says.
GemmPrice price_gemm(const HardwareProfile& hw, const GemmShape& shape, const std::string& kernel);

}  // namespace overlap::traces
