#include "calibrate/core/calibration_plan.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>
#include <utility>

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

std::vector<TrainingGemm> training_gemms() {
  // Llama-3-70B (scenarios/models/llama3-70b.json): hidden 8192, 64 query heads and 8 KV heads of 128,
  // SwiGLU FFN 28672; TP 8 with SP, so each linear sees the 8192 gathered tokens. Per rank: qkv and
  // the gate+up fc1 column-parallel (N / 8), the attention output and fc2 row-parallel (K / 8).
  constexpr std::int64_t tokens = 8192, hidden = 8192, head = 128, tp = 8;
  constexpr std::int64_t qkv = (64 + 2 * 8) * head, ffn = 28672;
  struct Linear {
    const char* name;
    std::int64_t n, k;  // the forward's N (output width) and K (input width) on one rank
  };
  const Linear linears[] = {{"qkv", qkv / tp, hidden}, {"proj", hidden, hidden / tp}, {"fc1", 2 * ffn / tp, hidden},
                            {"fc2", hidden, ffn / tp}};
  std::vector<TrainingGemm> out;
  for (const Linear& l : linears) {
    const std::string name = l.name;
    const GemmConfig forward{tokens, l.n, l.k, "bf16"}, dgrad{tokens, l.k, l.n, "bf16"}, wgrad{l.k, l.n, tokens, "bf16"};
    out.push_back({forward, "nn", name + ".forward"});
    out.push_back({dgrad, "nt", name + ".dgrad"});
    out.push_back({dgrad, "nn", name + ".dgrad"});
    out.push_back({wgrad, "tn", name + ".wgrad"});
    out.push_back({wgrad, "nn", name + ".wgrad"});
  }
  return out;
}

std::vector<std::int64_t> zipf_rows(std::int64_t total, int groups, double s) {
  if (total < 0 || groups < 1 || !(s >= 0)) throw std::invalid_argument("zipf_rows: total >= 0, groups >= 1, s >= 0");
  std::vector<double> share(static_cast<std::size_t>(groups));
  double sum = 0;
  for (int e = 0; e < groups; ++e) sum += share[static_cast<std::size_t>(e)] = std::pow(e + 1.0, -s);
  std::vector<std::int64_t> rows(share.size());
  std::vector<std::pair<double, int>> remainder;
  std::int64_t given = 0;
  for (int e = 0; e < groups; ++e) {
    const double expected = static_cast<double>(total) * share[static_cast<std::size_t>(e)] / sum;
    rows[static_cast<std::size_t>(e)] = static_cast<std::int64_t>(std::floor(expected));
    given += rows[static_cast<std::size_t>(e)];
    remainder.push_back({expected - std::floor(expected), e});
  }
  // Largest remainder first, the lower expert on a tie: the counts stay non-increasing in e.
  std::stable_sort(remainder.begin(), remainder.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = 0; given < total; ++i, ++given) ++rows[static_cast<std::size_t>(remainder[i % remainder.size()].second)];
  return rows;
}

std::vector<GroupedGemmCase> grouped_gemm_cases() {
  // Rows per local expert under uniform routing: tokens per rank x top_k x ep / experts.
  // Qwen3-235B-A22B (scenarios/qwen3-235b-ep8-moe.yaml): 128 experts top 8 over EP 8, 16 per rank,
  // d_model 4096, expert FFN 1536, 8192 tokens per rank: 4096 rows each. DeepSeek-V3
  // (deepseek-v3-ep64-moe.yaml): 256 experts top 8 over EP 64, 4 per rank, d_model 7168, FFN 2048,
  // 4096 tokens: 8192 rows each. Mixtral-8x7B (mixtral-8x7b-ep4-moe.yaml): 8 experts top 2 over EP 4,
  // 2 per rank, d_model 4096, FFN 14336, 8192 tokens: 8192 rows each.
  std::vector<GroupedGemmCase> out;
  const auto add = [&](const std::string& name, std::int64_t n, std::int64_t k, int experts, std::int64_t rows_each, double s) {
    out.push_back({s > 0 ? name + " zipf " + std::to_string(s).substr(0, 3) : name + " uniform", n, k,
                   zipf_rows(rows_each * experts, experts, s)});
  };
  for (double s : {0.0, 1.0}) {
    add("qwen3-235b ep8 gate+up", 2 * 1536, 4096, 16, 4096, s);
    add("qwen3-235b ep8 down", 4096, 1536, 16, 4096, s);
    add("deepseek-v3 ep64 gate+up", 2 * 2048, 7168, 4, 8192, s);
    add("deepseek-v3 ep64 down", 7168, 2048, 4, 8192, s);
  }
  add("mixtral-8x7b ep4 gate+up", 2 * 14336, 4096, 2, 8192, 0.0);
  // A decode-sized batch (64 tokens per rank of Qwen3's EP 8: 32 rows per expert on average): the
  // experts' weights, not their rows, set the time; skewed, several experts get none.
  add("qwen3-235b ep8 gate+up decode", 2 * 1536, 4096, 16, 32, 0.0);
  add("qwen3-235b ep8 gate+up decode", 2 * 1536, 4096, 16, 32, 1.5);
  return out;
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
