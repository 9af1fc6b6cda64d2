#pragma once
// FlashOverlap's wave-group latency predictor and partition search (flashoverlap-paper Sec. 4.1-4.2,
// Alg. 1; facts.md "FlashOverlap's published implementation"), plus the exact optimum under the same
// predictor and the exhaustive search it is checked against.
//
// A GEMM of T waves is cut into consecutive groups of waves; when a group's tiles are done its slice
// of the output is communicated. Alg. 1's recurrence, group by group:
//   comm_end = max(comp_end, comm_end) + comm(previous group);  comp_end += compute(group)
// and finally comm_end = max(comp_end, comm_end) + comm(last group). compute(group) =
// duration / T * |group|; comm(group) is the bandwidth curve at the group's data size.
#include <cstdint>
#include <functional>
#include <vector>

#include "cost_model/units.hpp"

namespace overlap {

struct WaveGroupProblem {
  std::int64_t tiles = 0;          // output tiles of the GEMM
  std::int64_t tiles_per_wave = 0; // SMs usable by the GEMM (FlashOverlap: sm_count - 2) * CTAs/SM
  Bytes bytes_per_tile = 0;        // tile_m * tile_n * output dtype bytes
  Ps gemm_ps = 0;                  // GEMM duration with communication holding its SMs
  std::function<Ps(Bytes)> comm_ps;  // communication time of one group's data (interpolated curve)
  // The published predictor (tune/search.py, predict_lat) prices a single group as the unsplit GEMM
  // on every SM followed by one collective: nothing overlaps, so no SMs are set aside for NCCL.
  // >= 0: that GEMM duration is used for the one-group partition; < 0: gemm_ps, like any partition.
  Ps single_group_gemm_ps = -1;

  int waves() const;  // T = ceil(tiles / tiles_per_wave)
  // Bytes of the waves [first_wave, first_wave + count); the last wave may be partial.
  Bytes group_bytes(int first_wave, int count) const;
  // Compute end after `waves_done` waves: duration / T * waves_done (cumulative, so no drift).
  Ps compute_end_ps(int waves_done) const;
};

// Predicted latency of a partition (group sizes in waves, summing to T), Alg. 1.
Ps predict_wave_groups_ps(const WaveGroupProblem& problem, const std::vector<int>& groups);

struct WaveGroupCandidate {
  std::vector<int> groups;  // in waves
  Ps predicted_ps = 0;
};

struct WaveGroupSearchResult {
  std::vector<int> groups;  // in waves
  Ps predicted_ps = 0;
  int unit_waves = 1;       // search granularity
  std::int64_t candidates = 0;  // partitions evaluated (DP: transitions)
  // The best candidates the search saw, best first (ties in evaluation order); at most the number
  // asked for. The DP keeps none (it never enumerates partitions).
  std::vector<WaveGroupCandidate> top;
};

// FlashOverlap's search as published (tune/search.py, fast_search): unit = ceil(T / 10) waves (at
// most 10 units, the last possibly shorter), every ordered composition of the units (at most
// 2^9 = 512) in the order the published generator lists them (lexicographic: [1,1,...] first),
// except those its pruning rule drops (more than 5 groups and a first group of more than 2 units);
// argmin of the predictor, the first found on ties (a candidate is kept only if strictly better).
// The paper's text states a different rule (|G_1| <= 2, |G_P| <= 4, Sec. 4.1.4); the published
// code's rule is used here. `keep_top` best candidates are returned in `top`.
WaveGroupSearchResult flashoverlap_search(const WaveGroupProblem& problem, int keep_top = 0);

// Exact minimum of the predictor over every partition into groups of whole multiples of
// `granularity_waves` (the last group may be shorter): the recurrence is monotone in the previous
// comm_end, so f(w) = min_v max(compute_end(w), f(v)) + comm(v..w) is a DP in O(T^2). A group's
// communication time depends only on its length (and on whether it holds the partial last wave), so
// the curve is read O(T) times, not O(T^2).
WaveGroupSearchResult optimal_wave_groups(const WaveGroupProblem& problem, int granularity_waves = 1);

// Every one of the 2^(T-1) compositions of the T waves, in the published exhaustive search's order;
// the reference the DP is checked against. Refuses T > kExhaustiveMaxWaves (std::length_error).
inline constexpr int kExhaustiveMaxWaves = 20;
WaveGroupSearchResult exhaustive_wave_groups(const WaveGroupProblem& problem, int keep_top = 0);

}  // namespace overlap
