// transfer: bandwidth-vs-size curves of the copy engine (device to device, pinned host to device,
// device to pinned host) and of the SM copy kernel with k CTAs. GB/s is bytes copied over
// the median time (one way; a device-to-device copy moves twice that through HBM).
#include "calibrate/core/calibration_plan.hpp"
#include "calibrate/cuda/driver.hpp"
#include "kernels/common/buffers.hpp"
#include "kernels/ops/ops.hpp"

namespace overlap::calibrate {
namespace {

void gbps(const SampleStats& st, nlohmann::json& o, std::int64_t bytes) { o["gbps"] = bytes / st.median / 1e3; }

}  // namespace

void bench_transfer(Driver& d) {
  if (!d.wants(bench::transfer)) return;
  const auto sizes = transfer_sizes();
  const std::size_t max_bytes = static_cast<std::size_t>(sizes.back());
  cuda::DeviceBuffer<unsigned char> src(max_bytes), dst(max_bytes);
  cuda::PinnedBuffer host(max_bytes);
  CUDA_CHECK(cudaMemsetAsync(src.get(), 3, max_bytes, d.stream()));
  const int step = d.options().quick ? 4 : 1;
  for (std::size_t i = 0; i < sizes.size(); i += step) {
    const std::int64_t s = sizes[i];
    const int reps = s >= (256 << 20) ? 10 : 0;
    auto g = [s](const SampleStats& st, nlohmann::json& o) { gbps(st, o, s); };
    d.measure(bench::transfer, {{"path", "copy_engine.d2d"}, {"bytes", s}},
              [&] { CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), s, cudaMemcpyDeviceToDevice, d.stream())); }, g, nullptr, reps);
    d.measure(bench::transfer, {{"path", "copy_engine.h2d"}, {"bytes", s}},
              [&] { CUDA_CHECK(cudaMemcpyAsync(dst.get(), host.get(), s, cudaMemcpyHostToDevice, d.stream())); }, g, nullptr, reps);
    d.measure(bench::transfer, {{"path", "copy_engine.d2h"}, {"bytes", s}},
              [&] { CUDA_CHECK(cudaMemcpyAsync(host.get(), src.get(), s, cudaMemcpyDeviceToHost, d.stream())); }, g, nullptr, reps);
  }
  for (int ctas : sm_copy_ctas(d.sm_count())) {
    for (std::int64_t s : sm_copy_sizes()) {
      d.measure(bench::transfer, {{"path", "sm_copy.d2d"}, {"bytes", s}, {"ctas", ctas}},
                [&] { cuda::sm_copy(dst.get(), src.get(), s, ctas, 1, d.stream()); },
                [s](const SampleStats& st, nlohmann::json& o) { gbps(st, o, s); }, nullptr, 10);
    }
  }
  // The SM copy curve at every sweep size for the largest CTA count (the profile's sm_copy.d2d).
  const int all = sm_copy_ctas(d.sm_count()).back();
  for (std::size_t i = 0; i < sizes.size(); i += 2 * step) {
    const std::int64_t s = sizes[i];
    bool done = false;
    for (auto t : sm_copy_sizes()) done = done || t == s;
    if (done || s < 16 * 512 * all) continue;  // below one 16-byte vector per thread the kernel has no work per CTA
    d.measure(bench::transfer, {{"path", "sm_copy.d2d"}, {"bytes", s}, {"ctas", all}},
              [&] { cuda::sm_copy(dst.get(), src.get(), s, all, 1, d.stream()); },
              [s](const SampleStats& st, nlohmann::json& o) { gbps(st, o, s); }, nullptr, s >= (256 << 20) ? 10 : 0);
  }
}

}  // namespace overlap::calibrate
