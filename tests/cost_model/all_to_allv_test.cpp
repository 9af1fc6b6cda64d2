// All-to-allv (cost_model/all_to_allv.hpp): grouped send/recv with unequal pairs. Equal pairs are the
// even all-to-all exactly (time, protocol, channels, every step); the slowest rank sets the time
// (FlashOverlap Sec. 4.2); bytes are conserved per pair in the steps; more bytes never take less time;
// intra-node pairs ride NVLink and inter-node pairs the NIC.
#include <catch2/catch.hpp>

#include <optional>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>

#include "cost_model/all_to_allv.hpp"
#include "cost_model/bandwidth_curve.hpp"
#include "cost_model/collective_model.hpp"
#include "cost_model/moe_routing.hpp"
#include "cost_model/profile_loader.hpp"

using namespace overlap;

namespace {

PairBytes equal_pairs(int n, Bytes b) {
  return PairBytes(static_cast<std::size_t>(n), std::vector<Bytes>(static_cast<std::size_t>(n), b));
}

PairBytes random_pairs(int n, std::uint64_t seed, Bytes max_bytes) {
  std::mt19937_64 rng(seed);
  PairBytes m = equal_pairs(n, 0);
  for (auto& row : m)
    for (Bytes& b : row) b = static_cast<Bytes>(rng() % static_cast<std::uint64_t>(max_bytes + 1));
  return m;
}

void require_same_schedule(const CollectiveSchedule& a, const CollectiveSchedule& b) {
  REQUIRE(a.primitive == b.primitive);
  REQUIRE(a.algorithm == b.algorithm);
  REQUIRE(a.protocol == b.protocol);
  REQUIRE(a.n_ranks == b.n_ranks);
  REQUIRE(a.bytes_total == b.bytes_total);
  REQUIRE(a.base_latency_ps == b.base_latency_ps);
  REQUIRE(a.bandwidth_gbps == b.bandwidth_gbps);
  REQUIRE(a.ranks_per_node == b.ranks_per_node);
  REQUIRE(a.ranks.size() == b.ranks.size());
  for (std::size_t r = 0; r < a.ranks.size(); ++r) {
    REQUIRE(a.ranks[r].size() == b.ranks[r].size());
    for (std::size_t s = 0; s < a.ranks[r].size(); ++s) {
      const CollectiveStep& x = a.ranks[r][s];
      const CollectiveStep& y = b.ranks[r][s];
      REQUIRE(x.latency_ps == y.latency_ps);
      REQUIRE(x.reduce_bytes == y.reduce_bytes);
      REQUIRE(x.sends.size() == y.sends.size());
      REQUIRE(x.recvs.size() == y.recvs.size());
      for (std::size_t i = 0; i < x.sends.size(); ++i) {
        REQUIRE(x.sends[i].peer == y.sends[i].peer);
        REQUIRE(x.sends[i].bytes == y.sends[i].bytes);
      }
      for (std::size_t i = 0; i < x.recvs.size(); ++i) {
        REQUIRE(x.recvs[i].peer == y.recvs[i].peer);
        REQUIRE(x.recvs[i].bytes == y.recvs[i].bytes);
      }
    }
  }
  REQUIRE(a.idle_time_ps() == b.idle_time_ps());
}

// (profile, ranks, link class) as graph_builder's collective_link_class picks them: one NVSwitch node,
// part of one, a full NVLink mesh, PCIe, and across 2 and 8 nodes of a rail-optimised cluster.
const std::vector<std::tuple<std::string, int, std::string>> kCases = {
    {"h100-sxm-8x-nvswitch", 8, "nvlink"},  {"h100-sxm-8x-nvswitch", 4, "nvlink"},
    {"a800-8x-nvlink", 8, "nvlink"},        {"rtx4090-8x-pcie", 4, "pcie"},
    {"h100-2node-ib400", 16, "network"},    {"h100-64node-ib400-rail", 64, "network"},
    {"h100-64node-ib400-rail", 8, "nvlink"}};

}  // namespace

TEST_CASE("all_to_allv: equal pairs reproduce the even all_to_all exactly", "[moe][all_to_allv]") {
  for (const auto& [name, n, cls] : kCases) {
    const HardwareProfile hw = load_profile(name);
    // Per-pair sizes from LL (small) to Simple (large), including ones that are not a multiple of
    // anything convenient.
    for (Bytes b : {Bytes{1}, Bytes{100}, Bytes{4096}, Bytes{65537}, Bytes{1} << 20, Bytes{7} << 22}) {
      INFO(name << " n=" << n << " " << cls << " pair bytes " << b);
      const Bytes s = b * n;  // nccl-tests' S: each rank's buffer, S/n to each peer
      const CollectivePlan even = plan_collective(hw, CollectivePrimitive::all_to_all, s, n, cls);
      const AllToAllvCost v = all_to_allv_cost(hw, equal_pairs(n, b), cls);
      REQUIRE(v.time_ps == even.time_ps);
      REQUIRE(v.slowest_plan.time_ps == even.time_ps);
      REQUIRE(v.slowest_plan.protocol == even.protocol);
      REQUIRE(v.slowest_plan.channels == even.channels);
      REQUIRE(v.slowest_rank == 0);
      for (Ps t : v.rank_time_ps) REQUIRE(t == even.time_ps);
      for (Bytes eq : v.rank_equivalent_bytes) REQUIRE(eq == s);
      require_same_schedule(all_to_allv_steps(hw, equal_pairs(n, b), cls),
                            collective_steps(hw, CollectivePrimitive::all_to_all, s, n, cls));
    }
  }
}

TEST_CASE("all_to_allv: zipf S = 0 routing gives the even dispatch all_to_all", "[moe][all_to_allv]") {
  // Mixtral-8x7B at EP 4 (FlashOverlap Sec. 6.1's setting): 8 experts, top 2, hidden 4096, bf16.
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch");
  const Bytes token_bytes = 4096 * 2;
  MoeShape shape{8, 2, 4, 4096, std::nullopt};
  MoeRoutingSpec zipf0;
  zipf0.kind = MoeRoutingSpec::Kind::zipf;
  zipf0.zipf_s = 0;
  const MoeRouting r = route_tokens(shape, zipf0);
  const PairBytes m = dispatch_bytes(r, token_bytes);
  const Bytes s_even = shape.tokens_per_rank * shape.top_k * token_bytes;
  const Ps even = plan_collective(hw, CollectivePrimitive::all_to_all, s_even, 4, "nvlink").time_ps;
  REQUIRE(all_to_allv_cost(hw, m, "nvlink").time_ps == even);
  // The combine sends the blocks back (the transpose): the same time.
  const PairBytes back = combine_bytes(r, token_bytes);
  for (int s = 0; s < 4; ++s)
    for (int d = 0; d < 4; ++d) REQUIRE(back[d][s] == m[s][d]);
  REQUIRE(all_to_allv_cost(hw, back, "nvlink").time_ps == even);
  // Skewed routing (zipf 1.2): the dispatch is slower than the even one, and its slowest rank is the
  // one receiving the most tokens (its receive port is the busiest).
  MoeRoutingSpec skew = zipf0;
  skew.zipf_s = 1.2;
  const MoeRouting rs = route_tokens(shape, skew);
  const AllToAllvCost cs = all_to_allv_cost(hw, dispatch_bytes(rs, token_bytes), "nvlink");
  REQUIRE(cs.time_ps > even);
  int most = 0;
  for (int d = 1; d < 4; ++d)
    if (rs.received(d) - rs.pairs[d][d] > rs.received(most) - rs.pairs[most][most]) most = d;
  REQUIRE(cs.slowest_rank == most);
}

TEST_CASE("all_to_allv: steps carry every pair's bytes, each send matched by a receive", "[moe][all_to_allv]") {
  for (const auto& [name, n, cls] : kCases) {
    const HardwareProfile hw = load_profile(name);
    const PairBytes m = random_pairs(n, 42 + static_cast<std::uint64_t>(n), 1 << 20);
    INFO(name << " n=" << n);
    const CollectiveSchedule sched = all_to_allv_steps(hw, m, cls);
    REQUIRE(sched.n_ranks == n);
    PairBytes sent = equal_pairs(n, 0);
    PairBytes received = equal_pairs(n, 0);
    for (int r = 0; r < n; ++r)
      for (std::size_t s = 0; s < sched.num_steps(); ++s) {
        for (const CollectiveTransfer& t : sched.ranks[r][s].sends) {
          REQUIRE(t.peer >= 0);
          REQUIRE(t.peer != r);
          sent[r][t.peer] += t.bytes;
          // The matching receive: same step, at the peer, from r, same bytes.
          int matches = 0;
          for (const CollectiveTransfer& u : sched.ranks[t.peer][s].recvs)
            if (u.peer == r && u.bytes == t.bytes) ++matches;
          REQUIRE(matches == 1);
        }
        for (const CollectiveTransfer& t : sched.ranks[r][s].recvs) received[t.peer][r] += t.bytes;
      }
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) {
        const Bytes want = s == d ? 0 : m[s][d];  // own blocks are local copies
        REQUIRE(sent[s][d] == want);
        REQUIRE(received[s][d] == want);
      }
  }
}

TEST_CASE("all_to_allv: the slowest rank sets the time under skew", "[moe][all_to_allv]") {
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch");
  const int n = 8;
  const Bytes b = 1 << 20;
  const Bytes heavy = 9 << 20;
  for (int hot = 0; hot < n; ++hot) {
    // Every rank sends `heavy` to rank `hot` (a popular expert's owner), b to the others.
    PairBytes m = equal_pairs(n, b);
    for (int s = 0; s < n; ++s) m[s][hot] = heavy;
    const AllToAllvCost c = all_to_allv_cost(hw, m, "nvlink");
    REQUIRE(c.slowest_rank == hot);
    for (int r = 0; r < n; ++r) REQUIRE(c.rank_time_ps[r] <= c.time_ps);
    // Closed form: rank `hot` receives (n-1) x heavy, as a port of the even all-to-all of n x heavy
    // does; every other port carries less.
    REQUIRE(c.time_ps == plan_collective(hw, CollectivePrimitive::all_to_all, n * heavy, n, "nvlink").time_ps);
    REQUIRE(c.time_ps > all_to_allv_cost(hw, equal_pairs(n, b), "nvlink").time_ps);
    REQUIRE(c.ports[hot].recv_intra_node == (n - 1) * heavy);
  }
}

TEST_CASE("all_to_allv: more bytes on any pair never take less time", "[moe][all_to_allv]") {
  for (const auto& [name, n, cls] : kCases) {
    if (n > 16) continue;  // every pair of 64 ranks: covered by the smaller cases
    const HardwareProfile hw = load_profile(name);
    const PairBytes base = random_pairs(n, 7, 1 << 18);
    const AllToAllvCost c0 = all_to_allv_cost(hw, base, cls);
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d)
        for (Bytes delta : {Bytes{1}, Bytes{1} << 16, Bytes{1} << 24}) {
          PairBytes m = base;
          m[s][d] += delta;
          const AllToAllvCost c = all_to_allv_cost(hw, m, cls);
          INFO(name << " pair " << s << "->" << d << " +" << delta);
          REQUIRE(c.time_ps >= c0.time_ps);
          for (int r = 0; r < n; ++r) REQUIRE(c.rank_time_ps[r] >= c0.rank_time_ps[r]);
        }
  }
}

TEST_CASE("all_to_allv: deterministic", "[moe][all_to_allv]") {
  const HardwareProfile hw = load_profile("h100-2node-ib400");
  const PairBytes m = random_pairs(16, 3, 1 << 22);
  const AllToAllvCost a = all_to_allv_cost(hw, m, "network");
  const AllToAllvCost b = all_to_allv_cost(hw, m, "network");
  REQUIRE(a.time_ps == b.time_ps);
  REQUIRE(a.rank_time_ps == b.rank_time_ps);
  REQUIRE(a.slowest_rank == b.slowest_rank);
  require_same_schedule(all_to_allv_steps(hw, m, "network"), all_to_allv_steps(hw, m, "network"));
}

TEST_CASE("all_to_allv: across nodes, NVLink carries a node's pairs and the NIC the others", "[moe][all_to_allv]") {
  const HardwareProfile hw = load_profile("h100-2node-ib400");
  const int n = 16;
  const int per_node = 8;
  const Bytes x = 4 << 20;
  PairBytes local = equal_pairs(n, 0);   // every rank sends x to each other rank of its node
  PairBytes remote = equal_pairs(n, 0);  // ... or to each rank of the other node
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      if (s == d) continue;
      (s / per_node == d / per_node ? local : remote)[s][d] = x;
    }
  const AllToAllvCost cl = all_to_allv_cost(hw, local, "network");
  const AllToAllvCost cr = all_to_allv_cost(hw, remote, "network");
  for (int r = 0; r < n; ++r) {
    REQUIRE(cl.ports[r].send_inter_node == 0);
    REQUIRE(cl.ports[r].recv_intra_node == (per_node - 1) * x);
    REQUIRE(cr.ports[r].send_intra_node == 0);
    REQUIRE(cr.ports[r].recv_inter_node == per_node * x);
  }
  // Inside the node: the even all-to-all model on the nvlink class (no curve), equivalent size
  // (per_node - 1) x x x n / (n - 1).
  HardwareProfile model = hw;
  model.curves.clear();
  const Bytes eq_local = ((per_node - 1) * x * n + (n - 2)) / (n - 1);
  REQUIRE(cl.time_ps == plan_collective(model, CollectivePrimitive::all_to_all, eq_local, n, "nvlink").time_ps);
  // Across: every remote peer's bytes through the NIC; equivalent size nic x n / remote peers (8).
  REQUIRE(cr.time_ps ==
          plan_collective(hw, CollectivePrimitive::all_to_all, per_node * x * n / 8, n, "network").time_ps);
  // 450 GB/s NVLink vs 50 GB/s NICs: the node's own traffic is far cheaper.
  REQUIRE(cl.time_ps * 4 < cr.time_ps);
}

TEST_CASE("all_to_allv: bad matrices are refused", "[moe][all_to_allv]") {
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch");
  PairBytes ragged = equal_pairs(4, 1);
  ragged[2].pop_back();
  REQUIRE_THROWS_AS(all_to_allv_cost(hw, ragged, "nvlink"), std::invalid_argument);
  PairBytes negative = equal_pairs(4, 1);
  negative[1][3] = -1;
  REQUIRE_THROWS_AS(all_to_allv_steps(hw, negative, "nvlink"), std::invalid_argument);
  // One rank, or only self blocks: nothing moves.
  REQUIRE(all_to_allv_cost(hw, equal_pairs(1, 100), "nvlink").time_ps == 0);
  PairBytes self_only = equal_pairs(4, 0);
  for (int r = 0; r < 4; ++r) self_only[r][r] = 1000;
  REQUIRE(all_to_allv_cost(hw, self_only, "nvlink").time_ps == 0);
  REQUIRE(all_to_allv_steps(hw, self_only, "nvlink").num_steps() == 0);
}

TEST_CASE("all_to_allv: a measured all_to_all curve prices equal pairs as the even call", "[moe][all_to_allv]") {
  HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch");
  hw.curves["all_to_all.n8"] = BandwidthCurve::from_alpha_beta(30.0, 200);
  for (Bytes b : {Bytes{4096}, Bytes{1} << 20}) {
    const CollectivePlan even = plan_collective(hw, CollectivePrimitive::all_to_all, 8 * b, 8, "nvlink");
    REQUIRE(even.from_curve);
    REQUIRE(all_to_allv_cost(hw, equal_pairs(8, b), "nvlink").time_ps == even.time_ps);
  }
}

TEST_CASE("all_to_allv: under one hot receiver the steps take the curve's time", "[moe][all_to_allv]") {
  // NCCL's round i pairs rank r with r+i: with one hot receiver every round carries exactly one heavy
  // transfer, so the rounds' busiest ports add up to the hot rank's port, as in the curve. One node
  // only: across nodes the even model prices a NIC as if all n-1 rounds crossed it (all_to_allv.hpp),
  // while the steps count the rounds that do.
  for (const auto& [name, n, cls] : kCases) {
    if (load_profile(name).fabric.topology == "multi_node" && cls == "network") continue;
    const HardwareProfile hw = load_profile(name);
    PairBytes m = equal_pairs(n, 1 << 16);
    for (int s = 0; s < n; ++s) m[s][n / 2] = 3 << 20;
    const AllToAllvCost c = all_to_allv_cost(hw, m, cls);
    const CollectiveSchedule sched = all_to_allv_steps(hw, m, cls);
    INFO(name << " n=" << n);
    // A picosecond of rounding per step, as for the even schedules (collective_model.hpp).
    REQUIRE(std::llabs(sched.idle_time_ps() - c.time_ps) <= static_cast<Ps>(sched.num_steps()));
  }
}
