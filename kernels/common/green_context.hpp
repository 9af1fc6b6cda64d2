#pragma once
// SM partitions of one GPU with CUDA green contexts (driver API, CUDA >= 12.4; facts.md "Green
// contexts"): cuDeviceGetDevResource -> cuDevSmResourceSplitByCount -> cuDevResourceGenerateDesc ->
// cuGreenCtxCreate -> cuGreenCtxStreamCreate. On compute capability 9.0 a partition is a multiple of
// 8 SMs (minSmPartitionSize, read from the device). Kernels launched on a partition's streams run on
// its SMs (the driver may add a couple; disjoint partitions are not guaranteed to run concurrently).
// Memory is shared with the primary context, so buffers from cudaMalloc work in every partition.
#include <cuda.h>
#include <cuda_runtime.h>

#include <vector>

namespace overlap::cuda {

struct SmResourceInfo {
  int sm_count = 0;
  int min_partition = 0;       // minSmPartitionSize
  int coscheduled_alignment = 0;
};

// The device's SM resource as the driver reports it (initialises the primary context).
SmResourceInfo device_sm_resource(int device);

class SmPartition {
 public:
  SmPartition() = default;
  SmPartition(CUgreenCtx ctx, int sms) : ctx_(ctx), sms_(sms) {}
  int sms() const { return sms_; }
  // A stream whose kernels run on this partition; priority as cudaStreamCreateWithPriority's
  // (lower number = higher priority). Owned by the partition set.
  cudaStream_t make_stream(int priority = 0);
  // Makes the partition's context current on this thread (runtime calls then target it).
  void make_current() const;
  CUgreenCtx handle() const { return ctx_; }

 private:
  friend class SmPartitions;
  CUgreenCtx ctx_ = nullptr;
  int sms_ = 0;
  std::vector<cudaStream_t> streams_;
};

// `count` disjoint partitions of `sms_each` SMs (rounded up by the driver to its granularity).
// Throws when the device cannot give that many; sms() reports what each got.
class SmPartitions {
 public:
  SmPartitions(int device, int count, int sms_each);
  ~SmPartitions();
  SmPartitions(const SmPartitions&) = delete;
  SmPartitions& operator=(const SmPartitions&) = delete;
  SmPartition& operator[](int i) { return parts_[static_cast<std::size_t>(i)]; }
  int size() const { return static_cast<int>(parts_.size()); }
  // Restores the primary context as current.
  static void make_primary_current(int device);

 private:
  std::vector<SmPartition> parts_;
};

}  // namespace overlap::cuda
