// transfer copy_engine.p2p / sm_copy.p2p: GPU 0 <-> GPU 1 peer-to-peer curves where two GPUs are
// visible to the process (multi-GPU hosts; the lent single-GPU machines skip it). The copy engine
// with cudaMemcpyPeerAsync, and the SM copy kernel on GPU 0 reading GPU 1's memory.
#include "calibrate/core/calibration_plan.hpp"
#include "calibrate/cuda/driver.hpp"
#include "kernels/common/buffers.hpp"
#include "kernels/ops/ops.hpp"

namespace overlap::calibrate {

void bench_p2p(Driver& d) {
  if (!d.wants(bench::transfer)) return;
  int gpus = 0;
  CUDA_CHECK(cudaGetDeviceCount(&gpus));
  if (gpus < 2) return;
  const int peer = d.device() == 0 ? 1 : 0;
  int can = 0;
  CUDA_CHECK(cudaDeviceCanAccessPeer(&can, d.device(), peer));
  if (!can) {
    d.environment()["p2p_note"] = "GPU " + std::to_string(d.device()) + " cannot access GPU " + std::to_string(peer);
    return;
  }
  const auto sizes = transfer_sizes();
  const std::size_t max_bytes = static_cast<std::size_t>(sizes.back());
  CUDA_CHECK(cudaSetDevice(peer));
  cuda::DeviceBuffer<unsigned char> remote(max_bytes);
  CUDA_CHECK(cudaMemset(remote.get(), 5, max_bytes));
  CUDA_CHECK(cudaSetDevice(d.device()));
  const cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
  if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CUDA_CHECK(e);
  cudaGetLastError();
  cuda::DeviceBuffer<unsigned char> local(max_bytes);
  const int step = d.options().quick ? 4 : 1;
  for (std::size_t i = 0; i < sizes.size(); i += step) {
    const std::int64_t s = sizes[i];
    d.measure(bench::transfer, {{"path", "copy_engine.p2p"}, {"bytes", s}, {"peer", peer}},
              [&] { CUDA_CHECK(cudaMemcpyPeerAsync(local.get(), d.device(), remote.get(), peer, s, d.stream())); },
              [s](const SampleStats& st, nlohmann::json& o) { o["gbps"] = s / st.median / 1e3; }, nullptr,
              s >= (256 << 20) ? 10 : 0);
  }
  for (int ctas : {8, 16, 32, 64}) {
    for (std::size_t i = 0; i < sizes.size(); i += 2 * step) {
      const std::int64_t s = sizes[i];
      if (s < 16 * 512 * ctas) continue;
      d.measure(bench::transfer, {{"path", "sm_copy.p2p"}, {"bytes", s}, {"ctas", ctas}, {"peer", peer}},
                [&] { cuda::sm_copy(local.get(), remote.get(), s, ctas, 1, d.stream()); },
                [s](const SampleStats& st, nlohmann::json& o) { o["gbps"] = s / st.median / 1e3; }, nullptr,
                s >= (256 << 20) ? 10 : 0);
    }
  }
}

}  // namespace overlap::calibrate
