// hbm_stream: a batch-1 GEMV over a bf16 weight of 64 MiB .. 2 GiB (the Delayed-TP decode setting:
// weight streaming bounds decode, delayed-tp-blog); GB/s is weight bytes over the median time.
// Every size is above the L2 (50 MB on an H100; 64 MiB only just), so the rate is HBM's.
#include "calibrate/cuda/driver.hpp"
#include "kernels/common/buffers.hpp"
#include "kernels/ops/ops.hpp"

namespace overlap::calibrate {

void bench_hbm(Driver& d) {
  if (!d.wants(bench::hbm_stream)) return;
  constexpr std::int64_t kCols = 8192;
  const std::int64_t max_bytes = 2LL << 30;
  cuda::DeviceBuffer<__nv_bfloat16> w(static_cast<std::size_t>(max_bytes / 2)), x(kCols), y(max_bytes / 2 / kCols);
  cuda::fill_random_bf16(w.get(), w.size(), 51, 1.0f, d.stream());
  cuda::fill_random_bf16(x.get(), x.size(), 52, 1.0f, d.stream());
  for (std::int64_t bytes : {64LL << 20, 256LL << 20, 1LL << 30, 2LL << 30}) {
    if (d.options().quick && bytes > (256LL << 20)) break;
    const std::int64_t rows = bytes / 2 / kCols;
    d.measure(bench::hbm_stream, {{"bytes", bytes}, {"rows", rows}, {"cols", kCols}},
              [&] { cuda::gemv_bf16(y.get(), w.get(), x.get(), rows, kCols, d.stream()); },
              [bytes](const SampleStats& st, nlohmann::json& o) { o["gbps"] = bytes / st.median / 1e3; });
  }
}

}  // namespace overlap::calibrate
