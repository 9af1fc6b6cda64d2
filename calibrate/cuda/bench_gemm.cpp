// gemm, gemm_tile, gemm_waves: cuBLASLt durations over the shape grid with the algorithm the
// heuristic chose, the full-wave GEMM behind gemm_tile_us, and the wave profile (duration vs tile
// count: steps at multiples of the SM count). calibrate/core/calibration_plan.hpp lists the shapes.
#include <algorithm>
#include <chrono>

#include "calibrate/core/calibration_plan.hpp"
#include "calibrate/cuda/driver.hpp"
#include "kernels/common/buffers.hpp"
#include "kernels/common/check.hpp"
#include "kernels/gemm/cublaslt_gemm.hpp"
#include "kernels/ops/ops.hpp"

namespace overlap::calibrate {
namespace {

struct Operands {
  cuda::DeviceBuffer<unsigned char> a, b, d;
};

Operands operands_for(const std::vector<GemmConfig>& shapes, cudaStream_t s) {
  std::size_t a = 0, b = 0, d = 0;
  for (const auto& g : shapes) {
    a = std::max<std::size_t>(a, g.m * g.k * 2);
    b = std::max<std::size_t>(b, g.k * g.n * 2);
    d = std::max<std::size_t>(d, g.m * g.n * 2);
  }
  Operands o{cuda::DeviceBuffer<unsigned char>(a), cuda::DeviceBuffer<unsigned char>(b), cuda::DeviceBuffer<unsigned char>(d)};
  cuda::fill_random_bf16(reinterpret_cast<__nv_bfloat16*>(o.a.get()), a / 2, 11, 1.0f, s);
  cuda::fill_random_bf16(reinterpret_cast<__nv_bfloat16*>(o.b.get()), b / 2, 12, 1.0f, s);
  return o;
}

void fill_for(const GemmConfig& g, Operands& o, cudaStream_t s) {
  // fp8 reads the same bytes as e4m3: refill so the values are finite e4m3 numbers.
  if (g.dtype == "fp8") {
    cuda::fill_random_fp8(o.a.get(), g.m * g.k, 21, 1.0f, s);
    cuda::fill_random_fp8(o.b.get(), g.k * g.n, 22, 1.0f, s);
  } else {
    cuda::fill_random_bf16(reinterpret_cast<__nv_bfloat16*>(o.a.get()), g.m * g.k, 11, 1.0f, s);
    cuda::fill_random_bf16(reinterpret_cast<__nv_bfloat16*>(o.b.get()), g.k * g.n, 12, 1.0f, s);
  }
}

void time_one(Driver& d, const char* bench, const GemmConfig& g, Operands& o) {
  fill_for(g, o, d.stream());
  cuda::LtGemm gemm(d.lt(), g.m, g.n, g.k, g.dtype);
  const auto& info = gemm.info();
  const double flop = 2.0 * g.m * g.n * g.k;
  d.measure(bench, {{"m", g.m}, {"n", g.n}, {"k", g.k}, {"dtype", g.dtype}},
            [&] { gemm.run(o.a.get(), o.b.get(), o.d.get(), d.stream()); },
            [&](const SampleStats& st, nlohmann::json& out) {
              out = info;
              out["tflops"] = flop / st.median / 1e6;
            });
}

}  // namespace

void bench_gemm(Driver& d) {
  std::vector<GemmConfig> grid = gemm_grid();
  if (d.options().quick) grid.resize(std::min<std::size_t>(grid.size(), 6));
  const std::vector<GemmConfig> waves = gemm_wave_shapes(d.sm_count());
  std::vector<GemmConfig> tiles = {gemm_tile_shape(d.sm_count(), 4096), gemm_tile_shape(d.sm_count(), 8192)};
  std::vector<GemmConfig> all = grid;
  all.insert(all.end(), waves.begin(), waves.end());
  all.insert(all.end(), tiles.begin(), tiles.end());
  Operands o = operands_for(all, d.stream());
  // The GPU comes out of idle at a low clock and ramps up over the first busy second (clocks.csv of
  // 2026-11-23: 345 MHz idle, 1590-1980 MHz during the first grid rows, one of which then ran 8 %
  // slower than the same GEMM a second later). A second of the largest grid GEMM first, untimed,
  // so the first rows are measured at the clock the rest are.
  if (d.wants(bench::gemm) && !grid.empty()) {
    const GemmConfig& big = *std::max_element(grid.begin(), grid.end(), [](const GemmConfig& x, const GemmConfig& y) {
      return x.m * x.n * x.k < y.m * y.n * y.k;
    });
    fill_for(big, o, d.stream());
    cuda::LtGemm gemm(d.lt(), big.m, big.n, big.k, big.dtype);
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1)) {
      for (int i = 0; i < 8; ++i) gemm.run(o.a.get(), o.b.get(), o.d.get(), d.stream());
      CUDA_CHECK(cudaStreamSynchronize(d.stream()));
    }
  }
  if (d.wants(bench::gemm)) {
    for (const auto& g : grid) time_one(d, bench::gemm, g, o);
  }
  if (d.wants(bench::gemm_tile)) {
    for (const auto& g : tiles) time_one(d, bench::gemm_tile, g, o);
  }
  if (d.wants(bench::gemm_waves)) {
    for (std::size_t i = 0; i < waves.size(); i += d.options().quick ? 4 : 1) time_one(d, bench::gemm_waves, waves[i], o);
  }
}

}  // namespace overlap::calibrate
