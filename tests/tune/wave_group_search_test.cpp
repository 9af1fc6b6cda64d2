// FlashOverlap wave-group searches (cost_model/flashoverlap_predictor.hpp): the exact DP against the
// exhaustive enumeration on random curves, the published search's order, unit and pruning, and the
// problem the published tuner builds (sim/tune_wave_groups.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "cost_model/collective_model.hpp"
#include "cost_model/flashoverlap_predictor.hpp"
#include "cost_model/gemm_model.hpp"
#include "cost_model/profile_loader.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/tune_wave_groups.hpp"

using namespace overlap;

namespace {

// A random problem of `waves` waves (the last one partial when `partial`) with a random
// communication curve: latency + bytes / bandwidth, where the bandwidth rises with the size (the
// shape of a measured NCCL curve) or is piecewise with a step, so greedy choices are not optimal.
WaveGroupProblem random_problem(std::mt19937& rng, int waves, bool partial) {
  WaveGroupProblem p;
  p.tiles_per_wave = 4 + static_cast<int>(rng() % 100);
  p.tiles = p.tiles_per_wave * waves - (partial ? 1 + static_cast<int>(rng() % (p.tiles_per_wave - 1)) : 0);
  p.bytes_per_tile = 1 << (10 + rng() % 8);
  p.gemm_ps = 1'000'000 + static_cast<Ps>(rng() % 100'000'000);
  const double alpha = static_cast<double>(rng() % 20'000'000);  // up to 20 us
  const double peak = 0.05 + static_cast<double>(rng() % 1000) / 1000.0;  // bytes per ps at large sizes
  const double half = static_cast<double>(p.bytes_per_tile) * p.tiles_per_wave * (1 + rng() % 4);
  const bool step = rng() % 2 == 0;
  p.comm_ps = [=](Bytes b) -> Ps {
    const double x = static_cast<double>(b);
    const double bw = step ? (x < half ? peak / 3 : peak) : peak * x / (x + half);
    return static_cast<Ps>(alpha + x / bw);
  };
  if (rng() % 3 == 0) p.single_group_gemm_ps = p.gemm_ps - static_cast<Ps>(rng() % (p.gemm_ps / 10));
  return p;
}

int sum(const std::vector<int>& v) {
  int s = 0;
  for (int x : v) s += x;
  return s;
}

}  // namespace

TEST_CASE("optimal equals exhaustive on random curves for T <= 16, never worse than flashoverlap", "[tune][flashoverlap]") {
  std::mt19937 rng(2024);
  for (int iter = 0; iter < 150; ++iter) {
    const int waves = 1 + iter % 16;
    const WaveGroupProblem p = random_problem(rng, waves, iter % 2 == 1);
    INFO("iteration " << iter << ", T = " << p.waves());
    REQUIRE(p.waves() == waves);
    const auto exhaustive = exhaustive_wave_groups(p);
    const auto optimal = optimal_wave_groups(p);
    const auto published = flashoverlap_search(p);
    // Every composition is enumerated once.
    CHECK(exhaustive.candidates == (std::int64_t{1} << (waves - 1)));
    CHECK(optimal.predicted_ps == exhaustive.predicted_ps);
    // Both report what the predictor says of the partition they return.
    CHECK(predict_wave_groups_ps(p, optimal.groups) == optimal.predicted_ps);
    CHECK(predict_wave_groups_ps(p, exhaustive.groups) == exhaustive.predicted_ps);
    CHECK(sum(optimal.groups) == waves);
    CHECK(optimal.predicted_ps <= published.predicted_ps);
    CHECK(predict_wave_groups_ps(p, published.groups) == published.predicted_ps);
  }
}

TEST_CASE("the DP is exact at a coarser granularity too", "[tune][flashoverlap]") {
  std::mt19937 rng(99);
  for (int iter = 0; iter < 40; ++iter) {
    const int waves = 4 + iter % 13;
    const WaveGroupProblem p = random_problem(rng, waves, true);
    const int g = 2 + iter % 3;
    // Brute force over the partitions whose groups are whole multiples of g (the last may be shorter).
    const int units = (waves + g - 1) / g;
    Ps best = -1;
    for (unsigned mask = 0; mask < (1u << (units - 1)); ++mask) {
      std::vector<int> groups;
      int run = 1, used = 0;
      for (int i = 0; i < units; ++i) {
        if (i == units - 1 || (mask & (1u << i))) {
          const int w = std::min(run * g, waves - used);
          groups.push_back(w);
          used += w;
          run = 1;
        } else {
          ++run;
        }
      }
      const Ps v = predict_wave_groups_ps(p, groups);
      if (best < 0 || v < best) best = v;
    }
    CHECK(optimal_wave_groups(p, g).predicted_ps == best);
  }
}

TEST_CASE("exhaustive search refuses more than 20 waves", "[tune][flashoverlap]") {
  WaveGroupProblem p;
  p.tiles_per_wave = 10;
  p.tiles = 10 * 21;
  p.bytes_per_tile = 100;
  p.gemm_ps = 21000;
  p.comm_ps = [](Bytes b) { return 50 + b / 10; };
  REQUIRE(p.waves() == 21);
  CHECK_THROWS_AS(exhaustive_wave_groups(p), std::length_error);
  try {
    exhaustive_wave_groups(p);
  } catch (const std::length_error& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("T = 21") && Catch::Contains("20"));
  }
  p.tiles = 10 * 20;
  CHECK(exhaustive_wave_groups(p).candidates == (1 << 19));
}

TEST_CASE("the published search lists compositions in its generator's order and keeps the first of ties", "[tune][flashoverlap]") {
  // Free communication: every partition predicts the GEMM time, so the first candidate wins. The
  // published generator (tune/search.py, integer_partitions) lists [1, 1, 1, 1] first.
  WaveGroupProblem p;
  p.tiles_per_wave = 10;
  p.tiles = 40;
  p.bytes_per_tile = 100;
  p.gemm_ps = 4000;
  p.comm_ps = [](Bytes) { return Ps{0}; };
  const auto s = flashoverlap_search(p, 8);
  CHECK(s.groups == std::vector<int>{1, 1, 1, 1});
  REQUIRE(s.top.size() == 8);
  // Ties keep the enumeration order: lexicographic, first part ascending.
  CHECK(s.top[0].groups == std::vector<int>{1, 1, 1, 1});
  CHECK(s.top[1].groups == std::vector<int>{1, 1, 2});
  CHECK(s.top[2].groups == std::vector<int>{1, 2, 1});
  CHECK(s.top[3].groups == std::vector<int>{1, 3});
  CHECK(s.top[4].groups == std::vector<int>{2, 1, 1});
  CHECK(s.top[7].groups == std::vector<int>{4});
}

TEST_CASE("the published search's candidate count follows its unit and pruning rule", "[tune][flashoverlap]") {
  // Counted independently: compositions of `units` units minus those with more than 5 groups and a
  // first group of more than 2 units.
  auto expected = [](int units) {
    std::int64_t n = 0;
    for (unsigned mask = 0; mask < (1u << (units - 1)); ++mask) {
      int groups = 1, first = 0, run = 1;
      for (int i = 0; i < units - 1; ++i) {
        if (mask & (1u << i)) {
          if (first == 0) first = run;
          ++groups;
          run = 1;
        } else {
          ++run;
        }
      }
      if (first == 0) first = run;
      if (!(groups > 5 && first > 2)) ++n;
    }
    return n;
  };
  for (int waves : {1, 5, 10, 11, 25, 64, 100, 1000}) {
    WaveGroupProblem p;
    p.tiles_per_wave = 8;
    p.tiles = 8 * waves;
    p.bytes_per_tile = 4096;
    p.gemm_ps = 1'000'000 * waves;
    p.comm_ps = [](Bytes b) { return 5'000'000 + b * 10; };
    const auto s = flashoverlap_search(p);
    const int unit = (waves + 9) / 10;
    const int units = (waves + unit - 1) / unit;
    INFO("T = " << waves);
    CHECK(s.unit_waves == unit);
    CHECK(s.candidates == expected(units));
    CHECK(s.candidates <= 512);
    CHECK(sum(s.groups) == waves);
    // Every group but the last is a whole number of units.
    for (std::size_t i = 0; i + 1 < s.groups.size(); ++i) CHECK(s.groups[i] % unit == 0);
  }
}

TEST_CASE("the published problem: SMs - 2 waves, the rescaled GEMM, and the sampled curve", "[tune][flashoverlap]") {
  const HardwareProfile hw = load_profile("a800-8x-nvlink", std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware");
  const sim::GemmCollective g{8192, 8192, 4096, DType::fp16, sim::Primitive::all_reduce, false};
  const WaveGroupProblem p = sim::published_wave_group_problem(hw, g, 4);
  const GemmPlan plan = plan_gemm(hw, GemmShape{g.m, g.n, g.k, g.dtype});
  const int sms = hw.gpu.sm_count;
  CHECK(p.tiles == plan.tiles);
  CHECK(p.tiles_per_wave == (sms - 2) * plan.ctas_per_sm);
  const Ps alone = gemm_time_ps(hw, GemmShape{g.m, g.n, g.k, g.dtype});
  CHECK(p.single_group_gemm_ps == alone);
  // predict_lat: gemm_dur / old_wave_num * new_wave_num.
  CHECK(p.gemm_ps == alone * plan.waves(sms - 2) / plan.waves(sms));
  CHECK(p.bytes_per_tile == g.m * g.n / plan.tiles * 2);

  // The curve: the collective model at the sample sizes (int(2^(20 + i/4)) // 1024 * 1024 elements),
  // linear in bandwidth between them, the end bandwidths beyond them.
  const std::string link = sim::collective_link_class(hw, 4);
  const auto algo = sim::default_algorithm(hw, sim::Primitive::all_reduce);
  auto model = [&](Bytes b) { return collective_time_ps(hw, CollectivePrimitive::all_reduce, b, 4, link, algo); };
  auto sample = [](int i) { return static_cast<Bytes>(std::pow(2.0, 20 + 0.25 * i)) / 1024 * 1024 * 2; };
  for (int i : {0, 1, 7, 20, 35}) CHECK(std::llabs(p.comm_ps(sample(i)) - model(sample(i))) <= 1);
  const Bytes a = sample(10), b = sample(11), mid = (a + b) / 2;
  const double bw_a = static_cast<double>(a) / static_cast<double>(model(a));
  const double bw_b = static_cast<double>(b) / static_cast<double>(model(b));
  const double bw = bw_a + (bw_b - bw_a) * static_cast<double>(mid - a) / static_cast<double>(b - a);
  CHECK(static_cast<double>(p.comm_ps(mid)) == Approx(static_cast<double>(mid) / bw).margin(1.0));  // ps, rounded up
  // Below the first sample the first bandwidth holds (no latency floor: the published shortcut).
  const double bw0 = static_cast<double>(sample(0)) / static_cast<double>(model(sample(0)));
  CHECK(static_cast<double>(p.comm_ps(1 << 16)) == Approx(65536.0 / bw0).margin(1.0));
  const double bw35 = static_cast<double>(sample(35)) / static_cast<double>(model(sample(35)));
  CHECK(static_cast<double>(p.comm_ps(sample(35) * 4)) == Approx(static_cast<double>(sample(35) * 4) / bw35).margin(1.0));
}

TEST_CASE("CUTLASS swizzled tile order: a permutation, M-fastest for swizzle 1", "[tune][flashoverlap]") {
  CHECK(sim::swizzled_tile_order(2, 3, 1) == std::vector<std::int64_t>{0, 3, 1, 4, 2, 5});
  // Swizzle 2 on a 2 x 3 grid: CTAs (x, y) over a 4 x 2 launch grid, tile (x >> 1, 2y + (x & 1)).
  CHECK(sim::swizzled_tile_order(2, 3, 2) == std::vector<std::int64_t>{0, 1, 3, 4, 2, 5});
  for (int swizzle : {1, 2, 4, 8}) {
    for (auto [gm, gn] : {std::pair<int, int>{1, 1}, {7, 5}, {32, 64}, {13, 6}, {3, 2}}) {
      const auto order = sim::swizzled_tile_order(gm, gn, swizzle);
      std::set<std::int64_t> seen(order.begin(), order.end());
      CHECK(order.size() == static_cast<std::size_t>(gm * gn));
      CHECK(seen.size() == order.size());
      CHECK(*seen.begin() == 0);
      CHECK(*seen.rbegin() == gm * gn - 1);
    }
  }
}
