#include "kernels/common/timing.hpp"

#include <chrono>

#include "kernels/common/check.hpp"

namespace overlap::cuda {

std::vector<double> time_on_stream_us(cudaStream_t stream, int warmup, int reps, const std::function<void()>& work) {
  for (int i = 0; i < warmup; ++i) work();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<cudaEvent_t> ev(2 * static_cast<std::size_t>(reps));
  for (auto& e : ev) CUDA_CHECK(cudaEventCreate(&e));
  for (int i = 0; i < reps; ++i) {
    CUDA_CHECK(cudaEventRecord(ev[2 * i], stream));
    work();
    CUDA_CHECK(cudaEventRecord(ev[2 * i + 1], stream));
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> us;
  for (int i = 0; i < reps; ++i) {
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
    us.push_back(static_cast<double>(ms) * 1e3);
  }
  for (auto& e : ev) cudaEventDestroy(e);
  return us;
}

std::vector<double> time_host_calls_us(cudaStream_t stream, int warmup, int samples, int calls,
                                       const std::function<void()>& call) {
  for (int i = 0; i < warmup; ++i) call();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> us;
  for (int s = 0; s < samples; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) call();
    const auto t1 = std::chrono::steady_clock::now();
    CUDA_CHECK(cudaStreamSynchronize(stream));
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / calls);
  }
  return us;
}

}  // namespace overlap::cuda
