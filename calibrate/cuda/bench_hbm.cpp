// hbm_stream: a batch-1 GEMV over a bf16 weight of 64 MiB .. 2 GiB (the Delayed-TP decode setting:
// weight streaming bounds decode, delayed-tp-blog); GB/s is weight bytes over the median time.
// Every size is above the L2 (50 MB on an H100; 64 MiB only just), so the rate is HBM's.
// Then the 512 MiB read on k SMs (a green context, config `sms`): how fast a partition streams
// alone, which bounds a tensor-parallel rank of a virtual node (gpu.hbm_sm_gbps).
#include <algorithm>

#include "calibrate/core/calibration_plan.hpp"
#include "calibrate/cuda/driver.hpp"
#include "kernels/common/buffers.hpp"
#include "kernels/common/green_context.hpp"
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
  // Partitions up to half the GPU (where a few SMs cannot pull HBM's rate) and the virtual nodes'
  // rank sizes among them; the whole GPU is the rows above.
  const std::int64_t bytes = 512LL << 20, rows = bytes / 2 / kCols;
  const auto res = cuda::device_sm_resource(d.device());
  std::vector<int> counts;
  for (int k : sm_partition_counts(d.sm_count(), std::max(1, res.min_partition)))
    if (2 * k <= d.sm_count() && (k <= 32 || k % 16 == 0)) counts.push_back(k);
  if (d.options().quick && counts.size() > 2) counts = {counts.front(), counts.back()};
  for (int k : counts) {
    cuda::SmPartitions parts(d.device(), 1, k);
    parts[0].make_current();
    cudaStream_t s = parts[0].make_stream();
    const int granted = parts[0].sms();
    d.measure(bench::hbm_stream, {{"bytes", bytes}, {"rows", rows}, {"cols", kCols}, {"sms", granted}},
              [&] { cuda::gemv_bf16(y.get(), w.get(), x.get(), rows, kCols, s); },
              [bytes, granted, k](const SampleStats& st, nlohmann::json& o) {
                o["gbps"] = bytes / st.median / 1e3;
                o["gbps_per_sm"] = bytes / st.median / 1e3 / granted;
                o["sms_asked"] = k;
              },
              s, d.options().quick ? 5 : 10);
    CUDA_CHECK(cudaStreamSynchronize(s));
    cuda::SmPartitions::make_primary_current(d.device());
  }
}

}  // namespace overlap::calibrate
