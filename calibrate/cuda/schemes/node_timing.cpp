#include "calibrate/cuda/schemes/bench_schemes.hpp"

#include <chrono>
#include <cstdio>

#include "calibrate/core/statistics.hpp"
#include "kernels/common/check.hpp"
#include "kernels/common/host_profile.hpp"
#include "kernels/common/timing.hpp"
#include "kernels/ops/ops.hpp"

namespace overlap::calibrate {

void make_primary_current() {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  cuda::SmPartitions::make_primary_current(dev);
}

namespace {

// The root stream waits for every stream of every rank; the primary context is current again.
void join_to(cuda::Node& node, cudaStream_t root) {
  node.join_to(root);
  make_primary_current();
}

}  // namespace

// Times `work` issued on every rank of the node, joined to a root stream (CUDA events on the root).
std::vector<double> time_on_node(cuda::Node& node, cudaStream_t root, int warmup, int reps, const std::function<void()>& work) {
  cudaEvent_t start;
  CUDA_CHECK(cudaEventCreateWithFlags(&start, cudaEventDisableTiming));
  auto v = cuda::time_on_stream_us(root, warmup, reps, [&] {
    make_primary_current();
    node.barrier(root);
    CUDA_CHECK(cudaEventRecord(start, root));
    node.fork_from(start);
    work();
    join_to(node, root);
  });
  CUDA_CHECK(cudaEventDestroy(start));
  return v;
}

namespace {

// Device time of `work` on every rank with the host out of the picture: the ranks' streams wait
// behind a sleep kernel on the root stream for `hold_ns` while the host enqueues `work`, so the
// events around it time the GPU alone (the launch benchmark's dependent_gap does the same). The
// host's enqueue time of each call goes to `host_us`.
std::vector<double> time_on_node_queued(cuda::Node& node, cudaStream_t root, int warmup, int reps, std::uint64_t hold_ns,
                                        const std::function<void()>& work, std::vector<double>* host_us) {
  cudaEvent_t start, a, b;
  CUDA_CHECK(cudaEventCreateWithFlags(&start, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  std::vector<double> us;
  for (int rep = 0; rep < warmup + reps; ++rep) {
    make_primary_current();
    node.barrier(root);
    cuda::sleep_on_stream(hold_ns, root);
    CUDA_CHECK(cudaEventRecord(a, root));
    CUDA_CHECK(cudaEventRecord(start, root));
    node.fork_from(start);
    const auto t0 = std::chrono::steady_clock::now();
    {
      cuda::host_profile::Window w;
      work();
    }
    const auto t1 = std::chrono::steady_clock::now();
    join_to(node, root);
    CUDA_CHECK(cudaEventRecord(b, root));
    CUDA_CHECK(cudaStreamSynchronize(root));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    if (rep >= warmup) {
      us.push_back(static_cast<double>(ms) * 1e3);
      if (host_us) host_us->push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
  }
  for (auto e : {start, a, b}) cudaEventDestroy(e);
  return us;
}

}  // namespace

QueuedTiming time_queued(cuda::Node& node, cudaStream_t root, int reps, const std::function<void()>& work,
                         const std::function<void()>& before_queued) {
  const auto together = time_on_node(node, root, 3, reps, work);
  std::vector<double> host;
  const auto hold_ns = static_cast<std::uint64_t>(2e3 * median_of(together)) + 200'000;
  if (before_queued) before_queued();
  QueuedTiming t;
  t.samples = time_on_node_queued(node, root, 2, reps, hold_ns, work, &host);
  t.derived = nlohmann::json{{"queued", true}, {"host_enqueue_us", median_of(host)}, {"unqueued_us", median_of(together)}};
  return t;
}

void progress(const std::string& what, const std::string& text) {
  std::printf("%-34s %s\n", what.c_str(), text.c_str());
  std::fflush(stdout);
}

}  // namespace overlap::calibrate
