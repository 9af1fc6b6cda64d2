// The spine's latency across leaf switches (fabric.nodes_per_leaf, fabric.switch_latency_us;
// cost_model/nccl_tuning.cpp nccl_spine_hops): each hop of NCCL's latency model that crosses from one
// leaf to another pays two more switch crossings, and nothing changes under one leaf.
#include <catch2/catch.hpp>

#include <string>

#include "cost_model/collective_model.hpp"
#include "cost_model/nccl_tuning.hpp"
#include "cost_model/profile_loader.hpp"

using namespace overlap;
using A = NcclAlgorithm;
using P = NcclProtocol;
using C = CollectivePrimitive;

namespace {

const std::string kDir = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";

// `nodes` nodes of 8 H100 with 8 NDR NICs each, `per_leaf` nodes under a leaf, `switch_us` a switch.
HardwareProfile cluster(int nodes, int per_leaf, double switch_us) {
  HardwareProfile p = load_profile("h100-64node-ib400-rail", kDir);
  p.fabric.num_gpus = nodes * 8;
  p.fabric.nodes_per_leaf = per_leaf;
  p.fabric.switch_latency_us = switch_us;
  p.fabric.nodes.clear();
  p.fabric.edges.clear();
  expand_topology(p.fabric);
  return p;
}

double latency_us(const HardwareProfile& hw, C p, A a, P proto) {
  const NcclCommunicator comm = nccl_communicator(hw, hw.fabric.num_gpus, "network");
  const NcclCost c = nccl_cost(hw, comm, p, a, proto);
  REQUIRE(c.available);
  return c.latency_us;
}

}  // namespace

TEST_CASE("the shipped 64-node profile: two leaves of 32 nodes", "[collective][internode][switch_tiers]") {
  const HardwareProfile hw = load_profile("h100-64node-ib400-rail", kDir);
  const NcclCommunicator comm = nccl_communicator(hw, 512, "network");
  CHECK(comm.n_nodes == 64);
  CHECK(comm.leaves == 2);
  CHECK(comm.spine_hop_us == Approx(2 * hw.fabric.switch_latency_us));
  // Tree/LL all-reduce of 64 nodes: NCCL's 6.8 + 2 (7 x 0.6 + log2(64) x 5.0) = 75.2 us, and the one
  // tree level above a leaf crossed up and down: + 2 x (2 x 0.3). Exact: sums of the constants.
  CHECK(latency_us(hw, C::all_reduce, A::Tree, P::LL) == Approx(6.8 + 2 * (7 * 0.6 + 6 * 5.0) + 2 * 0.6));
}

TEST_CASE("spine hops per algorithm, as the closed forms count them", "[collective][internode][switch_tiers]") {
  const double s = 0.25;  // a switch; a spine hop is 2 s
  for (int nodes : {4, 16, 64}) {
    for (int per_leaf : {1, 2, 4}) {
      INFO("nodes " << nodes << ", nodes per leaf " << per_leaf);
      const HardwareProfile flat = cluster(nodes, 0, s);
      const HardwareProfile tiered = cluster(nodes, per_leaf, s);
      const int leaves = nodes / per_leaf;
      const int levels = nccl_log2i(nodes) - nccl_log2i(per_leaf);
      auto extra = [&](C p, A a, P proto) { return latency_us(tiered, p, a, proto) - latency_us(flat, p, a, proto); };
      if (per_leaf >= nodes) {  // one leaf holds them all: no hop crosses
        CHECK(extra(C::all_reduce, A::Tree, P::LL) == 0);
        continue;
      }
      // Double binary tree: the levels above a leaf, up (reduce) and down (broadcast).
      CHECK(extra(C::all_reduce, A::Tree, P::LL) == Approx(2 * levels * 2 * s));
      CHECK(extra(C::all_reduce, A::Tree, P::Simple) == Approx(2 * levels * 2 * s));
      // Ring: a pass round the ring of nodes leaves each leaf once; all-reduce counts two passes, at
      // most its 2 (nodes - 1) network steps; reduce-scatter and all-gather one.
      CHECK(extra(C::all_reduce, A::Ring, P::LL) == Approx(std::min(2 * (nodes - 1), 2 * leaves) * 2 * s));
      CHECK(extra(C::reduce_scatter, A::Ring, P::Simple) == Approx(std::min(nodes - 1, leaves) * 2 * s));
      CHECK(extra(C::all_gather, A::Ring, P::LL128) == Approx(std::min(nodes - 1, leaves) * 2 * s));
      // Send/recv: one round per rank under another leaf than the sender's.
      CHECK(extra(C::all_to_all, A::SendRecv, P::Simple) == Approx((nodes - per_leaf) * 8 * 2 * s));
    }
  }
}

TEST_CASE("one node a leaf is NCCL's network hop latency plus the spine", "[collective][internode][switch_tiers]") {
  // With every node under its own leaf every network hop of the tree crosses the spine, so the tree's
  // latency equals NCCL's with the network hop latency raised by 2 x switch latency: the same sum.
  const double s = 0.4;
  HardwareProfile raised = cluster(16, 0, 0);
  raised.comm.tuner.at(A::Tree, P::LL).hw_us[static_cast<std::size_t>(index_of(NcclHw::net))] += 2 * s;
  CHECK(latency_us(cluster(16, 1, s), C::all_reduce, A::Tree, P::LL) ==
        Approx(latency_us(raised, C::all_reduce, A::Tree, P::LL)));
}

TEST_CASE("under one leaf nothing changes", "[collective][internode][switch_tiers]") {
  // A leaf as large as the job, or none given: no hop crosses the spine, whatever the switch's latency.
  for (C p : {C::all_reduce, C::reduce_scatter, C::all_gather, C::all_to_all}) {
    const CollectivePlan none = plan_collective(cluster(16, 0, 0.3), p, 1024, 128, "network");
    const CollectivePlan one = plan_collective(cluster(16, 16, 0.3), p, 1024, 128, "network");
    const CollectivePlan big = plan_collective(cluster(16, 32, 0.3), p, 1 << 20, 128, "network");
    const CollectivePlan big_none = plan_collective(cluster(16, 0, 0.3), p, 1 << 20, 128, "network");
    CHECK(none.time_ps == one.time_ps);
    CHECK(big.time_ps == big_none.time_ps);
  }
  // And a latency of 0 adds nothing across leaves.
  CHECK(latency_us(cluster(64, 2, 0), C::all_reduce, A::Tree, P::LL) ==
        latency_us(cluster(64, 0, 0.3), C::all_reduce, A::Tree, P::LL));
}

TEST_CASE("a leaf boundary that splits a power of two still crosses", "[collective][internode][switch_tiers]") {
  // 48 nodes under leaves of 32: log2 gives no level above a leaf, but the tree spans two leaves and
  // crosses the spine once each way.
  const double s = 0.5;
  CHECK(latency_us(cluster(48, 32, s), C::all_reduce, A::Tree, P::LL) -
            latency_us(cluster(48, 0, s), C::all_reduce, A::Tree, P::LL) ==
        Approx(2 * 2 * s));
}
