#pragma once
// CUDA-event timing in the style of nccl-tests (style.md "The benchmark harness"): `warmup` untimed
// runs (module load, handle creation, cache warm-up stay out of the numbers), then `reps` runs each
// bracketed by events on `stream`; returns the per-run durations in microseconds. `work` enqueues
// one run on the stream (and on other streams joined to it by events).
#include <functional>
#include <vector>

#include <cuda_runtime.h>

namespace overlap::cuda {

std::vector<double> time_on_stream_us(cudaStream_t stream, int warmup, int reps,
                                      const std::function<void()>& work);

// Host wall-clock per call of `call` (e.g. a kernel launch), averaged over `calls` calls per
// sample, `samples` samples after `warmup` calls; the stream is synchronized between samples.
std::vector<double> time_host_calls_us(cudaStream_t stream, int warmup, int samples, int calls,
                                       const std::function<void()>& call);

}  // namespace overlap::cuda
