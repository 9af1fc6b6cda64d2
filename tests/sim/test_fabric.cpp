// Fabric: routed transfers with max-min fair sharing (design.md "Fabric"); copy engines.
#include <catch2/catch.hpp>

#include "node_fixtures.hpp"

using namespace overlap;
using namespace overlap::sim;
using namespace overlap::sim::test;

// 1 MB at 100 GB/s (0.1 B/ps) = 10 us exactly.
constexpr Bytes kMB = 1'000'000;
constexpr Ps kUs = 1'000'000;

TEST_CASE("an isolated transfer takes latency + bytes / narrowest capacity", "[engine][fabric]") {
  TaskGraph g(2);
  const StreamId s = g.add_stream(0, "copy");
  const OpId c = g.add(copy("c", s, 0, 1, kMB));
  const Timeline tl = run(g, switch_node(2, 8, 2, 100.0, 500'000));
  // Two hops of 0.5 us latency each + 10 us.
  CHECK(tl.ops[c].end_ps == 11 * kUs);
  REQUIRE(tl.transfers.size() == 1);
  // Up-link, down-link, and the HBM read at the source and written at the destination.
  CHECK(tl.transfers[0].links.size() == 4);
}

TEST_CASE("two transfers on one link each get half, and shares are recomputed when one ends", "[engine][fabric]") {
  // Both leave GPU 0 through its 100 GB/s up-link: 50 GB/s each. A (1 MB) ends at 20 us; B (2 MB) has
  // 1 MB left, now alone at 100 GB/s: 10 us more, ending at 30 us.
  TaskGraph g(3);
  const StreamId s0 = g.add_stream(0, "copy0");
  const StreamId s1 = g.add_stream(0, "copy1");
  const OpId a = g.add(copy("a", s0, 0, 1, kMB));
  const OpId b = g.add(copy("b", s1, 0, 2, 2 * kMB));
  const Timeline tl = run(g, switch_node(3, 8, 2));
  CHECK(tl.ops[a].end_ps == 20 * kUs);
  CHECK(tl.ops[b].end_ps == 30 * kUs);
}

TEST_CASE("equal transfers sharing a link finish together at twice the isolated time", "[engine][fabric]") {
  TaskGraph g(3);
  const StreamId s0 = g.add_stream(0, "copy0");
  const StreamId s1 = g.add_stream(0, "copy1");
  const OpId a = g.add(copy("a", s0, 0, 1, kMB));
  const OpId b = g.add(copy("b", s1, 0, 2, kMB));
  const Timeline tl = run(g, switch_node(3, 8, 2));
  CHECK(tl.ops[a].end_ps == 20 * kUs);
  CHECK(tl.ops[b].end_ps == 20 * kUs);
}

TEST_CASE("a transfer through two links is limited by the narrower", "[engine][fabric]") {
  NodeConfig n;
  for (int i = 0; i < 2; ++i) n.gpus.push_back(GpuConfig{8, 1});
  n.fabric.add_node("gpu0", 0);
  n.fabric.add_node("gpu1", 1);
  const int sw = n.fabric.add_node("switch");
  n.fabric.add_link(0, sw, 100.0, 0, "wide");
  n.fabric.add_link(sw, 1, 50.0, 0, "narrow");
  TaskGraph g(2);
  const OpId c = g.add(copy("c", g.add_stream(0, "copy"), 0, 1, kMB));
  const Timeline tl = run(g, n);
  CHECK(tl.ops[c].end_ps == 20 * kUs);
}

TEST_CASE("max-min: a flow limited elsewhere leaves the rest of a shared link to the other", "[engine][fabric]") {
  // A: gpu0 -> gpu1 crosses up0 (100) and down1 (100). B: gpu2 -> gpu1 crosses up2 (25) and down1.
  // B is held to 25 GB/s by up2, so A gets 75 of down1. A: 1.5 MB at 75 GB/s = 20 us.
  NodeConfig n;
  for (int i = 0; i < 3; ++i) n.gpus.push_back(GpuConfig{8, 1});
  for (int i = 0; i < 3; ++i) n.fabric.add_node("gpu" + std::to_string(i), i);
  const int sw = n.fabric.add_node("switch");
  n.fabric.add_link(0, sw, 100.0, 0, "up0");
  n.fabric.add_link(2, sw, 25.0, 0, "up2");
  n.fabric.add_link(sw, 1, 100.0, 0, "down1");
  TaskGraph g(3);
  const OpId a = g.add(copy("a", g.add_stream(0, "c0"), 0, 1, 1'500'000));
  const OpId b = g.add(copy("b", g.add_stream(2, "c2"), 2, 1, 500'000));
  const Timeline tl = run(g, n);
  CHECK(tl.ops[a].end_ps == 20 * kUs);
  CHECK(tl.ops[b].end_ps == 20 * kUs);
}

TEST_CASE("a calibrated curve gives an isolated transfer exactly its time", "[engine][fabric]") {
  NodeConfig n = switch_node(2, 8, 1, 100.0, 1'000'000);
  // At 1 MB the curve says 25 us (40 GB/s effective, below the 100 GB/s port).
  n.fabric.set_curve(Transport::copy_engine, "port",
                     BandwidthCurve({{1024, 3'000'000}, {kMB, 25'000'000}, {16 * kMB, 170'000'000}}));
  TaskGraph g(2);
  const OpId c = g.add(copy("c", g.add_stream(0, "copy"), 0, 1, kMB));
  const Timeline tl = run(g, n);
  CHECK(tl.ops[c].end_ps == 25'000'000);
}

TEST_CASE("copy-engine transfers leave the SM pool untouched", "[engine][copy]") {
  TaskGraph g(2);
  const StreamId compute = g.add_stream(0, "compute");
  const StreamId cp = g.add_stream(0, "copy");
  const OpId gemm = g.add(tiled("gemm", compute, 256));
  g.add(copy("c", cp, 0, 1, kMB));
  const Timeline tl = run(g, switch_node(2, 132, 2));
  CHECK(tl.ops[gemm].end_ps == 2 * kTile);
  CHECK(tl.sm_busy_ps[0] == 256 * kTile);
  CHECK(tl.copy_engine_busy_ps[0] == 10 * kUs);
}

TEST_CASE("with more concurrent copies than engines the extra ones queue", "[engine][copy]") {
  // Three copies to three different peers over direct links (no sharing), two engines: the third
  // starts when the first engine frees.
  NodeConfig n;
  for (int i = 0; i < 4; ++i) n.gpus.push_back(GpuConfig{8, 2});
  for (int i = 0; i < 4; ++i) n.fabric.add_node("gpu" + std::to_string(i), i);
  for (int i = 1; i < 4; ++i) n.fabric.add_link(0, i, 100.0, 0, "0->" + std::to_string(i));
  TaskGraph g(4);
  std::vector<OpId> ids;
  for (int i = 1; i < 4; ++i) ids.push_back(g.add(copy("c" + std::to_string(i), g.add_stream(0, "s" + std::to_string(i)), 0, i, kMB)));
  const Timeline tl = run(g, n);
  CHECK(tl.ops[ids[0]].end_ps == 10 * kUs);
  CHECK(tl.ops[ids[1]].end_ps == 10 * kUs);
  CHECK(tl.ops[ids[2]].ready_ps == 0);
  CHECK(tl.ops[ids[2]].start_ps == 10 * kUs);
  CHECK(tl.ops[ids[2]].end_ps == 20 * kUs);
  CHECK(tl.ops[ids[2]].copy_engine == 0);
}

TEST_CASE("memory-bound kernels share HBM", "[engine][memory]") {
  // HBM of the fixture: 1000 GB/s = 1 B/ps. 1 MB alone: 1 us; two at once: 2 us each.
  TaskGraph g(1);
  Op m;
  m.kind = OpKind::memory;
  m.bytes = kMB;
  m.name = "rmsnorm_a";
  m.stream = g.add_stream(0, "a");
  const OpId a = g.add(m);
  m.name = "rmsnorm_b";
  m.stream = g.add_stream(0, "b");
  const OpId b = g.add(m);
  const Timeline tl = run(g, switch_node(1, 8, 1));
  CHECK(tl.ops[a].end_ps == 2 * kUs);
  CHECK(tl.ops[b].end_ps == 2 * kUs);
  // Both kernels' bytes crossed the HBM resource once each.
  CHECK(tl.link_bytes[static_cast<std::size_t>(switch_node(1, 8, 1).fabric.hbm_link(0))] == 2.0 * kMB);
}

TEST_CASE("a local copy moves its bytes through HBM twice (read and write)", "[engine][copy]") {
  // 1 MB read + 1 MB written at 1000 GB/s = 2 us.
  TaskGraph g(1);
  const OpId c = g.add(copy("d2d", g.add_stream(0, "copy"), 0, 0, kMB));
  const NodeConfig node = switch_node(1, 8, 1);
  const Timeline tl = run(g, node);
  CHECK(tl.ops[c].end_ps == 2 * kUs);
  CHECK(tl.link_bytes[static_cast<std::size_t>(node.fabric.hbm_link(0))] == 2.0 * kMB);
  CHECK(bytes_by_pair(tl).empty());  // a local copy is not traffic between ranks
}
