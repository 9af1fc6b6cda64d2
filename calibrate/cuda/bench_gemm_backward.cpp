// gemm_backward: the training step's GEMMs of one Llama-3-70B TP 8 layer in the layouts the step runs
// them (forward nn, dgrad nt, wgrad tn) and each dgrad / wgrad shape again in nn
// (calibrate/core/calibration_plan.hpp training_gemms). The simulator prices a GEMM by its shape
// alone (sim/backward_shapes.hpp): these rows say whether the transposed operands of the backward
// cost what that assumes.
#include <algorithm>

#include "calibrate/core/calibration_plan.hpp"
#include "calibrate/cuda/driver.hpp"
#include "kernels/common/buffers.hpp"
#include "kernels/common/check.hpp"
#include "kernels/gemm/cublaslt_gemm.hpp"
#include "kernels/ops/ops.hpp"

namespace overlap::calibrate {

namespace {

cuda::OperandLayout layout_of(const std::string& name) {
  if (name == "nt") return cuda::OperandLayout::nt;
  if (name == "tn") return cuda::OperandLayout::tn;
  return cuda::OperandLayout::nn;
}

}  // namespace

void bench_gemm_backward(Driver& d) {
  if (!d.wants(bench::gemm_backward)) return;
  std::vector<TrainingGemm> gemms = training_gemms();
  if (d.options().quick) gemms.resize(std::min<std::size_t>(gemms.size(), 5));
  std::size_t a_elems = 0, b_elems = 0, d_elems = 0;
  for (const auto& g : gemms) {
    a_elems = std::max<std::size_t>(a_elems, g.shape.m * g.shape.k);
    b_elems = std::max<std::size_t>(b_elems, g.shape.k * g.shape.n);
    d_elems = std::max<std::size_t>(d_elems, g.shape.m * g.shape.n);
  }
  cuda::DeviceBuffer<__nv_bfloat16> a(a_elems), b(b_elems), out(d_elems);
  cuda::fill_random_bf16(a.get(), a_elems, 31, 1.0f, d.stream());
  cuda::fill_random_bf16(b.get(), b_elems, 32, 1.0f, d.stream());
  for (const auto& g : gemms) {
    const GemmConfig& s = g.shape;
    cuda::LtGemm gemm(d.lt(), s.m, s.n, s.k, s.dtype, layout_of(g.layout));
    const auto info = gemm.info();
    const double flop = 2.0 * s.m * s.n * s.k;
    d.measure(bench::gemm_backward,
              {{"m", s.m}, {"n", s.n}, {"k", s.k}, {"dtype", s.dtype}, {"layout", g.layout}, {"role", g.role}},
              [&] { gemm.run(a.get(), b.get(), out.get(), d.stream()); },
              [&](const SampleStats& st, nlohmann::json& derived) {
                derived = info;
                derived["tflops"] = flop / st.median / 1e6;
              });
  }
}

}  // namespace overlap::calibrate
