// flashoverlap-paper Alg. 1 on a hand-computed case; the search against the exact DP.
#include <catch2/catch.hpp>

#include <random>

#include "cost_model/flashoverlap_predictor.hpp"

using namespace overlap;

namespace {
// 4 waves of 10 tiles, 100 B per tile, GEMM 400 ps (100 per wave), comm = 50 + bytes / 10.
WaveGroupProblem small_problem() {
  WaveGroupProblem p;
  p.tiles = 40;
  p.tiles_per_wave = 10;
  p.bytes_per_tile = 100;
  p.gemm_ps = 400;
  p.comm_ps = [](Bytes b) { return 50 + b / 10; };
  return p;
}

Ps brute_force(const WaveGroupProblem& p) {
  const int t = p.waves();
  Ps best = -1;
  for (unsigned mask = 0; mask < (1u << (t - 1)); ++mask) {
    std::vector<int> g;
    int run = 1;
    for (int i = 0; i < t - 1; ++i) {
      if (mask & (1u << i)) { g.push_back(run); run = 1; } else { ++run; }
    }
    g.push_back(run);
    const Ps v = predict_wave_groups_ps(p, g);
    if (best < 0 || v < best) best = v;
  }
  return best;
}
}  // namespace

TEST_CASE("Alg. 1 predictor on a hand-computed partition", "[flashoverlap]") {
  const WaveGroupProblem p = small_problem();
  REQUIRE(p.waves() == 4);
  // [1,1,2]: comm(G0) starts at 100 -> 250; comm(G1) at max(200,250) -> 400; comm(G2) at
  // max(400,400) -> 400 + (50 + 2000/10) = 650.
  CHECK(predict_wave_groups_ps(p, {1, 1, 2}) == 650);
  CHECK(predict_wave_groups_ps(p, {4}) == 400 + 450);
  CHECK(predict_wave_groups_ps(p, {1, 1, 1, 1}) == 700);
  CHECK(predict_wave_groups_ps(p, {2, 2}) == 700);
  CHECK(predict_wave_groups_ps(p, {3, 1}) == 800);
  CHECK_THROWS_AS(predict_wave_groups_ps(p, {1, 1}), std::invalid_argument);
}

TEST_CASE("FlashOverlap search and DP find the hand-computed optimum", "[flashoverlap]") {
  const WaveGroupProblem p = small_problem();
  const auto s = flashoverlap_search(p);
  CHECK(s.unit_waves == 1);
  CHECK(s.candidates == 8);
  CHECK(s.predicted_ps == 650);
  CHECK(s.groups == std::vector<int>{1, 1, 2});
  const auto d = optimal_wave_groups(p);
  CHECK(d.predicted_ps == 650);
  CHECK(d.groups == std::vector<int>{1, 1, 2});
}

TEST_CASE("search unit and pruning follow the published implementation", "[flashoverlap]") {
  WaveGroupProblem p = small_problem();
  p.tiles = 10 * 25;  // 25 waves -> unit = ceil(25/10) = 3 waves, 9 units, 2^8 compositions
  p.gemm_ps = 2500;
  const auto s = flashoverlap_search(p);
  CHECK(s.unit_waves == 3);
  CHECK(s.candidates < 256);  // some compositions with > 5 groups and a first group > 2 units pruned
  int sum = 0;
  for (int g : s.groups) sum += g;
  CHECK(sum == 25);
}

TEST_CASE("DP optimum <= search, and equals brute force", "[flashoverlap]") {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 60; ++iter) {
    WaveGroupProblem p;
    p.tiles_per_wave = 1 + static_cast<int>(rng() % 20);
    p.tiles = p.tiles_per_wave * (1 + static_cast<int>(rng() % 12)) - static_cast<int>(rng() % p.tiles_per_wave);
    p.bytes_per_tile = 1000;
    p.gemm_ps = 1000 + static_cast<Ps>(rng() % 100000);
    const Ps alpha = static_cast<Ps>(rng() % 5000);
    const Ps per_kb = 1 + static_cast<Ps>(rng() % 300);
    p.comm_ps = [alpha, per_kb](Bytes b) { return alpha + b / 1000 * per_kb; };
    const auto dp = optimal_wave_groups(p);
    const auto search = flashoverlap_search(p);
    CHECK(dp.predicted_ps <= search.predicted_ps);
    CHECK(dp.predicted_ps == predict_wave_groups_ps(p, dp.groups));
    CHECK(dp.predicted_ps == brute_force(p));
  }
}
