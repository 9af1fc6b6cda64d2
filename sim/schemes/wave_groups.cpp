// FlashOverlap wave groups (flashoverlap-paper Sec. 3.2.3-3.2.4).
#include "sim/schemes/wave_groups.hpp"

#include <stdexcept>
#include <string>

namespace overlap::sim {

int wave_count(std::int64_t tiles, std::int64_t tiles_per_wave) {
  if (tiles_per_wave <= 0) throw std::invalid_argument("wave groups: tiles per wave must be positive");
  if (tiles <= 0) return 0;
  return static_cast<int>((tiles + tiles_per_wave - 1) / tiles_per_wave);
}

std::vector<TileRange> wave_group_tiles(const std::vector<int>& group_waves, std::int64_t tiles,
                                        std::int64_t tiles_per_wave) {
  const int waves = wave_count(tiles, tiles_per_wave);
  std::vector<TileRange> out;
  std::int64_t wave = 0;
  for (int g : group_waves) {
    if (g < 1) throw std::invalid_argument("wave groups: a group must hold at least one wave (got " + std::to_string(g) + ")");
    const std::int64_t first = wave * tiles_per_wave;
    wave += g;
    const std::int64_t end = std::min(tiles, wave * tiles_per_wave);
    out.push_back({first, std::max<std::int64_t>(0, end - first)});
  }
  if (wave != waves)
    throw std::invalid_argument("wave groups: group sizes sum to " + std::to_string(wave) + " waves, the GEMM has " +
                                std::to_string(waves));
  return out;
}

std::vector<int> equal_wave_groups(int waves, int size) {
  if (size < 1) throw std::invalid_argument("wave groups: group size must be >= 1 (got " + std::to_string(size) + ")");
  std::vector<int> out;
  for (int left = waves; left > 0; left -= size) out.push_back(std::min(size, left));
  return out;
}

Bytes group_bytes(const TileRange& range, std::int64_t tiles, Bytes total_bytes) {
  if (tiles <= 0) return 0;
  auto upto = [&](std::int64_t t) {
    // total * t / tiles without overflow for realistic sizes (total < 2^40, tiles < 2^22).
    return static_cast<Bytes>((static_cast<__int128>(total_bytes) * t) / tiles);
  };
  return upto(range.first + range.count) - upto(range.first);
}

}  // namespace overlap::sim
