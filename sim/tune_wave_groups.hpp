#pragma once
// `overlap-sim tune` at the operator level: FlashOverlap's wave-group partition for one GEMM shape,
// primitive and GPU count (design.md "Tuning"; flashoverlap-paper Sec. 4, Alg. 1; facts.md
// "FlashOverlap's published implementation").
//
// Four searches:
//   flashoverlap  the published tuner exactly: its predictor (Alg. 1 with tune/search.py's
//                 predict_lat: waves on SMs - 2, the one-group partition priced on every SM, the
//                 bandwidth curve sampled at 2^(20 + i/4) elements and linearly interpolated), its
//                 unit of ceil(T / 10) waves, its compositions and its pruning rule.
//   optimal       the exact minimum of the same predictor (a DP over waves, O(T^2)).
//   exhaustive    all 2^(T-1) compositions under the same predictor (T <= 20): the DP's reference.
//   simulate      the engine decides: the predictor's best partitions and their neighbours are run in
//                 the simulator (partial waves, SMs NCCL takes from the GEMM, the reorder cost, the
//                 bandwidth the group sizes really get) and the engine's best is returned.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost_model/flashoverlap_predictor.hpp"
#include "cost_model/gemm_model.hpp"
#include "cost_model/hardware_profile.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/workload.hpp"

namespace overlap::sim {

enum class WaveGroupSearch { flashoverlap, optimal, exhaustive, simulate };
std::optional<WaveGroupSearch> parse_wave_group_search(const std::string& s);
const char* wave_group_search_name(WaveGroupSearch s);

struct WaveGroupTuneOptions {
  WaveGroupSearch search = WaveGroupSearch::simulate;
  // simulate: at most this many partitions run in the engine (seeds first, then neighbours of the
  // engine's best until none improves). Each run is one simulation of the whole operator.
  int simulate_budget = 40;
  // simulate: threads running a batch of partitions at once (the result does not depend on it).
  int jobs = 1;
  // Predictor searches: how many of the best predicted partitions are listed as candidates.
  int top = 5;
  // Every engine run (the candidates and the chosen partition) gives the FlashOverlap scheme
  // sm_margin: the GEMM keeps to its wave width and leaves the SMs NCCL needs free (the published
  // tuner's waves are on SMs - 2; README "Reproducing the sources" on why the RTX 4090 runs use it).
  // The baseline is no_overlap either way. The predictor searches do not depend on it.
  bool sm_margin = false;
};

struct WaveGroupTrial {
  std::vector<int> groups_waves;
  Ps predicted_ps = 0;   // the published predictor
  Ps simulated_ps = -1;  // the engine; < 0 = not simulated
  std::string origin;    // why it was evaluated ("flashoverlap search", "neighbour of #3", ...)
};

struct WaveGroupTuneResult {
  WaveGroupSearch search = WaveGroupSearch::simulate;
  bool sm_margin = false;  // WaveGroupTuneOptions::sm_margin, as the engine runs had it
  std::vector<int> groups_waves;
  std::vector<std::int64_t> groups_tiles;
  Ps predicted_ps = 0;    // the predictor's latency of the chosen partition
  Ps simulated_ps = 0;    // the engine's latency of the chosen partition (FlashOverlap scheme)
  Ps no_overlap_ps = 0;   // the engine's latency of GEMM then one collective
  double speedup_vs_no_overlap = 0;
  std::vector<WaveGroupTrial> candidates;
  double search_ms = 0;   // wall time of the search (for simulate: including its engine runs)
  int engine_runs = 0;    // simulations the search made (simulate), else 0
  // The problem as the published tuner sees it.
  GemmPlan plan;
  int waves = 0;
  std::int64_t tiles_per_wave = 0;
  int unit_waves = 1;      // the flashoverlap search's unit
  Ps gemm_alone_ps = 0;    // the GEMM on every SM, nothing else running
};

// The wave-group problem exactly as FlashOverlap's published tuner builds it for this GEMM (per-rank
// m, n, k), primitive and rank count: tiles on SMs - 2 (times CTAs per SM, as the scheme dispatches
// them), the GEMM's all-SM duration rescaled to the SMs - 2 wave count, M*N // tiles elements per
// tile, and the collective's bandwidth curve sampled at int(2^(20 + i/4)) // 1024 * 1024 elements
// (i = 0..35) and linearly interpolated (clamped at both ends, as numpy.interp does).
WaveGroupProblem published_wave_group_problem(const HardwareProfile& hw, const GemmCollective& g, int ranks);

// Runs the FlashOverlap scheme with explicit `groups` (waves) in the engine; returns its latency.
Ps simulate_wave_groups_ps(const Workload& w, const HardwareProfile& hw, Fidelity fidelity,
                           const std::vector<int>& groups, bool sm_margin = false);

// Tunes a gemm_collective workload (primitive all_reduce, reduce_scatter or all_to_all; tp >= 2).
// Throws InputError for a workload the scheme cannot run, std::length_error for an exhaustive search
// over more than kExhaustiveMaxWaves waves.
WaveGroupTuneResult tune_wave_groups(const Workload& w, const HardwareProfile& hw, Fidelity fidelity,
                                     const WaveGroupTuneOptions& options = {});

// {"groups_waves", "groups_tiles", "predicted_us", "simulated_us", "no_overlap_us",
//  "speedup_vs_no_overlap", "search", "candidates", "search_ms", ...}
nlohmann::json to_json(const WaveGroupTuneResult& r);
// The table lists the best `top` candidates (the JSON has them all).
std::string format_tune_table(const WaveGroupTuneResult& r, const Workload& w, const std::string& hardware_name,
                              int top = 10);

// Tile indices (row-major over the ceil(M/BM) x ceil(N/BN) tile grid) in the order a CUTLASS 2.x
// kernel with GemmIdentityThreadblockSwizzle<swizzle> launches them: the grid is (grid_m * 2^L) x
// ceil(grid_n / 2^L) CTAs, x fastest, and CTA (x, y) computes tile (x >> L, (y << L) + x mod 2^L),
// where 2^L is the swizzle narrowed to what grid_n allows (8 needs grid_n >= 6, 4 needs >= 3,
// 2 needs >= 2). Out-of-range CTAs do nothing. FlashOverlap's published kernels use swizzles 1-8.
std::vector<std::int64_t> swizzled_tile_order(std::int64_t grid_m, std::int64_t grid_n, int swizzle);

// The configuration FlashOverlap's published kernels read (the JSON its tuner writes,
// configs/m{M}n{N}k{K}_{gpu}.json): BM, BN, dur (GEMM ms), Algo (when known), hint (tile order,
// grouped by wave), cSeg (group sizes in tiles), rLDN; plus an "overlap_sim" object saying where the
// numbers come from.
nlohmann::ordered_json flashoverlap_config(const WaveGroupTuneResult& r, const GemmCollective& g, int swizzle,
                                           std::optional<int> algo);

}  // namespace overlap::sim
