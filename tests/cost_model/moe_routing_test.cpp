// MoE routing (cost_model/moe_routing.hpp): every source routes T x top_k slots; uniform splits
// exactly; zipf S = 0 is uniform and zipf's counts are its closed form; capacity drops what exceeds
// ceil(T k / E x C) per source and expert; pairs and per-expert rows follow the contiguous expert
// layout; bad shapes and histograms raise InputError naming file, line and key.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>

#include <unistd.h>

#include "cost_model/input_error.hpp"
#include "cost_model/moe_routing.hpp"

using namespace overlap;
using Kind = MoeRoutingSpec::Kind;

namespace {

MoeRoutingSpec zipf(double s, std::uint64_t seed = 0) {
  MoeRoutingSpec spec;
  spec.kind = Kind::zipf;
  spec.zipf_s = s;
  spec.seed = seed;
  return spec;
}

MoeRoutingSpec histogram(const std::string& file) {
  MoeRoutingSpec spec;
  spec.kind = Kind::histogram;
  spec.histogram_file = file;
  return spec;
}

std::int64_t row_sum(const std::vector<std::int64_t>& row) {
  return std::accumulate(row.begin(), row.end(), std::int64_t{0});
}

// The invariants every routing keeps.
void require_consistent(const MoeShape& shape, const MoeRouting& r) {
  const int per_rank = shape.experts / shape.ep_ranks;
  REQUIRE(r.experts_per_rank == per_rank);
  REQUIRE(r.routed.size() == static_cast<std::size_t>(shape.ep_ranks));
  std::int64_t received = 0;
  for (int s = 0; s < shape.ep_ranks; ++s) {
    REQUIRE(row_sum(r.routed[s]) == shape.tokens_per_rank * shape.top_k);
    for (int e = 0; e < shape.experts; ++e) {
      REQUIRE(r.routed[s][e] >= 0);
      REQUIRE(r.routed[s][e] <= shape.tokens_per_rank);  // top-k experts are distinct
      REQUIRE(r.tokens[s][e] <= r.routed[s][e]);
    }
    // What a source dispatches = what its row of pairs sends.
    REQUIRE(row_sum(r.pairs[s]) == row_sum(r.tokens[s]));
    // Rank d's pair from s = s's slots to d's experts [d x E/EP, (d+1) x E/EP).
    for (int d = 0; d < shape.ep_ranks; ++d) {
      std::int64_t want = 0;
      for (int j = 0; j < per_rank; ++j) want += r.tokens[s][d * per_rank + j];
      REQUIRE(r.pairs[s][d] == want);
    }
  }
  for (int d = 0; d < shape.ep_ranks; ++d) {
    std::int64_t col = 0;
    for (int s = 0; s < shape.ep_ranks; ++s) col += r.pairs[s][d];
    REQUIRE(r.received(d) == col);
    for (int j = 0; j < per_rank; ++j) REQUIRE(r.local_expert_tokens[d][j] == r.expert_load(d * per_rank + j));
    received += r.received(d);
  }
  REQUIRE(received + r.dropped() == shape.tokens_per_rank * shape.top_k * shape.ep_ranks);
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() / ("overlap_moe_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = (path / name).string();
    std::ofstream(p) << text;
    return p;
  }
};

}  // namespace

TEST_CASE("routing: uniform splits T x top_k exactly, remainders rotate over ranks", "[moe][routing]") {
  // Divisible: every expert gets T k / E from every rank; every pair T k / EP.
  const MoeShape even{8, 2, 4, 4096, std::nullopt};
  const MoeRouting r = route_tokens(even, MoeRoutingSpec{});
  require_consistent(even, r);
  for (const auto& row : r.tokens)
    for (std::int64_t c : row) REQUIRE(c == 4096 * 2 / 8);
  for (const auto& row : r.pairs)
    for (std::int64_t c : row) REQUIRE(c == 4096 * 2 / 4);
  REQUIRE(r.dropped() == 0);

  // Not divisible: T k = 21 over 8 experts = 2 each + 5 left. Rank s's five go to experts
  // 5s, 5s+1, ... (mod 8), so over the ranks no expert is more than one slot above another.
  const MoeShape odd{8, 3, 4, 7, std::nullopt};
  const MoeRouting u = route_tokens(odd, MoeRoutingSpec{});
  require_consistent(odd, u);
  for (int s = 0; s < 4; ++s)
    for (int e = 0; e < 8; ++e) {
      const bool extra = ((e - 5 * s) % 8 + 8) % 8 < 5;
      REQUIRE(u.tokens[s][e] == 2 + (extra ? 1 : 0));
    }
  std::int64_t lo = u.expert_load(0), hi = lo;
  for (int e = 1; e < 8; ++e) {
    lo = std::min(lo, u.expert_load(e));
    hi = std::max(hi, u.expert_load(e));
  }
  REQUIRE(hi - lo <= 1);
}

TEST_CASE("routing: zipf S = 0 is uniform", "[moe][routing]") {
  for (const MoeShape& shape : {MoeShape{8, 2, 4, 4096, std::nullopt}, MoeShape{8, 3, 4, 7, std::nullopt},
                                MoeShape{256, 8, 64, 1000, std::nullopt}, MoeShape{60, 4, 6, 333, std::nullopt}})
    for (std::uint64_t seed : {0u, 1u, 12345u}) {
      INFO("experts " << shape.experts << " seed " << seed);
      REQUIRE(route_tokens(shape, zipf(0, seed)).tokens == route_tokens(shape, MoeRoutingSpec{}).tokens);
    }
}

TEST_CASE("routing: zipf counts are T k p_e by largest remainder, capped at T", "[moe][routing]") {
  // E = 4, S = 1: weights 1, 1/2, 1/3, 1/4 (sum 25/12), p = 12/25, 6/25, 4/25, 3/25; T k = 100 gives
  // exactly 48, 24, 16, 12 along the popularity order.
  const MoeShape shape{4, 2, 2, 50, std::nullopt};
  for (std::uint64_t seed : {0u, 5u}) {
    const MoeRouting r = route_tokens(shape, zipf(1.0, seed));
    require_consistent(shape, r);
    const std::vector<int> order = zipf_popularity_order(4, seed);
    const std::int64_t want[4] = {48, 24, 16, 12};
    for (int s = 0; s < 2; ++s)
      for (int i = 0; i < 4; ++i) REQUIRE(r.tokens[s][order[i]] == want[i]);
  }
  // S = 3 with T = 100, k = 2: the top expert's 170 exceed T, so it keeps 100 and the other 100 go to
  // weights 1/8, 1/27, 1/64 (216 : 64 : 27 of 307): 70.36, 20.85, 8.79 -> 70, 21, 9.
  const MoeShape capped{4, 2, 1, 100, std::nullopt};
  const MoeRouting c = route_tokens(capped, zipf(3.0));
  require_consistent(capped, c);
  const std::vector<int> order = zipf_popularity_order(4, 0);
  REQUIRE(c.tokens[0][order[0]] == 100);
  REQUIRE(c.tokens[0][order[1]] == 70);
  REQUIRE(c.tokens[0][order[2]] == 21);
  REQUIRE(c.tokens[0][order[3]] == 9);
}

TEST_CASE("routing: zipf is deterministic, skewed along a seeded permutation", "[moe][routing]") {
  const MoeShape shape{256, 8, 64, 4096, std::nullopt};  // DeepSeek-V3-like: 256 experts, top 8, EP 64
  const MoeRouting a = route_tokens(shape, zipf(1.2, 7));
  const MoeRouting b = route_tokens(shape, zipf(1.2, 7));
  REQUIRE(a.tokens == b.tokens);
  REQUIRE(a.pairs == b.pairs);
  require_consistent(shape, a);
  const std::vector<int> order = zipf_popularity_order(256, 7);
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 256; ++i) REQUIRE(sorted[i] == i);  // a permutation
  REQUIRE(order != zipf_popularity_order(256, 8));        // another seed, other popular experts
  // Counts never rise down the popularity order; the popular expert's owner receives more than the
  // balanced share T k (and more than its top expert's load: it owns three others too).
  for (int s = 0; s < 64; ++s)
    for (int i = 1; i < 256; ++i) REQUIRE(a.tokens[s][order[i]] <= a.tokens[s][order[i - 1]]);
  const int hot_rank = a.owner_rank(order[0]);
  REQUIRE(a.received(hot_rank) > shape.tokens_per_rank * shape.top_k);
  REQUIRE(a.received(hot_rank) > a.expert_load(order[0]));
}

TEST_CASE("routing: capacity keeps at most ceil(T k / E x C) per source and expert", "[moe][routing]") {
  MoeShape shape{8, 2, 4, 1000, 1.25};
  const MoeRouting r = route_tokens(shape, zipf(1.0));
  require_consistent(shape, r);
  const std::int64_t cap = 313;  // ceil(2000 / 8 x 1.25) = ceil(312.5)
  REQUIRE(r.expert_capacity == cap);
  std::int64_t over = 0;
  for (int s = 0; s < 4; ++s)
    for (int e = 0; e < 8; ++e) {
      REQUIRE(r.tokens[s][e] == std::min(r.routed[s][e], cap));
      over += std::max<std::int64_t>(0, r.routed[s][e] - cap);
    }
  REQUIRE(over > 0);
  REQUIRE(r.dropped() == over);
  // Uniform routing fits any capacity factor >= 1: nothing dropped.
  shape.capacity_factor = 1.0;
  REQUIRE(route_tokens(shape, MoeRoutingSpec{}).dropped() == 0);
}

TEST_CASE("routing: bad shapes raise InputError naming the key", "[moe][routing]") {
  auto key_of = [](const MoeShape& s) {
    try {
      route_tokens(s, MoeRoutingSpec{}, "scenario.yaml", 12);
    } catch (const InputError& e) {
      REQUIRE(e.file() == "scenario.yaml");
      REQUIRE(e.line() == 12);
      return e.key_path();
    }
    return std::string("no error");
  };
  REQUIRE(key_of(MoeShape{8, 9, 4, 100, std::nullopt}) == "moe.top_k");  // top_k > experts
  REQUIRE(key_of(MoeShape{8, 2, 3, 100, std::nullopt}) == "moe.ep");     // 3 does not divide 8
  REQUIRE(key_of(MoeShape{8, 2, 4, 100, 0.0}) == "moe.capacity_factor");
  REQUIRE(key_of(MoeShape{8, 2, 4, 100, -1.0}) == "moe.capacity_factor");
  REQUIRE(key_of(MoeShape{0, 1, 1, 100, std::nullopt}) == "moe.experts");
  REQUIRE(key_of(MoeShape{8, 2, 4, 0, std::nullopt}) == "moe.tokens_per_rank");
  REQUIRE(key_of(MoeShape{8, 2, 4, 100, 1.0}) == "no error");

  REQUIRE(parse_moe_routing("uniform").kind == Kind::uniform);
  REQUIRE(parse_moe_routing("zipf: 1.5").zipf_s == 1.5);
  REQUIRE(parse_moe_routing(" zipf:0 ").kind == Kind::zipf);
  REQUIRE(parse_moe_routing("histogram: counts.csv").histogram_file == "counts.csv");
  for (const char* bad : {"zipf", "zipf: -1", "zipf: x", "histogram:", "gaussian", "uniform: 2"}) {
    INFO(bad);
    try {
      parse_moe_routing(bad, "s.yaml", 4, "layers.0.routing");
      FAIL("accepted");
    } catch (const InputError& e) {
      REQUIRE(e.line() == 4);
      REQUIRE(e.key_path() == "layers.0.routing");
    }
  }
}

TEST_CASE("routing: histogram files give the counts; bad ones name file, line and key", "[moe][routing]") {
  const TempDir dir;
  const MoeShape shape{4, 2, 2, 5, std::nullopt};  // rows of 4 experts summing to 10, counts <= 5
  const std::string good =
      dir.write("good.csv", "# tokens per expert, one row per source rank\n5,3,2,0\n\n1, 1, 3, 5\n");
  const MoeRouting r = route_tokens(shape, histogram(good));
  require_consistent(shape, r);
  REQUIRE(r.tokens == CountMatrix{{5, 3, 2, 0}, {1, 1, 3, 5}});
  REQUIRE(r.pairs == CountMatrix{{8, 2}, {2, 8}});
  const std::string good_yaml = dir.write("good.yaml", "- [5, 3, 2, 0]\n- [1, 1, 3, 5]\n");
  REQUIRE(route_tokens(shape, histogram(good_yaml)).tokens == r.tokens);

  struct Bad {
    const char* name;
    const char* text;
    int line;
    const char* key;
  };
  const Bad bads[] = {
      {"rows.csv", "5,3,2,0\n", 1, "routing.histogram"},                     // one row for EP 2
      {"extra.csv", "5,3,2,0\n1,1,3,5\n2,2,3,3\n", 3, "routing.histogram"},  // three rows
      {"cols.csv", "5,3,2,0\n# two\n1,1,3\n", 3, "routing.histogram.1"},     // 3 columns
      {"negative.csv", "5,3,2,0\n5,-1,3,3\n", 2, "routing.histogram.1.1"},
      {"fraction.csv", "5,3,2,0\n1,1.5,3,4.5\n", 2, "routing.histogram.1.1"},
      {"trailing.csv", "5,3,2,0\n1,1,3,5,\n", 2, "routing.histogram.1.4"},  // an empty 5th field
      {"word.csv", "5,3,two,0\n1,1,3,5\n", 1, "routing.histogram.0.2"},
      {"sum.csv", "5,3,2,0\n1,1,3,4\n", 2, "routing.histogram.1"},     // 9 slots, not 10
      {"over.csv", "6,2,2,0\n1,1,3,5\n", 1, "routing.histogram.0.0"},  // 6 > T = 5
      {"cols.yaml", "- [5, 3, 2, 0]\n- [1, 1, 3]\n", 2, "routing.histogram.1"},
      {"negative.yaml", "- [5, 3, 2, 0]\n- [1, 1, 3,\n   -5]\n", 3, "routing.histogram.1.3"},
      {"fraction.yaml", "- [5, 3, 2, 0]\n- [1, 1.5, 3, 4.5]\n", 2, "routing.histogram.1.1"},
  };
  for (const Bad& b : bads) {
    INFO(b.name);
    const std::string path = dir.write(b.name, b.text);
    try {
      route_tokens(shape, histogram(path));
      FAIL("accepted");
    } catch (const InputError& e) {
      REQUIRE(e.file() == path);
      REQUIRE(e.line() == b.line);
      REQUIRE(e.key_path() == b.key);
    }
  }
  // A missing file: InputError naming it.
  REQUIRE_THROWS_AS(route_tokens(shape, histogram((dir.path / "absent.csv").string())), InputError);
}
