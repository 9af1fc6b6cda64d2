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

// The device-side gap between dependent empty kernels on `stream`, per kernel: `kernels` launches
// queued behind a sleep kernel that outlasts them, so the GPU never waits for the host (without it
// the figure is the host's launch rate: 4.2 us on an H100 against a 1.8 us queued gap).
std::vector<double> time_queued_gap_us(cudaStream_t stream, int kernels, int warmup, int reps);

// Round-robin timing of several variants of one piece of work: rep i runs variant 0, 1, ... in
// turn, so clock and thermal drift fall on every variant alike (a block of reps per variant showed
// 9 % between two runs of the same kernel). Returns per-variant durations in microseconds.
std::vector<std::vector<double>> time_interleaved_us(cudaStream_t stream, int warmup, int reps,
                                                     const std::vector<std::function<void()>>& variants);

}  // namespace overlap::cuda
