#pragma once
// A kernel's CPU op through the thread that launched it: the innermost op range open on the
// launching thread when the launch began. The Kineto reader uses it where the kernel's and its
// launch's "External id" name no op (older profilers write the correlation id there), the Nsight
// Systems reader for the NVTX ranges PyTorch's emit_nvtx pushes per op.
//
// A thread's op ranges nest (a profiler records an op's scope: every op inside another begins and
// ends within it), so one sweep over the launches in time order, with a stack of the ranges open,
// finds each launch's innermost range. A range [start, end) contains a launch that begins at t when
// start <= t < end.
#include <cstdint>
#include <utility>
#include <vector>

namespace overlap::traces {

struct OpRange {
  std::int64_t thread = 0;  // a key for (process, thread)
  std::int64_t start_ns = 0, end_ns = 0;
  std::int32_t op = -1;  // what the range stands for (an index the caller knows); -1: no op of interest
};

struct LaunchAt {
  std::int64_t thread = 0;
  std::int64_t start_ns = 0;
  std::int64_t correlation = -1;
};

// (correlation, op) for each launch whose innermost enclosing range has op >= 0, sorted by
// correlation. A launch inside no range, or whose innermost range has op -1, is left out: the op
// that launched it is not one the caller keeps (an aten::copy_ inside an aten::addmm is the bias
// copy's op, not the GEMM's).
std::vector<std::pair<std::int64_t, std::int32_t>> innermost_ops(std::vector<OpRange> ranges, std::vector<LaunchAt> launches);

}  // namespace overlap::traces
