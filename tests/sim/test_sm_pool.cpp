// SM dispatch: waves emerge from dispatch (design.md "GPU"; async-tp-illustrated, "SM contention and
// wave quantization").
#include <catch2/catch.hpp>

#include "node_fixtures.hpp"

using namespace overlap;
using namespace overlap::sim;
using namespace overlap::sim::test;

TEST_CASE("256 equal tiles on 132 SMs finish in exactly 2 tile-times", "[engine][waves]") {
  TaskGraph g(1);
  const StreamId s = g.add_stream(0, "compute");
  const OpId gemm = g.add(tiled("gemm", s, 256));
  const Timeline tl = run(g, switch_node(1, 132, 2));
  CHECK(tl.ops[gemm].start_ps == 0);
  CHECK(tl.ops[gemm].end_ps == 2 * kTile);
  CHECK(tl.ops[gemm].sms_held == 132);
  CHECK(tl.sm_busy_ps[0] == 256 * kTile);
}

TEST_CASE("with 10 SMs held by a comm kernel the same GEMM takes 3 tile-times (+50 %)", "[engine][waves]") {
  // async-tp-illustrated: 256 tiles on 122 SMs = 2.03 waves -> a third, partial wave.
  TaskGraph g(1);
  const StreamId comm = g.add_stream(0, "comm", 1);
  const StreamId compute = g.add_stream(0, "compute");
  const OpId nccl = g.add(comm_kernel("nccl", comm, 10, 10 * kTile));
  const OpId gemm = g.add(tiled("gemm", compute, 256));
  const Timeline tl = run(g, switch_node(1, 132, 2));
  CHECK(tl.ops[nccl].start_ps == 0);
  CHECK(tl.ops[nccl].sms.size() == 10);
  CHECK(tl.ops[gemm].sms_held == 122);
  CHECK(tl.ops[gemm].end_ps == 3 * kTile);
}

TEST_CASE("a second-stream kernel fills the SMs a partial wave leaves idle", "[engine][streams]") {
  // 200 tiles on 132 SMs: the second wave has 68 tiles and leaves 64 SMs idle; a 64-tile kernel on
  // another stream fits there, so both finish at 2 tile-times. On the same stream it needs a third.
  auto build = [](bool two_streams) {
    TaskGraph g(1);
    const StreamId a = g.add_stream(0, "a");
    const StreamId b = two_streams ? g.add_stream(0, "b") : a;
    g.add(tiled("first", a, 200));
    g.add(tiled("second", b, 64));
    return run(g, switch_node(1, 132, 2));
  };
  const Timeline two = build(true);
  CHECK(two.ops[0].end_ps == 2 * kTile);
  CHECK(two.ops[1].start_ps == kTile);  // on the 64 SMs the partial wave leaves idle
  CHECK(two.ops[1].end_ps == 2 * kTile);
  const Timeline one = build(false);
  CHECK(one.ops[1].start_ps == 2 * kTile);
  CHECK(one.ops[1].end_ps == 3 * kTile);
}

TEST_CASE("a higher-priority stream's kernel gets freed SMs first", "[engine][priority]") {
  // Both wait behind a 132-tile kernel; when its SMs free up, `high` (priority 1) takes them even
  // though `low` was launched first.
  TaskGraph g(1);
  const StreamId s0 = g.add_stream(0, "s0");
  const StreamId lo = g.add_stream(0, "low", 0);
  const StreamId hi = g.add_stream(0, "high", 1);
  g.add(tiled("fill", s0, 132));
  const OpId low = g.add(tiled("low", lo, 132));
  const OpId high = g.add(tiled("high", hi, 132));
  const Timeline tl = run(g, switch_node(1, 132, 2));
  CHECK(tl.ops[high].start_ps == kTile);
  CHECK(tl.ops[high].end_ps == 2 * kTile);
  CHECK(tl.ops[low].start_ps == 2 * kTile);
  CHECK(tl.ops[low].end_ps == 3 * kTile);
}

TEST_CASE("a comm kernel launched after a persistent kernel that took every SM waits for SMs", "[engine][persistent]") {
  // design.md "GPU": why TransformerEngine sets an SM margin on Hopper. The persistent GEMM sizes its
  // grid to all 132 SMs and loops over 264 tiles (2 each); the comm kernel, although on a
  // higher-priority stream, gets SMs only when the GEMM's CTAs exit at 2 tile-times.
  TaskGraph g(1);
  const StreamId compute = g.add_stream(0, "compute");
  const StreamId comm = g.add_stream(0, "comm", 1);
  Op gemm = tiled("persistent_gemm", compute, 264);
  gemm.kind = OpKind::persistent;
  const OpId p = g.add(gemm);
  g.add(delay("host_gap", comm, kTile / 2));
  const OpId nccl = g.add(comm_kernel("nccl", comm, 16, kTile));
  const Timeline tl = run(g, switch_node(1, 132, 2));
  CHECK(tl.ops[p].sms_held == 132);
  CHECK(tl.ops[p].end_ps == 2 * kTile);
  CHECK(tl.ops[nccl].ready_ps == kTile / 2);
  CHECK(tl.ops[nccl].start_ps == 2 * kTile);
  CHECK(tl.ops[nccl].end_ps == 3 * kTile);

  SECTION("with a non-persistent GEMM the comm kernel gets SMs after the first wave") {
    TaskGraph g2(1);
    const StreamId c2 = g2.add_stream(0, "compute");
    const StreamId m2 = g2.add_stream(0, "comm", 1);
    g2.add(tiled("gemm", c2, 264));
    g2.add(delay("host_gap", m2, kTile / 2));
    const OpId n2 = g2.add(comm_kernel("nccl", m2, 16, kTile));
    const Timeline t2 = run(g2, switch_node(1, 132, 2));
    CHECK(t2.ops[n2].start_ps == kTile);
    CHECK(t2.ops[n2].end_ps == 2 * kTile);
    // The GEMM's second wave ran on 116 SMs, so 16 tiles spill into a third wave.
    CHECK(t2.ops[0].end_ps == 3 * kTile);
  }
}

TEST_CASE("persistent grid capped by max_ctas loops over its tiles", "[engine][persistent]") {
  TaskGraph g(1);
  const StreamId s = g.add_stream(0, "compute");
  Op gemm = tiled("persistent_gemm", s, 100);
  gemm.kind = OpKind::persistent;
  gemm.max_ctas = 10;
  const OpId p = g.add(gemm);
  const Timeline tl = run(g, switch_node(1, 132, 2));
  CHECK(tl.ops[p].sms_held == 10);
  CHECK(tl.ops[p].end_ps == 10 * kTile);
}

TEST_CASE("ctas_per_sm packs several CTAs on one SM", "[engine][waves]") {
  TaskGraph g(1);
  const StreamId s = g.add_stream(0, "compute");
  Op k = tiled("attn", s, 264);
  k.ctas_per_sm = 2;
  const OpId id = g.add(k);
  const Timeline tl = run(g, switch_node(1, 132, 2));
  CHECK(tl.ops[id].end_ps == kTile);
  CHECK(tl.ops[id].sms_held == 132);
}

TEST_CASE("launch overhead delays each kernel after it is ready", "[engine][launch]") {
  TaskGraph g(1);
  const StreamId s = g.add_stream(0, "compute");
  const OpId a = g.add(tiled("a", s, 132));
  const OpId b = g.add(tiled("b", s, 132));
  NodeConfig node = switch_node(1, 132, 2);
  node.launch_gap_ps = 3'000'000;
  const Timeline tl = run(g, node);
  CHECK(tl.ops[a].start_ps == 3'000'000);
  CHECK(tl.ops[a].end_ps == 4'000'000);
  CHECK(tl.ops[b].ready_ps == 4'000'000);
  CHECK(tl.ops[b].start_ps == 7'000'000);
}
