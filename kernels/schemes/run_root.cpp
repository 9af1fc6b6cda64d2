#include "kernels/schemes/run_root.hpp"

#include <chrono>
#include <cmath>
#include <limits>

#include "kernels/comm/bootstrap.hpp"
#include "kernels/common/check.hpp"
#include "kernels/common/host_profile.hpp"
#include "kernels/common/timing.hpp"

namespace overlap::cuda {

void make_primary_current() {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  SmPartitions::make_primary_current(dev);
}

void fork_ranks_from(Node& node, cudaStream_t root, cudaEvent_t root_event) {
  make_primary_current();
  node.barrier(root);
  CUDA_CHECK(cudaEventRecord(root_event, root));
  node.fork_from(root_event);
}

void join_ranks_to(Node& node, cudaStream_t root) {
  node.join_to(root);
  make_primary_current();
}

double worst_over_processes(Node& node, ncclComm_t ref_comm, cudaStream_t root, double worst) {
  if (node.is_virtual()) return worst;
  // NaN does not survive a max reduction, so it travels as +inf.
  DeviceBuffer<float> w(1);
  const float h = std::isnan(worst) ? std::numeric_limits<float>::infinity() : static_cast<float>(worst);
  CUDA_CHECK(cudaMemcpyAsync(w.get(), &h, sizeof h, cudaMemcpyHostToDevice, root));
  NCCL_CHECK(ncclAllReduce(w.get(), w.get(), 1, ncclFloat, ncclMax, ref_comm, root));
  float back = 0;
  CUDA_CHECK(cudaMemcpyAsync(&back, w.get(), sizeof back, cudaMemcpyDeviceToHost, root));
  CUDA_CHECK(cudaStreamSynchronize(root));
  return std::isinf(back) ? std::nan("") : back;
}

std::vector<double> time_run_us(Node& node, cudaStream_t root, cudaEvent_t root_event, int warmup, int reps,
                                std::vector<double>& host_enqueue_us, const std::function<void()>& enqueue) {
  make_primary_current();
  host_enqueue_us.clear();
  return time_on_stream_us(root, warmup, reps, [&] {
    fork_ranks_from(node, root, root_event);
    const auto t0 = std::chrono::steady_clock::now();
    {
      host_profile::Window w;
      enqueue();
    }
    host_enqueue_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    join_ranks_to(node, root);
  });
}

}  // namespace overlap::cuda
