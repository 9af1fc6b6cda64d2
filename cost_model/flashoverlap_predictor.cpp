#include "cost_model/flashoverlap_predictor.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace overlap {

int WaveGroupProblem::waves() const {
  if (tiles <= 0 || tiles_per_wave <= 0) return 0;
  return static_cast<int>((tiles + tiles_per_wave - 1) / tiles_per_wave);
}

Bytes WaveGroupProblem::group_bytes(int first_wave, int count) const {
  const std::int64_t begin = std::min<std::int64_t>(tiles, static_cast<std::int64_t>(first_wave) * tiles_per_wave);
  const std::int64_t end =
      std::min<std::int64_t>(tiles, static_cast<std::int64_t>(first_wave + count) * tiles_per_wave);
  return (end - begin) * bytes_per_tile;
}

Ps WaveGroupProblem::compute_end_ps(int waves_done) const {
  const int t = waves();
  if (t == 0) return 0;
  // gemm_ps * w / T without overflow for realistic sizes (gemm_ps < 2^63 / T).
  return gemm_ps / t * waves_done + (gemm_ps % t) * waves_done / t;
}

namespace {

constexpr Ps kNever = std::numeric_limits<Ps>::max();

// A group's communication time depends only on its length in waves and on whether it ends at the
// last (possibly partial) wave, so each distinct value is read from the curve once.
class CommTable {
 public:
  explicit CommTable(const WaveGroupProblem& p) : p_(p), t_(p.waves()) {
    if (!p.comm_ps) throw std::invalid_argument("wave group problem has no communication model");
    inner_.assign(static_cast<std::size_t>(t_) + 1, -1);
    tail_.assign(static_cast<std::size_t>(t_) + 1, -1);
  }
  Ps operator()(int first, int count) {
    std::vector<Ps>& cache = first + count >= t_ ? tail_ : inner_;
    Ps& v = cache[static_cast<std::size_t>(count)];
    if (v < 0) v = p_.comm_ps(p_.group_bytes(first, count));
    return v;
  }

 private:
  const WaveGroupProblem& p_;
  int t_;
  std::vector<Ps> inner_, tail_;
};

void check_groups(const WaveGroupProblem& problem, const std::vector<int>& groups) {
  int sum = 0;
  for (int g : groups) {
    if (g <= 0) throw std::invalid_argument("wave groups must be positive");
    sum += g;
  }
  if (sum != problem.waves()) throw std::invalid_argument("wave groups must sum to the GEMM's wave count");
}

Ps predict_with(const WaveGroupProblem& problem, const std::vector<int>& groups, CommTable& comm) {
  if (groups.size() == 1 && problem.single_group_gemm_ps >= 0)
    return problem.single_group_gemm_ps + comm(0, groups[0]);
  // Alg. 1: for each group, the previous group's communication starts when both its tiles are done
  // and the communication before it has finished.
  Ps comp_end = 0, comm_end = 0;
  int done = 0, prev_first = 0, prev_count = 0;
  for (int g : groups) {
    const Ps comm_prev = prev_count > 0 ? comm(prev_first, prev_count) : 0;
    comm_end = std::max(comp_end, comm_end) + comm_prev;
    prev_first = done;
    prev_count = g;
    done += g;
    comp_end = problem.compute_end_ps(done);
  }
  return std::max(comp_end, comm_end) + comm(prev_first, prev_count);
}

// The best `keep` candidates, best first; equal predictions keep their evaluation order.
void keep_best(std::vector<WaveGroupCandidate>& top, std::size_t keep, const std::vector<int>& groups, Ps p) {
  if (keep == 0) return;
  if (top.size() == keep && p >= top.back().predicted_ps) return;
  auto at = std::upper_bound(top.begin(), top.end(), p,
                             [](Ps v, const WaveGroupCandidate& c) { return v < c.predicted_ps; });
  top.insert(at, WaveGroupCandidate{groups, p});
  if (top.size() > keep) top.pop_back();
}

// Calls visit(parts) for every ordered composition of n, in the order the published generator
// (tune/search.py, integer_partitions) lists them: the first part ascending, then recursively.
template <typename Visit>
void compositions(int n, std::vector<int>& parts, Visit&& visit) {
  if (n == 0) {
    visit(parts);
    return;
  }
  for (int i = 1; i <= n; ++i) {
    parts.push_back(i);
    compositions(n - i, parts, visit);
    parts.pop_back();
  }
}

}  // namespace

Ps predict_wave_groups_ps(const WaveGroupProblem& problem, const std::vector<int>& groups) {
  check_groups(problem, groups);
  CommTable comm(problem);
  return predict_with(problem, groups, comm);
}

WaveGroupSearchResult flashoverlap_search(const WaveGroupProblem& problem, int keep_top) {
  const int t = problem.waves();
  if (t <= 0) throw std::invalid_argument("wave group search: GEMM has no waves");
  CommTable comm(problem);
  WaveGroupSearchResult best;
  best.unit_waves = (t + 9) / 10;  // ceil(T / 10): min_group_size
  best.predicted_ps = kNever;
  const int units = (t + best.unit_waves - 1) / best.unit_waves;
  std::vector<int> parts, groups;
  compositions(units, parts, [&](const std::vector<int>& unit_groups) {
    if (unit_groups.size() > 5 && unit_groups.front() > 2) return;  // the published pruning rule
    groups.clear();
    int used = 0;
    for (int u : unit_groups) {
      const int w = std::min(u * best.unit_waves, t - used);
      groups.push_back(w);
      used += w;
    }
    ++best.candidates;
    const Ps p = predict_with(problem, groups, comm);
    keep_best(best.top, static_cast<std::size_t>(std::max(0, keep_top)), groups, p);
    if (p < best.predicted_ps) {
      best.predicted_ps = p;
      best.groups = groups;
    }
  });
  return best;
}

WaveGroupSearchResult exhaustive_wave_groups(const WaveGroupProblem& problem, int keep_top) {
  const int t = problem.waves();
  if (t <= 0) throw std::invalid_argument("wave group search: GEMM has no waves");
  if (t > kExhaustiveMaxWaves)
    throw std::length_error("exhaustive search enumerates all 2^(T-1) partitions; this GEMM has T = " +
                            std::to_string(t) + " waves (limit " + std::to_string(kExhaustiveMaxWaves) +
                            "): use the optimal search, which finds the same optimum in O(T^2)");
  CommTable comm(problem);
  WaveGroupSearchResult best;
  best.predicted_ps = kNever;
  const std::size_t keep = static_cast<std::size_t>(std::max(0, keep_top));
  std::vector<int> groups;
  // Depth-first in the published order, carrying Alg. 1's state so each leaf costs O(1):
  // `comm_end` after the communication of every group but the last one placed.
  auto dfs = [&](auto&& self, int done, Ps comm_end) -> void {
    if (done == t) {
      ++best.candidates;
      const int last = groups.back();
      const Ps p = groups.size() == 1 && problem.single_group_gemm_ps >= 0
                       ? problem.single_group_gemm_ps + comm(0, last)
                       : std::max(problem.compute_end_ps(t), comm_end) + comm(t - last, last);
      keep_best(best.top, keep, groups, p);
      if (p < best.predicted_ps) {
        best.predicted_ps = p;
        best.groups = groups;
      }
      return;
    }
    const Ps next_comm_end =
        groups.empty() ? 0 : std::max(problem.compute_end_ps(done), comm_end) + comm(done - groups.back(), groups.back());
    for (int g = 1; done + g <= t; ++g) {
      groups.push_back(g);
      self(self, done + g, next_comm_end);
      groups.pop_back();
    }
  };
  dfs(dfs, 0, 0);
  return best;
}

WaveGroupSearchResult optimal_wave_groups(const WaveGroupProblem& problem, int granularity_waves) {
  const int t = problem.waves();
  if (t <= 0) throw std::invalid_argument("wave group DP: GEMM has no waves");
  if (granularity_waves <= 0) throw std::invalid_argument("wave group DP: granularity must be positive");
  CommTable comm(problem);
  std::vector<int> bounds;
  for (int w = 0; w < t; w += granularity_waves) bounds.push_back(w);
  bounds.push_back(t);
  const std::size_t nb = bounds.size();
  // f[j]: least comm_end with the last group ending at bounds[j]; from[j]: where that group starts.
  std::vector<Ps> f(nb, kNever);
  std::vector<std::size_t> from(nb, 0);
  f[0] = 0;
  WaveGroupSearchResult r;
  for (std::size_t j = 1; j < nb; ++j) {
    const Ps comp = problem.compute_end_ps(bounds[j]);
    // With the published single-group price, the one-group partition is scored apart below.
    const std::size_t first_i = j + 1 == nb && problem.single_group_gemm_ps >= 0 ? 1 : 0;
    for (std::size_t i = first_i; i < j; ++i) {
      const Ps c = std::max(comp, f[i]) + comm(bounds[i], bounds[j] - bounds[i]);
      ++r.candidates;
      if (c < f[j]) {
        f[j] = c;
        from[j] = i;
      }
    }
  }
  if (problem.single_group_gemm_ps >= 0) {
    const Ps single = problem.single_group_gemm_ps + comm(0, t);
    ++r.candidates;
    if (single <= f[nb - 1]) {  // ties: the simpler partition
      f[nb - 1] = single;
      from[nb - 1] = 0;
    }
  }
  r.unit_waves = granularity_waves;
  r.predicted_ps = f[nb - 1];
  for (std::size_t j = nb - 1; j > 0; j = from[j]) r.groups.push_back(bounds[j] - bounds[from[j]]);
  std::reverse(r.groups.begin(), r.groups.end());
  return r;
}

}  // namespace overlap
