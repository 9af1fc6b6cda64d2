// launch: the host's cost per kernel launch (cudaLaunchKernel, host clock), the device-side gap
// between dependent kernels on one stream (a chain of empty kernels, CUDA events, per kernel), and
// the same gap when the chain is replayed as a CUDA Graph (profile_schema_v2.md `launch:`).
// The stream chain is launched behind a sleep kernel that outlasts its launches: otherwise the
// GPU drains the queue faster than the host fills it and the "gap" is the host's launch rate
// (4.2 us per kernel on the first H100 run, 2026-11-22, against 4.4 us per launch).
#include "calibrate/cuda/driver.hpp"
#include "kernels/common/timing.hpp"
#include "kernels/ops/ops.hpp"

namespace overlap::calibrate {

void bench_launch(Driver& d) {
  if (!d.wants(bench::launch)) return;
  constexpr int kChain = 1000;
  cudaStream_t s = d.stream();
  d.record(bench::launch, {{"what", "host_launch"}, {"calls", kChain}},
           cuda::time_host_calls_us(s, 100, 20, kChain, [&] { cuda::empty_kernel(s); }));
  auto per_kernel = [](std::vector<double> v) {
    for (auto& x : v) x /= kChain;
    return v;
  };
  constexpr int kQueued = 256;  // well inside the stream's launch queue
  d.record(bench::launch, {{"what", "dependent_gap"}, {"kernels", kQueued}, {"queued_behind_sleep", true}},
           cuda::time_queued_gap_us(s, kQueued, 2, 20));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kChain; ++i) cuda::empty_kernel(s);
  CUDA_CHECK(cudaStreamEndCapture(s, &graph));
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  d.record(bench::launch, {{"what", "graph_gap"}, {"kernels", kChain}},
           per_kernel(cuda::time_on_stream_us(s, 2, 20, [&] { CUDA_CHECK(cudaGraphLaunch(exec, s)); })));
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaGraphDestroy(graph));
}

}  // namespace overlap::calibrate
