#pragma once
// FlashOverlap's signalling GEMM (flashoverlap-paper Sec. 4, "tile-wise signalling" and
// "pre-communication reorder"; facts.md "FlashOverlap's published implementation"): a bf16 tensor-op
// GEMM (CUTLASS 2.x Sm80 mainloop, 128x128x32 tiles, 4 stages, fp32 accumulation) whose CTAs run in
// launch order over the output tiles (a swizzle of `swizzle` tile rows per band), and whose
// epilogue
//   - writes the tile either row-major (the plain GEMM) or in the reordered layout: tile-major in
//     launch order, so each wave group's tiles are one contiguous slice (all-reduce), or, for
//     reduce-scatter, each group slice cut into `rs_parts` contiguous parts where part j holds the
//     j-th row stripe (128 / rs_parts rows) of every tile of the group, so a reduce-scatter of the
//     slice hands rank j the j-th stripes;
//   - then, when `counters` is set, increments its wave group's counter: the CTA synchronises, one
//     thread adds 1 with gpu-scope release semantics (`fence`; the ordering the published version
//     lacks), so a wait kernel that sees the count sees the data;
//   - and, when `tile_end_ns` is set, records the tile's %globaltimer completion time in ns (per
//     launch slot), the per-tile timestamps behind the wave profile.
// ctas_per_sm CTAs per SM (set by the shared memory the kernel asks for), so a wave is exactly
// ctas_per_sm x sm_count tiles; one, as with FlashOverlap's big-tile CUTLASS kernels, by default.
// C = A B with A row-major m x k, B row-major k x n (the weight), m, n, k multiples of 128.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace overlap::cuda {

enum class GemmLayout { row_major, tile_major, tile_major_rs };

// How a tile's count is published after the CTA barrier that follows its stores:
//   acq_rel_fence  gpu-scope fence.acq_rel, then a relaxed red (CUTLASS GenericBarrier's pattern);
//   release_red    one red.release.gpu (release-only: no acquire half, no L1 invalidation);
//   none           a relaxed red with no fence: the published FlashOverlap kernel's order, which a
//                  waiter may see before the data. For measuring the fence's cost only.
enum class PublishFence { acq_rel_fence, release_red, none };

struct SignalGemmArgs {
  const __nv_bfloat16* a = nullptr;
  const __nv_bfloat16* b = nullptr;
  __nv_bfloat16* d = nullptr;
  int m = 0, n = 0, k = 0;
  int swizzle = 1;                       // tile rows per band of the launch order (1 = row by row)
  GemmLayout layout = GemmLayout::row_major;
  // Wave groups over launch slots: group g holds slots [group_end[g-1], group_end[g]); device array
  // of `groups` ints. Needed for counters and for tile_major_rs.
  const int* group_end = nullptr;
  int groups = 0;
  int rs_parts = 1;                      // tile_major_rs: ranks of the reduce-scatter (divides 128)
  unsigned int* counters = nullptr;      // per group, device; nullptr = no signalling
  unsigned long long* tile_end_ns = nullptr;  // per launch slot, device; nullptr = no timestamps
  PublishFence fence = PublishFence::release_red;
  int ctas_per_sm = 1;  // 1 (FlashOverlap's big-tile kernels: a wave is sm_count tiles) or 2
};

// Enqueues the GEMM on `stream` (one CTA per 128x128 tile, 128 threads). Throws on shapes the
// kernel does not take and on ctas_per_sm other than 1 or 2.
void signal_gemm(const SignalGemmArgs& args, cudaStream_t stream);

inline constexpr int kSignalTile = 128;

// Host-side tile bookkeeping matching the kernel's launch order (for mappings, checks and tests).
struct TileOrder {
  int tiles_m = 0, tiles_n = 0, swizzle = 1;
  int tiles() const { return tiles_m * tiles_n; }
  // Launch slot -> (tile row, tile column).
  void tile_of(int slot, int* tm, int* tn) const;
  // slot_of_tile[tm * tiles_n + tn] for the reorder-aware RMSNorm.
  std::vector<int> slot_of_tile() const;
};

// Wave groups (in waves of `wave_tiles` tiles) to cumulative launch-slot ends, the last clipped to
// the tile count. Throws when the groups do not cover every wave.
std::vector<int> group_ends(const std::vector<int>& groups_in_waves, int wave_tiles, int tiles);

}  // namespace overlap::cuda
