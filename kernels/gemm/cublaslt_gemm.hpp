#pragma once
// cuBLASLt GEMMs for the calibration and the reference results of the schemes:
// C[m,n] = A[m,k] B[k,n] (row-major, B the weight), bf16 / fp16 inputs with fp32 accumulation and
// output of the same type, or fp8 e4m3 inputs with bf16 output (Hopper's TN form: the weight is
// stored transposed). The algorithm is the heuristic's first choice, and what it chose (tile,
// swizzle, split-K, stages) is read back with cublasLtMatmulAlgoConfigGetAttribute.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <utility>

namespace overlap::cuda {

// How the operands of row-major C[m,n] = op(A) op(B) are stored (the training step's three GEMMs of a
// linear Y = X W, Korthikanti et al. Sec. 4.2): nn the forward (A m x k, B k x n), nt the dgrad
// dX = dY W^T (B stored n x k: the weight as the forward reads it), tn the wgrad dW = X^T dY (A
// stored k x m: the saved input, tokens the reduction dimension).
enum class OperandLayout { nn, nt, tn };

struct LtAlgoInfo {
  int algo_id = -1;
  int tile_id = 0;
  int tile_m = 0, tile_n = 0;  // in the row-major C's terms (cuBLASLt's tile is of the column-major C^T)
  int split_k = 1;
  int swizzle = 0;
  int stages_id = 0;
  // CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID and its dimensions (0 x 0: AUTO or a shape not decoded,
  // the kernel picks at run time).
  int cluster_shape_id = 0;
  int cluster_m = 0, cluster_n = 0;
};

// The dimensions of a cublasLtClusterShape_t id ({0, 0} for AUTO or an id this table lacks).
std::pair<int, int> lt_cluster_dims(int cluster_shape_id);

class LtGemm {
 public:
  // dtype: "bf16", "fp16" or "fp8" (fp8 is always nt: Hopper's FP8 GEMM wants both operands
  // k-contiguous; layout tn is refused for it). Allocates its own workspace (32 MiB).
  LtGemm(cublasLtHandle_t handle, std::int64_t m, std::int64_t n, std::int64_t k, const std::string& dtype,
         OperandLayout layout = OperandLayout::nn);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // a: m x k (tn: stored k x m), b: k x n (nt and fp8: stored n x k), d: m x n; element types per dtype.
  void run(const void* a, const void* b, void* d, cudaStream_t stream) const;
  const LtAlgoInfo& info() const { return info_; }
  std::size_t input_bytes_a() const;
  std::size_t input_bytes_b() const;
  std::size_t output_bytes() const;

 private:
  cublasLtHandle_t handle_;
  std::int64_t m_, n_, k_;
  std::string dtype_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, lc_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 32u << 20;
  LtAlgoInfo info_;
};

std::string cublaslt_version_string();

}  // namespace overlap::cuda
