// grouped_gemm: one rank's MoE expert GEMMs (calibrate/core/calibration_plan.hpp grouped_gemm_cases),
// Y_e = X_e W_e with X_e the rows routed to local expert e, timed two ways: one grouped cuBLAS call
// (cublasGemmGroupedBatchedEx, one problem per expert: what the simulator models, a grouped GEMM whose
// waves come from the sum of every expert's tiles) and one cuBLASLt GEMM per expert back to back on one
// stream (a sequential expert loop). An expert with no rows has no GEMM in either.
#include <cublas_v2.h>

#include <algorithm>
#include <numeric>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "calibrate/core/calibration_plan.hpp"
#include "calibrate/cuda/driver.hpp"
#include "kernels/common/buffers.hpp"
#include "kernels/common/check.hpp"
#include "kernels/gemm/cublaslt_gemm.hpp"
#include "kernels/ops/ops.hpp"

namespace overlap::calibrate {

namespace {

void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + " failed: cublas status " + std::to_string(static_cast<int>(s)));
}

struct CublasHandle {
  cublasHandle_t h = nullptr;
  CublasHandle() { check_cublas(cublasCreate(&h), "cublasCreate"); }
  ~CublasHandle() {
    if (h) cublasDestroy(h);
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
};

// The grouped call's arguments for one case: problem e is row-major Y_e[rows_e, n] = X_e[rows_e, k]
// W_e[k, n], i.e. column-major Y_e^T = W_e^T X_e^T: cuBLAS's m = n, n = rows_e, A = W_e (lda n),
// B = X_e (ldb k), C = Y_e (ldc n). The pointer arrays live on the device, the rest on the host.
struct GroupedArgs {
  std::vector<cublasOperation_t> trans;
  std::vector<int> m, n, k, lda, ldb, ldc, group_size;
  std::vector<float> alpha, beta;
  cuda::DeviceBuffer<const void*> a, b;
  cuda::DeviceBuffer<void*> c;
};

}  // namespace

void bench_grouped_gemm(Driver& d) {
  if (!d.wants(bench::grouped_gemm)) return;
  std::vector<GroupedGemmCase> cases = grouped_gemm_cases();
  if (d.options().quick) cases.resize(std::min<std::size_t>(cases.size(), 2));
  std::size_t a_elems = 0, b_elems = 0, c_elems = 0;
  for (const auto& c : cases) {
    const auto rows = static_cast<std::size_t>(std::accumulate(c.rows.begin(), c.rows.end(), std::int64_t{0}));
    a_elems = std::max<std::size_t>(a_elems, rows * c.k);
    b_elems = std::max<std::size_t>(b_elems, c.rows.size() * c.k * c.n);
    c_elems = std::max<std::size_t>(c_elems, rows * c.n);
  }
  cuda::DeviceBuffer<__nv_bfloat16> x(a_elems), w(b_elems), y(c_elems);
  cuda::fill_random_bf16(x.get(), a_elems, 41, 1.0f, d.stream());
  cuda::fill_random_bf16(w.get(), b_elems, 42, 1.0f, d.stream());
  std::string grouped_error;  // the first case the grouped call failed on: reported after the others ran
  CublasHandle cublas;
  check_cublas(cublasSetStream(cublas.h, d.stream()), "cublasSetStream");
  for (const auto& c : cases) {
    // Each expert's operands at its offsets: X_e and Y_e its rows' band, W_e its own k x n weight.
    std::vector<const void*> a_ptrs, b_ptrs;
    std::vector<void*> c_ptrs;
    std::vector<std::unique_ptr<cuda::LtGemm>> per_expert;
    GroupedArgs g;
    std::size_t row0 = 0;
    for (std::size_t e = 0; e < c.rows.size(); ++e) {
      const auto rows = static_cast<std::size_t>(c.rows[e]);
      if (rows > 0) {
        const __nv_bfloat16* xe = x.get() + row0 * c.k;
        const __nv_bfloat16* we = w.get() + e * c.k * c.n;
        __nv_bfloat16* ye = y.get() + row0 * c.n;
        a_ptrs.push_back(we);
        b_ptrs.push_back(xe);
        c_ptrs.push_back(ye);
        g.trans.push_back(CUBLAS_OP_N);
        g.m.push_back(static_cast<int>(c.n));
        g.n.push_back(static_cast<int>(rows));
        g.k.push_back(static_cast<int>(c.k));
        g.lda.push_back(static_cast<int>(c.n));
        g.ldb.push_back(static_cast<int>(c.k));
        g.ldc.push_back(static_cast<int>(c.n));
        g.group_size.push_back(1);
        g.alpha.push_back(1.0f);
        g.beta.push_back(0.0f);
        per_expert.push_back(std::make_unique<cuda::LtGemm>(d.lt(), static_cast<std::int64_t>(rows), c.n, c.k, "bf16"));
      }
      row0 += rows;
    }
    const int groups = static_cast<int>(g.m.size());
    if (groups == 0) continue;
    g.a = cuda::DeviceBuffer<const void*>(a_ptrs.size());
    g.b = cuda::DeviceBuffer<const void*>(b_ptrs.size());
    g.c = cuda::DeviceBuffer<void*>(c_ptrs.size());
    CUDA_CHECK(cudaMemcpy(g.a.get(), a_ptrs.data(), g.a.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(g.b.get(), b_ptrs.data(), g.b.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(g.c.get(), c_ptrs.data(), g.c.bytes(), cudaMemcpyHostToDevice));
    const std::int64_t total_rows = std::accumulate(c.rows.begin(), c.rows.end(), std::int64_t{0});
    const double flop = 2.0 * static_cast<double>(total_rows) * static_cast<double>(c.n) * static_cast<double>(c.k);
    const nlohmann::json config = {{"case", c.name}, {"n", c.n}, {"k", c.k}, {"dtype", "bf16"}, {"rows", c.rows}};
    auto with_form = [&](const char* form) {
      nlohmann::json out = config;
      out["form"] = form;
      return out;
    };
    auto tflops = [flop](const SampleStats& st, nlohmann::json& derived) { derived["tflops"] = flop / st.median / 1e6; };
    // The sequential loop first: a grouped call this cuBLAS refuses still leaves its rows.
    d.measure(bench::grouped_gemm, with_form("per_expert"),
              [&] {
                for (std::size_t i = 0; i < per_expert.size(); ++i) {
                  per_expert[i]->run(b_ptrs[i], a_ptrs[i], c_ptrs[i], d.stream());
                }
              },
              tflops);
    try {
      d.measure(bench::grouped_gemm, with_form("grouped"),
                [&] {
                  check_cublas(cublasGemmGroupedBatchedEx(cublas.h, g.trans.data(), g.trans.data(), g.m.data(), g.n.data(),
                                                          g.k.data(), g.alpha.data(), g.a.get(), CUDA_R_16BF, g.lda.data(),
                                                          g.b.get(), CUDA_R_16BF, g.ldb.data(), g.beta.data(), g.c.get(),
                                                          CUDA_R_16BF, g.ldc.data(), groups, g.group_size.data(),
                                                          CUBLAS_COMPUTE_32F),
                               "cublasGemmGroupedBatchedEx");
                },
                tflops);
    } catch (const std::exception& e) {
      if (grouped_error.empty()) grouped_error = c.name + ": " + e.what();
    }
  }
  if (!grouped_error.empty()) throw std::runtime_error("grouped cuBLAS call: " + grouped_error);
}

}  // namespace overlap::calibrate
