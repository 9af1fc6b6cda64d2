#include "kernels/gemm/cublaslt_gemm.hpp"

#include <stdexcept>
#include <tuple>

#include "kernels/common/check.hpp"

namespace overlap::cuda {
namespace {

#include "kernels/gemm/lt_tiles.inc"

void check_lt(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + " failed: cublas status " + std::to_string(static_cast<int>(s)));
}

}  // namespace

LtGemm::LtGemm(cublasLtHandle_t handle, std::int64_t m, std::int64_t n, std::int64_t k, const std::string& dtype,
               OperandLayout layout)
    : handle_(handle), m_(m), n_(n), k_(k), dtype_(dtype) {
  cudaDataType_t in_t, out_t;
  if (dtype == "bf16") {
    in_t = CUDA_R_16BF;
    out_t = CUDA_R_16BF;
  } else if (dtype == "fp16") {
    in_t = CUDA_R_16F;
    out_t = CUDA_R_16F;
  } else if (dtype == "fp8") {
    in_t = CUDA_R_8F_E4M3;
    out_t = CUDA_R_16BF;
  } else {
    throw std::invalid_argument("LtGemm: dtype must be bf16, fp16 or fp8");
  }
  const bool fp8 = dtype == "fp8";
  if (fp8 && layout == OperandLayout::tn) throw std::invalid_argument("LtGemm: fp8 runs the nt layout only");
  if (fp8) layout = OperandLayout::nt;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLASLt's "A" is our B, its "B"
  // our A. A row-major r x c matrix is a column-major c x r one with leading dimension c, so our B
  // stored k x n is cuBLASLt's n x k untransposed, stored n x k (nt) it is k x n transposed; our A
  // stored m x k is its k x m untransposed, stored k x m (tn) it is m x k transposed.
  check_lt(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t ta = layout == OperandLayout::nt ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = layout == OperandLayout::tn ? CUBLAS_OP_T : CUBLAS_OP_N;
  check_lt(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "TRANSA");
  check_lt(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "TRANSB");
  if (layout == OperandLayout::nt) {
    check_lt(cublasLtMatrixLayoutCreate(&la_, in_t, k, n, k), "layout A");
  } else {
    check_lt(cublasLtMatrixLayoutCreate(&la_, in_t, n, k, n), "layout A");
  }
  if (layout == OperandLayout::tn) {
    check_lt(cublasLtMatrixLayoutCreate(&lb_, in_t, m, k, m), "layout B");
  } else {
    check_lt(cublasLtMatrixLayoutCreate(&lb_, in_t, k, m, k), "layout B");
  }
  check_lt(cublasLtMatrixLayoutCreate(&lc_, out_t, n, m, n), "layout C");
  CUDA_CHECK(cudaMalloc(&workspace_, workspace_bytes_));
  cublasLtMatmulPreference_t pref;
  check_lt(cublasLtMatmulPreferenceCreate(&pref), "preference");
  check_lt(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_,
                                                sizeof workspace_bytes_),
           "preference workspace");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  check_lt(cublasLtMatmulAlgoGetHeuristic(handle_, op_, la_, lb_, lc_, lc_, pref, 1, &result, &found), "heuristic");
  cublasLtMatmulPreferenceDestroy(pref);
  if (found < 1) throw std::runtime_error("cuBLASLt: no algorithm for " + dtype + " " + std::to_string(m) + "x" +
                                          std::to_string(n) + "x" + std::to_string(k));
  algo_ = result.algo;
  std::size_t written = 0;
  auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attr, int* out) {
    std::uint32_t v = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&algo_, attr, &v, sizeof v, &written) == CUBLAS_STATUS_SUCCESS) {
      *out = static_cast<int>(v);
    }
  };
  get(CUBLASLT_ALGO_CONFIG_ID, &info_.algo_id);
  get(CUBLASLT_ALGO_CONFIG_TILE_ID, &info_.tile_id);
  get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &info_.split_k);
  get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &info_.swizzle);
  get(CUBLASLT_ALGO_CONFIG_STAGES_ID, &info_.stages_id);
  get(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &info_.cluster_shape_id);
  std::tie(info_.cluster_m, info_.cluster_n) = lt_cluster_dims(info_.cluster_shape_id);
  for (const auto& t : kLtTiles) {
    if (t[0] == info_.tile_id) {
      info_.tile_n = t[1];  // cuBLASLt's rows are C^T's rows: our columns
      info_.tile_m = t[2];
    }
  }
}

std::pair<int, int> lt_cluster_dims(int id) {
  switch (id) {
    case CUBLASLT_CLUSTER_SHAPE_1x1x1: return {1, 1};
    case CUBLASLT_CLUSTER_SHAPE_2x1x1: return {2, 1};
    case CUBLASLT_CLUSTER_SHAPE_4x1x1: return {4, 1};
    case CUBLASLT_CLUSTER_SHAPE_1x2x1: return {1, 2};
    case CUBLASLT_CLUSTER_SHAPE_2x2x1: return {2, 2};
    case CUBLASLT_CLUSTER_SHAPE_4x2x1: return {4, 2};
    case CUBLASLT_CLUSTER_SHAPE_1x4x1: return {1, 4};
    case CUBLASLT_CLUSTER_SHAPE_2x4x1: return {2, 4};
    case CUBLASLT_CLUSTER_SHAPE_4x4x1: return {4, 4};
    case CUBLASLT_CLUSTER_SHAPE_8x1x1: return {8, 1};
    case CUBLASLT_CLUSTER_SHAPE_1x8x1: return {1, 8};
    default: return {0, 0};
  }
}

LtGemm::~LtGemm() {
  if (workspace_) cudaFree(workspace_);
  if (la_) cublasLtMatrixLayoutDestroy(la_);
  if (lb_) cublasLtMatrixLayoutDestroy(lb_);
  if (lc_) cublasLtMatrixLayoutDestroy(lc_);
  if (op_) cublasLtMatmulDescDestroy(op_);
}

void LtGemm::run(const void* a, const void* b, void* d, cudaStream_t stream) const {
  const float alpha = 1.0f, beta = 0.0f;
  check_lt(cublasLtMatmul(handle_, op_, &alpha, b, la_, a, lb_, &beta, d, lc_, d, lc_, &algo_, workspace_,
                          workspace_bytes_, stream),
           "cublasLtMatmul");
}

std::size_t LtGemm::input_bytes_a() const { return static_cast<std::size_t>(m_ * k_) * (dtype_ == "fp8" ? 1 : 2); }
std::size_t LtGemm::input_bytes_b() const { return static_cast<std::size_t>(k_ * n_) * (dtype_ == "fp8" ? 1 : 2); }
std::size_t LtGemm::output_bytes() const { return static_cast<std::size_t>(m_ * n_) * 2; }

std::string cublaslt_version_string() {
  const std::size_t v = cublasLtGetVersion();
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
}

}  // namespace overlap::cuda
