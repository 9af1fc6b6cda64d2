#pragma once
// Compute kernels sharing the GPU's SMs with communication kernels, for the replay.
//
// Model. A NCCL kernel runs one thread block per channel (NCCL src/enqueue.cc ncclLaunchKernel:
// grid = {nChannels, 1, 1}; RCCL launches the same grid through hipExtLaunchKernel), and each block
// holds an SM for the kernel's whole time, so while it runs it holds grid.x of the GPU's S SMs
// (the profile's gpu.sm_count). A compute kernel that ran beside communication kernels holding h SMs
// ran on S - h; its progress is taken as proportional to the SMs it has (a kernel that fills the
// GPU in waves, as the cost model's GEMM does; a kernel smaller than the GPU loses less, so this
// overstates its change). Its interval is cut where communication kernels on its GPU start and end,
// as the trace recorded them; a piece of length L that ran beside kernels holding h SMs takes
//     L * (S - h_base) / (S - h_new)
// where h_base is the SMs taken when the duration was measured (h; 0 for a duration the cost model
// priced, which assumes the whole GPU) and h_new those taken in the run replayed: h, or with
// `comm.sms=N` N per communication kernel running then. Communication kernels keep their durations
// (their speed with fewer channels: `comm.speed`). Copies use copy engines, not SMs: unchanged.
// A piece beside a communication kernel whose grid the trace does not record, or whose recorded
// SMs reach S, is left as it was, and the kernel counted. h_new is capped at S - 1.
#include <cstdint>
#include <vector>

#include "calibrate/traces/replay_graph.hpp"

namespace overlap::traces {

struct SmShareCounts {
  std::int64_t rescaled = 0;       // compute kernels whose duration changed
  std::int64_t unknown_grid = 0;   // compute kernels beside a communication kernel of unknown grid (left as they were there)
  std::int64_t capped = 0;         // compute kernels where h_new reached S (run on 1 SM there)
};

// `base`: each node's duration; `priced`: per node, whether `base` is the cost model's (whole GPU)
// rather than measured; `comm_sms`: N for comm.sms=N, 0 for none. sm_count > 0.
std::vector<std::int64_t> sm_share_durations(const ReplayGraph& g, const std::vector<const RankTrace*>& ranks,
                                             const std::vector<std::int64_t>& base, const std::vector<bool>& priced,
                                             int sm_count, int comm_sms, SmShareCounts* counts = nullptr);

}  // namespace overlap::traces
