#include "kernels/common/timing.hpp"

#include <chrono>
#include <cstdint>

#include "kernels/common/check.hpp"
#include "kernels/ops/ops.hpp"

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

std::vector<double> time_queued_gap_us(cudaStream_t stream, int kernels, int warmup, int reps) {
  // ~5 us per launch on the slowest host seen, doubled.
  const std::uint64_t hold_ns = static_cast<std::uint64_t>(kernels) * 10'000;
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  std::vector<double> us;
  for (int rep = 0; rep < warmup + reps; ++rep) {
    sleep_on_stream(hold_ns, stream);
    CUDA_CHECK(cudaEventRecord(a, stream));
    for (int i = 0; i < kernels; ++i) empty_kernel(stream);
    CUDA_CHECK(cudaEventRecord(b, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    if (rep >= warmup) us.push_back(static_cast<double>(ms) * 1e3 / kernels);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return us;
}

std::vector<std::vector<double>> time_interleaved_us(cudaStream_t stream, int warmup, int reps,
                                                     const std::vector<std::function<void()>>& variants) {
  for (int i = 0; i < warmup; ++i) {
    for (const auto& v : variants) v();
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::size_t nv = variants.size();
  std::vector<cudaEvent_t> ev(2 * nv * static_cast<std::size_t>(reps));
  for (auto& e : ev) CUDA_CHECK(cudaEventCreate(&e));
  for (int i = 0; i < reps; ++i) {
    for (std::size_t v = 0; v < nv; ++v) {
      const std::size_t at = 2 * (static_cast<std::size_t>(i) * nv + v);
      CUDA_CHECK(cudaEventRecord(ev[at], stream));
      variants[v]();
      CUDA_CHECK(cudaEventRecord(ev[at + 1], stream));
    }
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<std::vector<double>> us(nv);
  for (int i = 0; i < reps; ++i) {
    for (std::size_t v = 0; v < nv; ++v) {
      const std::size_t at = 2 * (static_cast<std::size_t>(i) * nv + v);
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, ev[at], ev[at + 1]));
      us[v].push_back(static_cast<double>(ms) * 1e3);
    }
  }
  for (auto& e : ev) cudaEventDestroy(e);
  return us;
}

}  // namespace overlap::cuda
