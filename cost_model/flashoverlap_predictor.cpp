#include "cost_model/flashoverlap_predictor.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

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

Ps predict_wave_groups_ps(const WaveGroupProblem& problem, const std::vector<int>& groups) {
  const int t = problem.waves();
  int sum = 0;
  for (int g : groups) {
    if (g <= 0) throw std::invalid_argument("wave groups must be positive");
    sum += g;
  }
  if (sum != t) throw std::invalid_argument("wave groups must sum to the GEMM's wave count");
  if (!problem.comm_ps) throw std::invalid_argument("wave group problem has no communication model");
  // Alg. 1: for each group, the previous group's communication starts when both its tiles are done
  // and the communication before it has finished.
  Ps comp_end = 0, comm_end = 0;
  int done = 0, prev_first = 0, prev_count = 0;
  for (int g : groups) {
    const Ps comm_prev = prev_count > 0 ? problem.comm_ps(problem.group_bytes(prev_first, prev_count)) : 0;
    comm_end = std::max(comp_end, comm_end) + comm_prev;
    prev_first = done;
    prev_count = g;
    done += g;
    comp_end = problem.compute_end_ps(done);
  }
  return std::max(comp_end, comm_end) + problem.comm_ps(problem.group_bytes(prev_first, prev_count));
}

WaveGroupSearchResult flashoverlap_search(const WaveGroupProblem& problem) {
  const int t = problem.waves();
  if (t <= 0) throw std::invalid_argument("wave group search: GEMM has no waves");
  WaveGroupSearchResult best;
  best.unit_waves = (t + 9) / 10;  // ceil(T / 10)
  best.predicted_ps = std::numeric_limits<Ps>::max();
  const int units = (t + best.unit_waves - 1) / best.unit_waves;
  const unsigned masks = 1u << (units - 1);
  for (unsigned mask = 0; mask < masks; ++mask) {
    // Bit i set: a group boundary after unit i.
    std::vector<int> unit_groups;
    int run = 1;
    for (int i = 0; i < units - 1; ++i) {
      if (mask & (1u << i)) {
        unit_groups.push_back(run);
        run = 1;
      } else {
        ++run;
      }
    }
    unit_groups.push_back(run);
    if (unit_groups.size() > 5 && unit_groups.front() > 2) continue;  // the published pruning rule
    std::vector<int> groups;
    int used = 0;
    for (int u : unit_groups) {
      const int w = std::min(u * best.unit_waves, t - used);
      groups.push_back(w);
      used += w;
    }
    ++best.candidates;
    const Ps p = predict_wave_groups_ps(problem, groups);
    if (p < best.predicted_ps) {
      best.predicted_ps = p;
      best.groups = groups;
    }
  }
  return best;
}

WaveGroupSearchResult optimal_wave_groups(const WaveGroupProblem& problem, int granularity_waves) {
  const int t = problem.waves();
  if (t <= 0) throw std::invalid_argument("wave group DP: GEMM has no waves");
  if (granularity_waves <= 0) throw std::invalid_argument("wave group DP: granularity must be positive");
  if (!problem.comm_ps) throw std::invalid_argument("wave group problem has no communication model");
  std::vector<int> bounds;
  for (int w = 0; w < t; w += granularity_waves) bounds.push_back(w);
  bounds.push_back(t);
  const std::size_t nb = bounds.size();
  // f[j]: least comm_end with the last group ending at bounds[j]; from[j]: where that group starts.
  std::vector<Ps> f(nb, std::numeric_limits<Ps>::max());
  std::vector<std::size_t> from(nb, 0);
  f[0] = 0;
  for (std::size_t j = 1; j < nb; ++j) {
    const Ps comp = problem.compute_end_ps(bounds[j]);
    for (std::size_t i = 0; i < j; ++i) {
      const Ps c = std::max(comp, f[i]) + problem.comm_ps(problem.group_bytes(bounds[i], bounds[j] - bounds[i]));
      if (c < f[j]) {
        f[j] = c;
        from[j] = i;
      }
    }
  }
  WaveGroupSearchResult r;
  r.unit_waves = granularity_waves;
  r.predicted_ps = f[nb - 1];
  r.candidates = static_cast<int>(nb * (nb - 1) / 2);
  for (std::size_t j = nb - 1; j > 0; j = from[j]) r.groups.push_back(bounds[j] - bounds[from[j]]);
  std::reverse(r.groups.begin(), r.groups.end());
  return r;
}

}  // namespace overlap
