// interference_sm_copy / interference_copy_engine: a GEMM's duration beside an SM copy kernel of k
// CTAs (each CTA one SM), and beside copy-engine traffic (device to device, host to device): the
// numbers behind gpu.gemm_comm_interference and the HBM-sharing model. The copy is
// enqueued first on its own stream; the events bracket the GEMM alone. The SM copy is made long
// enough (about three GEMMs) to cover the GEMM; the copy-engine copy is a fixed 512 MiB, and the
// repetitions are not waited for, so those copies queue back to back beside the GEMMs (validate
// replays that loop, warm-up included).
#include <algorithm>
#include <cmath>

#include "calibrate/core/calibration_plan.hpp"
#include "calibrate/cuda/driver.hpp"
#include "kernels/common/buffers.hpp"
#include "kernels/common/timing.hpp"
#include "kernels/gemm/cublaslt_gemm.hpp"
#include "kernels/ops/ops.hpp"

namespace overlap::calibrate {

void bench_interference(Driver& d) {
  const bool want_sm = d.wants(bench::interference_sm_copy), want_ce = d.wants(bench::interference_copy_engine);
  if (!want_sm && !want_ce) return;
  const GemmConfig g{8192, 8192, 4096, "bf16"};
  cuda::DeviceBuffer<__nv_bfloat16> a(g.m * g.k), b(g.k * g.n), out(g.m * g.n);
  cuda::fill_random_bf16(a.get(), a.size(), 41, 1.0f, d.stream());
  cuda::fill_random_bf16(b.get(), b.size(), 42, 1.0f, d.stream());
  cuda::LtGemm gemm(d.lt(), g.m, g.n, g.k, g.dtype);
  const auto& info = gemm.info();
  auto run_gemm = [&] { gemm.run(a.get(), b.get(), out.get(), d.stream()); };
  const double alone = median_of(cuda::time_on_stream_us(d.stream(), 5, 20, run_gemm));
  const nlohmann::json base{{"m", g.m}, {"n", g.n}, {"k", g.k}, {"dtype", g.dtype}};
  auto derive = [&](const SampleStats& st, nlohmann::json& o) {
    // warmup: validate replays the loop (repetitions are not waited for, so copies queue up).
    o = {{"alone_us", alone}, {"slowdown", st.median / alone}, {"tile_m", info.tile_m}, {"tile_n", info.tile_n},
         {"warmup", d.options().warmup}};
  };
  cudaStream_t side;
  CUDA_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  const std::size_t copy_bytes = 64u << 20;
  cuda::DeviceBuffer<unsigned char> src(copy_bytes), dst(copy_bytes);
  CUDA_CHECK(cudaMemsetAsync(src.get(), 1, copy_bytes, side));
  if (want_sm) {
    for (int ctas : interference_ctas(d.sm_count())) {
      const double one = median_of(cuda::time_on_stream_us(side, 2, 5, [&] { cuda::sm_copy(dst.get(), src.get(), copy_bytes, ctas, 1, side); }));
      const int iters = std::max(1, static_cast<int>(std::ceil(3.0 * alone / one)));
      nlohmann::json cfg = base;
      cfg["copy_ctas"] = ctas;
      cfg["copy_bytes"] = copy_bytes * iters;
      d.measure(bench::interference_sm_copy, cfg, [&] {
        cuda::sm_copy(dst.get(), src.get(), copy_bytes, ctas, iters, side);
        run_gemm();
      }, derive, nullptr, 10);
      CUDA_CHECK(cudaStreamSynchronize(side));
    }
  }
  if (want_ce) {
    const std::size_t ce_bytes = 512u << 20;
    cuda::DeviceBuffer<unsigned char> big_src(ce_bytes), big_dst(ce_bytes);
    cuda::PinnedBuffer host(ce_bytes);
    for (const char* dir : {"d2d", "h2d", "d2h"}) {
      nlohmann::json cfg = base;
      cfg["direction"] = dir;
      cfg["copy_bytes"] = ce_bytes;
      d.measure(bench::interference_copy_engine, cfg, [&] {
        const std::string d_ = dir;
        if (d_ == "d2d") CUDA_CHECK(cudaMemcpyAsync(big_dst.get(), big_src.get(), ce_bytes, cudaMemcpyDeviceToDevice, side));
        if (d_ == "h2d") CUDA_CHECK(cudaMemcpyAsync(big_dst.get(), host.get(), ce_bytes, cudaMemcpyHostToDevice, side));
        if (d_ == "d2h") CUDA_CHECK(cudaMemcpyAsync(host.get(), big_src.get(), ce_bytes, cudaMemcpyDeviceToHost, side));
        run_gemm();
      }, derive, nullptr, 10);
      CUDA_CHECK(cudaStreamSynchronize(side));
    }
    // The other side of the same sharing: the D2D copy timed while GEMMs run beside it (on the side
    // stream, enough of them per repetition to outlast the copy three times over at its alone rate).
    // Whether HBM is shared max-min between the two needs both durations: the GEMM rows alone cannot
    // tell a copy that yields from one that takes its share.
    {
      auto copy = [&] { CUDA_CHECK(cudaMemcpyAsync(big_dst.get(), big_src.get(), ce_bytes, cudaMemcpyDeviceToDevice, d.stream())); };
      const double copy_alone = median_of(cuda::time_on_stream_us(d.stream(), 2, 5, copy));
      const int gemms = std::max(1, static_cast<int>(std::ceil(3.0 * copy_alone / alone)));
      nlohmann::json cfg = base;
      cfg["direction"] = "d2d";
      cfg["copy_bytes"] = ce_bytes;
      cfg["timed"] = "copy";
      cfg["gemms_beside"] = gemms;
      d.measure(bench::interference_copy_engine, cfg, [&] {
        for (int i = 0; i < gemms; ++i) gemm.run(a.get(), b.get(), out.get(), side);
        copy();
      }, [&](const SampleStats& st, nlohmann::json& o) {
        o = {{"alone_us", copy_alone}, {"slowdown", st.median / copy_alone}, {"gemm_alone_us", alone}, {"warmup", d.options().warmup}};
      }, nullptr, 10);
      CUDA_CHECK(cudaStreamSynchronize(side));
    }
  }
  CUDA_CHECK(cudaStreamDestroy(side));
}

}  // namespace overlap::calibrate
