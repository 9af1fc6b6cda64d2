#include "calibrate/core/calibration_plan.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

namespace overlap::calibrate {

std::vector<GemmConfig> gemm_grid() {
  std::vector<GemmConfig> grid;
  const std::int64_t dims[] = {1024, 4096, 8192};
  for (auto m : dims)
    for (auto n : dims)
      for (auto k : dims) grid.push_back({m, n, k, "bf16"});
  for (const char* dt : {"fp16", "fp8"})
    for (auto d : dims) grid.push_back({d, d, d, dt});
  // The scheme sweep's GEMMs (calibrate/configs/schemes_virtual.json): FlashOverlap-style operator
  // shapes per rank, and the batch-1 decode GEMVs.
  for (GemmConfig g : {GemmConfig{4096, 8192, 2048, "bf16"}, GemmConfig{8192, 4096, 4096, "bf16"},
                       GemmConfig{2048, 8192, 8192, "bf16"}, GemmConfig{16, 8192, 8192, "bf16"},
                       GemmConfig{16, 28672, 8192, "bf16"}}) {
    grid.push_back(g);
  }
  return grid;
}

std::vector<GemmConfig> gemm_sm_shapes() {
  return {{8192, 8192, 4096, "bf16"}, {4096, 4096, 4096, "bf16"}, {2048, 8192, 8192, "bf16"}};
}

std::vector<int> sm_partition_counts(int sm_count, int min_partition) {
  if (sm_count < 1 || min_partition < 1) throw std::invalid_argument("sm_partition_counts: counts must be positive");
  std::vector<int> out;
  for (int k = min_partition; k < sm_count; k += min_partition) out.push_back(k);
  out.push_back(sm_count);
  return out;
}

std::vector<GemmConfig> gemm_wave_shapes(int sm_count) {
  // N = 2048 gives 16 columns of 128-wide tiles (8 of 256-wide): M = 128 j makes 16 j tiles, so
  // about 3 full waves of sm_count tiles at the largest j.
  std::vector<GemmConfig> out;
  const int rows = std::max(2, (3 * sm_count + 15) / 16);
  for (int j = 1; j <= rows; ++j) out.push_back({128LL * j, 2048, 4096, "bf16"});
  return out;
}

GemmConfig gemm_tile_shape(int sm_count, std::int64_t k) {
  if (sm_count < 1 || k < 1) throw std::invalid_argument("gemm_tile_shape: sm_count and k must be positive");
  int a = 1;
  for (int d = 1; d * d <= sm_count; ++d) {
    if (sm_count % d == 0) a = d;
  }
  const int b = sm_count / a;
  return {256LL * a, 256LL * b, k, "bf16"};
}

double gemm_tile_us_from(double duration_us, std::int64_t m, std::int64_t n, std::int64_t k, int sm_count) {
  if (!(duration_us > 0) || m < 1 || n < 1 || k < 1 || sm_count < 1) {
    throw std::invalid_argument("gemm_tile_us_from: arguments must be positive");
  }
  const double tiles = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) / (128.0 * 128.0 * 1024.0);
  return duration_us * sm_count / tiles;
}

std::vector<std::int64_t> transfer_sizes() {
  std::vector<std::int64_t> out;
  for (std::int64_t s = 1024; s <= (1LL << 30); s *= 2) out.push_back(s);
  return out;
}

std::vector<int> sm_copy_ctas(int sm_count) {
  std::vector<int> out;
  for (int k : {1, 2, 4, 8, 16, 32, 64}) {
    if (k < sm_count) out.push_back(k);
  }
  out.push_back(sm_count);
  return out;
}

std::vector<std::int64_t> sm_copy_sizes() { return {1LL << 20, 16LL << 20, 256LL << 20}; }

std::vector<int> interference_ctas(int sm_count) {
  std::vector<int> out;
  for (int k : {2, 4, 8, 16, 24, 32}) {
    if (k < sm_count) out.push_back(k);
  }
  return out;
}

double busbw_factor(const std::string& primitive, int ranks) {
  if (ranks < 1) throw std::invalid_argument("busbw_factor: ranks must be at least 1");
  const double n = ranks;
  if (primitive == "all_reduce") return 2.0 * (n - 1) / n;
  if (primitive == "reduce_scatter" || primitive == "all_gather" || primitive == "all_to_all") return (n - 1) / n;
  throw std::invalid_argument("busbw_factor: unknown primitive '" + primitive + "'");
}

std::string results_dir_name(const std::string& gpu_name, const std::string& host) {
  std::string out;
  for (char ch : gpu_name + "-" + host) {
    const unsigned char c = static_cast<unsigned char>(ch);
    char lower = static_cast<char>(std::tolower(c));
    const bool ok = std::isalnum(c) || lower == '.' || lower == '_' || lower == '-';
    if (!ok) lower = '-';
    if (lower == '-' && !out.empty() && out.back() == '-') continue;
    out.push_back(lower);
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  while (!out.empty() && out.front() == '-') out.erase(out.begin());
  return out.empty() ? "unknown" : out;
}

}  // namespace overlap::calibrate
