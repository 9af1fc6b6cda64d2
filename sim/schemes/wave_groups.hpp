#pragma once
// FlashOverlap's wave groups (flashoverlap-paper Sec. 3.2.3-3.2.4): a GEMM's tiles, in dispatch
// order, are cut into waves of `tiles_per_wave` tiles, and consecutive waves into groups; each group
// has its own counter in the counting table and its own communication of a contiguous slice.
#include <cstdint>
#include <vector>

#include "cost_model/units.hpp"

namespace overlap::sim {

struct TileRange {
  std::int64_t first = 0;  // first tile (dispatch order)
  std::int64_t count = 0;
};

// Waves of a GEMM: ceil(tiles / tiles_per_wave).
int wave_count(std::int64_t tiles, std::int64_t tiles_per_wave);

// Tiles of each group, given group sizes in waves summing to wave_count(); the last wave may be
// partial. Throws std::invalid_argument when a size is < 1 or the sizes do not sum to the waves.
std::vector<TileRange> wave_group_tiles(const std::vector<int>& group_waves, std::int64_t tiles,
                                        std::int64_t tiles_per_wave);

// Equally-sized groups of `size` waves (flashoverlap-paper Fig. 14, "Egs=n"); the last group takes
// what is left.
std::vector<int> equal_wave_groups(int waves, int size);

// Bytes of a group's slice when `total_bytes` of output are spread evenly over `tiles` tiles
// (cumulative rounding, so the slices add up to total_bytes exactly).
Bytes group_bytes(const TileRange& range, std::int64_t tiles, Bytes total_bytes);

}  // namespace overlap::sim
