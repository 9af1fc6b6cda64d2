// signal_gemm: the reference kernels' signalling GEMM (kernels/gemm/signal_gemm.cu) against
// cuBLASLt on the same shapes, and its signalling overhead against itself without signals (the
// targets: its speed against cuBLASLt, signalling overhead < 1 %): plain row-major, the
// reordered layout alone, reordered + per-group counters (release, fence + relaxed, no fence), + per-tile
// %globaltimer. One run with
// timestamps also gives the wave profile (wave_end_us: each wave's last tile, from the first wave's).
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "calibrate/core/measurement.hpp"
#include "calibrate/cuda/driver.hpp"
#include "kernels/common/buffers.hpp"
#include "kernels/common/timing.hpp"
#include "kernels/gemm/cublaslt_gemm.hpp"
#include "kernels/gemm/signal_gemm.hpp"
#include "kernels/ops/ops.hpp"

namespace overlap::calibrate {

void bench_signal_gemm(Driver& d) {
  if (!d.wants("signal_gemm")) return;
  for (auto [m, n, k] : {std::tuple<int, int, int>{4096, 8192, 2048}, {8192, 8192, 4096}}) {
    cuda::DeviceBuffer<__nv_bfloat16> a(static_cast<std::size_t>(m) * k), b(static_cast<std::size_t>(k) * n), c(static_cast<std::size_t>(m) * n);
    cuda::fill_random_bf16(a.get(), a.size(), 81, 1.0f, d.stream());
    cuda::fill_random_bf16(b.get(), b.size(), 82, 1.0f, d.stream());
    cuda::LtGemm lt(d.lt(), m, n, k, "bf16");
    const double lt_us = median_of(cuda::time_on_stream_us(d.stream(), d.options().warmup, d.options().reps,
                                                            [&] { lt.run(a.get(), b.get(), c.get(), d.stream()); }));
    const cuda::TileOrder order{m / cuda::kSignalTile, n / cuda::kSignalTile, 1};
    const int wave = d.sm_count();
    const int waves = (order.tiles() + wave - 1) / wave;
    std::vector<int> groups(static_cast<std::size_t>(std::min(waves, 4)), 0);
    for (int w = 0; w < waves; ++w) groups[static_cast<std::size_t>(w % groups.size())] += 1;
    const auto ends = cuda::group_ends(groups, wave, order.tiles());
    cuda::DeviceBuffer<int> ends_dev(ends.size());
    CUDA_CHECK(cudaMemcpy(ends_dev.get(), ends.data(), ends.size() * sizeof(int), cudaMemcpyHostToDevice));
    cuda::DeviceBuffer<unsigned int> counters(ends.size());
    cuda::DeviceBuffer<unsigned long long> stamps(static_cast<std::size_t>(order.tiles()));
    CUDA_CHECK(cudaMemset(counters.get(), 0, counters.bytes()));
    // The variants timed round-robin (time_interleaved_us): the overhead is the median of the
    // per-rep ratios to the row-major run beside it, not a ratio of medians taken minutes apart.
    // "_release" publishes with one red.release instead of fence + relaxed red; "_unfenced" has no
    // fence at all (the published kernel's race; timed only, to attribute the overhead).
    // "_fence" publishes with fence.acq_rel + relaxed red (CUTLASS GenericBarrier's pattern) instead
    // of the default single red.release; "_unfenced" has no fence at all (the published kernel's
    // race; timed only, to attribute the overhead); "_2cta" runs two CTAs per SM (waves of 2 x SMs
    // tiles), whose other CTA can use the SM while one waits on its publish.
    const std::vector<std::string> variants = {"row_major",
                                               "reordered",
                                               "reordered_signals",
                                               "reordered_signals_fence",
                                               "reordered_signals_unfenced",
                                               "reordered_signals_timestamps",
                                               "row_major_2cta",
                                               "reordered_signals_2cta"};
    std::vector<cuda::SignalGemmArgs> args;
    std::vector<std::function<void()>> runs;
    for (const std::string& v : variants) {
      cuda::SignalGemmArgs g;
      g.a = a.get();
      g.b = b.get();
      g.d = c.get();
      g.m = m;
      g.n = n;
      g.k = k;
      g.layout = v.starts_with("row_major") ? cuda::GemmLayout::row_major : cuda::GemmLayout::tile_major;
      g.group_end = ends_dev.get();
      g.groups = static_cast<int>(ends.size());
      if (v.find("signals") != std::string::npos) g.counters = counters.get();
      if (v.find("timestamps") != std::string::npos) g.tile_end_ns = stamps.get();
      if (v.ends_with("_fence")) g.fence = cuda::PublishFence::acq_rel_fence;
      if (v.ends_with("_2cta")) g.ctas_per_sm = 2;
      if (v.find("unfenced") != std::string::npos) g.fence = cuda::PublishFence::none;
      args.push_back(g);
    }
    for (const auto& g : args) runs.push_back([&d, g] { cuda::signal_gemm(g, d.stream()); });
    const auto samples = cuda::time_interleaved_us(d.stream(), d.options().warmup, d.options().reps, runs);
    const double flop = 2.0 * m * n * k;
    for (std::size_t v = 0; v < variants.size(); ++v) {
      const SampleStats st = summarize(samples[v]);
      nlohmann::json o = {{"tflops", flop / st.median / 1e6}, {"cublaslt_us", lt_us}, {"vs_cublaslt", st.median / lt_us},
                          {"tile_m", cuda::kSignalTile}, {"tile_n", cuda::kSignalTile}};
      // Each variant against the row-major run with the same CTAs per SM.
      const bool two = variants[v].ends_with("_2cta");
      const std::size_t base = two ? static_cast<std::size_t>(std::find(variants.begin(), variants.end(), "row_major_2cta") - variants.begin()) : 0;
      if (v != base) {
        std::vector<double> ratio;
        for (std::size_t i = 0; i < samples[v].size(); ++i) ratio.push_back(samples[v][i] / samples[base][i]);
        o["overhead_vs_row_major_pct"] = 100.0 * (median_of(ratio) - 1.0);
        o["overhead_interleaved"] = true;
      }
      o["ctas_per_sm"] = two ? 2 : 1;
      d.record("signal_gemm", {{"m", m}, {"n", n}, {"k", k}, {"dtype", "bf16"}, {"variant", variants[v]}}, samples[v], o);
    }
    // The wave profile from one timestamped run.
    std::vector<unsigned long long> t(static_cast<std::size_t>(order.tiles()));
    CUDA_CHECK(cudaStreamSynchronize(d.stream()));
    CUDA_CHECK(cudaMemcpy(t.data(), stamps.get(), t.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    nlohmann::json wave_end = nlohmann::json::array();
    unsigned long long first = 0;
    for (int w = 0; w < waves; ++w) {
      const auto lo = t.begin() + static_cast<std::ptrdiff_t>(w) * wave;
      const auto hi = t.begin() + std::min<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(w + 1) * wave, static_cast<std::ptrdiff_t>(t.size()));
      const unsigned long long end = *std::max_element(lo, hi);
      if (w == 0) first = end;
      wave_end.push_back(static_cast<double>(end - first) / 1e3);
    }
    d.environment()["signal_gemm_wave_end_us_" + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k)] = wave_end;
  }
}

}  // namespace overlap::calibrate
