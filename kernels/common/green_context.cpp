#include "kernels/common/green_context.hpp"

#include <string>

#include "kernels/common/check.hpp"
#include "kernels/common/host_profile.hpp"

namespace overlap::cuda {

SmResourceInfo device_sm_resource(int device) {
  CUDA_CHECK(cudaSetDevice(device));
  CUDA_CHECK(cudaFree(nullptr));  // the primary context, before any green context (cuGreenCtxCreate's advice)
  CUdevice dev;
  CU_CHECK(cuDeviceGet(&dev, device));
  CUdevResource res{};
  CU_CHECK(cuDeviceGetDevResource(dev, &res, CU_DEV_RESOURCE_TYPE_SM));
  return SmResourceInfo{static_cast<int>(res.sm.smCount), static_cast<int>(res.sm.minSmPartitionSize),
                        static_cast<int>(res.sm.smCoscheduledAlignment)};
}

cudaStream_t SmPartition::make_stream(int priority) {
  CUstream s;
  CU_CHECK(cuGreenCtxStreamCreate(&s, ctx_, CU_STREAM_NON_BLOCKING, priority));
  streams_.push_back(reinterpret_cast<cudaStream_t>(s));
  return streams_.back();
}

void SmPartition::make_current() const {
  host_profile::Scope t(host_profile::Call::activate);
  CUcontext c;
  CU_CHECK(cuCtxFromGreenCtx(&c, ctx_));
  CU_CHECK(cuCtxSetCurrent(c));
}

SmPartitions::SmPartitions(int device, int count, int sms_each) {
  CUDA_CHECK(cudaSetDevice(device));
  CUDA_CHECK(cudaFree(nullptr));
  CUdevice dev;
  CU_CHECK(cuDeviceGet(&dev, device));
  CUdevResource all{};
  CU_CHECK(cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
  std::vector<CUdevResource> groups(static_cast<std::size_t>(count));
  CUdevResource rest{};
  unsigned int n = static_cast<unsigned int>(count);
  CU_CHECK(cuDevSmResourceSplitByCount(groups.data(), &n, &all, &rest, 0, static_cast<unsigned int>(sms_each)));
  if (static_cast<int>(n) < count) {
    throw std::runtime_error("green contexts: asked for " + std::to_string(count) + " partitions of " +
                             std::to_string(sms_each) + " SMs, the device gives " + std::to_string(n));
  }
  for (int i = 0; i < count; ++i) {
    CUdevResourceDesc desc;
    CU_CHECK(cuDevResourceGenerateDesc(&desc, &groups[static_cast<std::size_t>(i)], 1));
    CUgreenCtx g;
    CU_CHECK(cuGreenCtxCreate(&g, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
    parts_.emplace_back(g, static_cast<int>(groups[static_cast<std::size_t>(i)].sm.smCount));
  }
  make_primary_current(device);
}

SmPartitions::~SmPartitions() {
  for (auto& p : parts_) {
    for (cudaStream_t s : p.streams_) cuStreamDestroy(reinterpret_cast<CUstream>(s));
    cuGreenCtxDestroy(p.ctx_);
  }
}

void SmPartitions::make_primary_current(int device) {
  CUdevice dev;
  CU_CHECK(cuDeviceGet(&dev, device));
  CUcontext primary;
  CU_CHECK(cuDevicePrimaryCtxRetain(&primary, dev));
  CU_CHECK(cuCtxSetCurrent(primary));
  CU_CHECK(cuDevicePrimaryCtxRelease(dev));
}

}  // namespace overlap::cuda
