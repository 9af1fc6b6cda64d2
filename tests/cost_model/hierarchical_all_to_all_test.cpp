// The hierarchical all-to-all (cost_model/hierarchical_all_to_all.hpp): per-phase bytes and the time
// in closed form for an even all-to-all, bytes conserved under any matrix, and the layouts refused.
#include <catch2/catch.hpp>

#include <numeric>
#include <random>

#include "cost_model/hierarchical_all_to_all.hpp"

using namespace overlap;

namespace {

overlap::PairBytes even_pairs(int n, Bytes b) { return overlap::PairBytes(static_cast<std::size_t>(n), std::vector<Bytes>(static_cast<std::size_t>(n), b)); }

Bytes most(const HierarchicalPhaseBytes& p) {
  Bytes m = 0;
  for (std::size_t i = 0; i < p.send.size(); ++i) m = std::max({m, p.send[i], p.recv[i]});
  return m;
}

}  // namespace

TEST_CASE("hierarchical all-to-all of an even matrix in closed form", "[hierarchical_a2a]") {
  // Two nodes of 8, b bytes per pair. Node 0's exchanger for node 1 is its GPU 1 (1 mod 8); node 1's for
  // node 0 its GPU 8 (0 mod 8). Exact: every byte is counted on each port it crosses, no rounding.
  const Bytes b = 1000;
  const HierarchicalRates rates{100, 40, 5, 8};
  const HierarchicalAllToAll h = hierarchical_all_to_all(even_pairs(16, b), 8, rates);
  // Gather: GPU 1 receives the 7 other GPUs' 8 blocks for node 1 (56 b) and, as every GPU, 7 blocks of
  // its own node (7 b): 63 b, the busiest.
  CHECK(h.gather.recv[1] == 63 * b);
  CHECK(h.gather.send[0] == 15 * b);  // 8 blocks for node 1 to GPU 1, 7 to its node's GPUs
  CHECK(most(h.gather) == 63 * b);
  // Exchange: node 0's 64 blocks for node 1 leave through GPU 1's NIC to GPU 8; the rest carry none.
  CHECK(h.exchange.send[1] == 64 * b);
  CHECK(h.exchange.recv[8] == 64 * b);
  CHECK(h.exchange.send[0] == 0);
  // Scatter: GPU 8 keeps its 8 blocks and sends 56 b on.
  CHECK(h.scatter.send[8] == 56 * b);
  CHECK(most(h.scatter) == 56 * b);
  // Time: each phase's fixed cost plus its busiest port over its rate (1 GB/s = 1e-3 bytes per ps).
  const Ps gather = checked_ps(5e6 + 63.0 * b / 100 * 1e3), exchange = checked_ps(8e6 + 64.0 * b / 40 * 1e3),
           scatter = checked_ps(5e6 + 56.0 * b / 100 * 1e3);
  CHECK(h.gather_ps == gather);
  CHECK(h.exchange_ps == exchange);
  CHECK(h.scatter_ps == scatter);
  CHECK(h.time_ps == gather + exchange + scatter);
}

TEST_CASE("hierarchical all-to-all at 8 nodes: seven NICs a node carry the exchange", "[hierarchical_a2a]") {
  // 64 GPUs, 8 a node: node n's exchanger for node m is its GPU m mod 8, so its GPU n mod 8 has no peer
  // node and the other seven each carry one node pair's 64 blocks (8/7 of the even share on every NIC).
  const Bytes b = 10;
  const HierarchicalAllToAll h = hierarchical_all_to_all(even_pairs(64, b), 8, HierarchicalRates{100, 40, 0, 0});
  CHECK(most(h.exchange) == 64 * b);
  CHECK(h.exchange.send[0] == 0);  // node 0's GPU 0 is its exchanger for node 0 itself: none
  CHECK(h.exchange.send[1] == 64 * b);
  // Gather: the exchanger receives 7 GPUs' 8 blocks, plus its node's own 7: 63 b.
  CHECK(most(h.gather) == 63 * b);
}

TEST_CASE("hierarchical all-to-all conserves bytes under any matrix", "[hierarchical_a2a]") {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> d(0, 5000);
  overlap::PairBytes p(32, std::vector<Bytes>(32));
  Bytes remote = 0;
  for (int s = 0; s < 32; ++s)
    for (int t = 0; t < 32; ++t) {
      p[static_cast<std::size_t>(s)][static_cast<std::size_t>(t)] = d(rng);
      if (s / 8 != t / 8) remote += p[static_cast<std::size_t>(s)][static_cast<std::size_t>(t)];
    }
  const HierarchicalAllToAll h = hierarchical_all_to_all(p, 8, HierarchicalRates{100, 40, 1, 1});
  for (const HierarchicalPhaseBytes* ph : {&h.gather, &h.exchange, &h.scatter})
    CHECK(std::accumulate(ph->send.begin(), ph->send.end(), Bytes{0}) ==
          std::accumulate(ph->recv.begin(), ph->recv.end(), Bytes{0}));
  // Every byte for another node crosses the network once, from exchanger to exchanger.
  CHECK(std::accumulate(h.exchange.send.begin(), h.exchange.send.end(), Bytes{0}) == remote);
}

TEST_CASE("hierarchical all-to-all refuses groups that are not two or more whole nodes", "[hierarchical_a2a]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(hierarchical_all_to_all(even_pairs(8, 1), 8, {}), Contains("two or more nodes"));
  CHECK_THROWS_WITH(hierarchical_all_to_all(even_pairs(12, 1), 8, {}), Contains("two or more nodes"));
  overlap::PairBytes bad = even_pairs(16, 1);
  bad[3][4] = -1;
  CHECK_THROWS_WITH(hierarchical_all_to_all(bad, 8, {1, 1, 0, 0}), Contains("negative"));
}
