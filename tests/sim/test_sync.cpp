// Streams, cross-stream events, counters, collectives' rendezvous and phase matching.
#include <catch2/catch.hpp>

#include "node_fixtures.hpp"

using namespace overlap;
using namespace overlap::sim;
using namespace overlap::sim::test;

constexpr Bytes kMB = 1'000'000;
constexpr Ps kUs = 1'000'000;

TEST_CASE("per-group tile counters release waits as groups complete (FlashOverlap counting table)", "[engine][counters]") {
  // 264 tiles on 132 SMs: tiles 0-131 finish at 1 tile-time, 132-263 at 2. Group 0 = wave 1.
  TaskGraph g(1);
  const StreamId compute = g.add_stream(0, "compute");
  const StreamId comm = g.add_stream(0, "comm", 1);
  const CounterId c0 = g.add_counter("group0");
  const CounterId c1 = g.add_counter("group1");
  Op gemm = tiled("gemm", compute, 264);
  for (int t = 0; t < 264; ++t) gemm.tile_counters.push_back(t < 132 ? c0 : c1);
  g.add(gemm);
  Op w;
  w.kind = OpKind::wait;
  w.stream = comm;
  w.name = "wait_g0";
  w.counter = c0;
  w.target = 132;
  const OpId w0 = g.add(w);
  w.name = "wait_g1";
  w.counter = c1;
  const OpId w1 = g.add(w);
  std::vector<std::pair<std::int64_t, Ps>> tiles;
  EngineOptions opt;
  opt.on_tile_end = [&](OpId, std::int64_t tile, Ps end) { tiles.emplace_back(tile, end); };
  const Timeline tl = run(g, switch_node(1, 132, 1), opt);
  CHECK(tl.ops[w0].end_ps == kTile);
  CHECK(tl.ops[w1].end_ps == 2 * kTile);
  REQUIRE(tiles.size() == 264);
  CHECK(tiles.front() == std::pair<std::int64_t, Ps>{0, kTile});
  CHECK(tiles.back() == std::pair<std::int64_t, Ps>{263, 2 * kTile});
}

TEST_CASE("signals across ranks act as a barrier", "[engine][counters]") {
  TaskGraph g(2);
  const StreamId s0 = g.add_stream(0, "s0");
  const StreamId s1 = g.add_stream(1, "s1");
  const CounterId barrier = g.add_counter("barrier");
  Op sig;
  sig.kind = OpKind::signal;
  sig.counter = barrier;
  Op wait;
  wait.kind = OpKind::wait;
  wait.counter = barrier;
  wait.target = 2;
  g.add(delay("work0", s0, 3 * kUs));
  sig.name = "arrive0", sig.stream = s0;
  g.add(sig);
  wait.name = "wait0", wait.stream = s0;
  const OpId w0 = g.add(wait);
  g.add(delay("work1", s1, 7 * kUs));
  sig.name = "arrive1", sig.stream = s1;
  g.add(sig);
  wait.name = "wait1", wait.stream = s1;
  const OpId w1 = g.add(wait);
  const Timeline tl = run(g, switch_node(2, 8, 1));
  CHECK(tl.ops[w0].end_ps == 7 * kUs);
  CHECK(tl.ops[w1].end_ps == 7 * kUs);
}

TEST_CASE("cross-stream dependencies order work like CUDA events", "[engine][streams]") {
  TaskGraph g(1);
  const StreamId a = g.add_stream(0, "a");
  const StreamId b = g.add_stream(0, "b");
  const OpId first = g.add(delay("first", a, 5 * kUs));
  Op second = delay("second", b, 1 * kUs);
  second.deps.push_back(first);
  const OpId s = g.add(second);
  const Timeline tl = run(g, switch_node(1, 8, 1));
  CHECK(tl.ops[s].start_ps == 5 * kUs);
  CHECK(tl.ops[s].end_ps == 6 * kUs);
}

TEST_CASE("a curve collective starts when every member is resident", "[engine][collective]") {
  TaskGraph g(2);
  const StreamId s0 = g.add_stream(0, "comm0");
  const StreamId s1 = g.add_stream(1, "comm1");
  g.add(delay("late", s1, 4 * kUs));
  Op ar = comm_kernel("allreduce", s0, 8, 10 * kUs);
  ar.collective = 7;
  ar.members = 2;
  const OpId a0 = g.add(ar);
  ar.stream = s1;
  const OpId a1 = g.add(ar);
  const Timeline tl = run(g, switch_node(2, 132, 1));
  CHECK(tl.ops[a0].start_ps == 0);   // holds its SMs while it waits for its peer
  CHECK(tl.ops[a0].end_ps == 14 * kUs);
  CHECK(tl.ops[a1].end_ps == 14 * kUs);

  SECTION("in the compute-only re-run communication takes no time") {
    EngineOptions opt;
    opt.zero_comm = true;
    const Timeline z = run(g, switch_node(2, 132, 1), opt);
    CHECK(z.ops[a0].end_ps == 0);
    CHECK(z.ops[a1].end_ps == 4 * kUs);
    CHECK(z.makespan_ps == 4 * kUs);
  }
}

namespace {

// A ring reduce-scatter's steps on n ranks: in step k each rank sends one chunk to its right
// neighbour and receives one from its left.
TaskGraph ring_graph(int n, Bytes chunk, Ps step_latency) {
  TaskGraph g(n);
  for (int r = 0; r < n; ++r) {
    Op op = comm_kernel("rs", g.add_stream(r, "comm"), 4, 0);
    op.collective = 1;
    op.members = n;
    for (int k = 0; k < n - 1; ++k) {
      Phase ph;
      ph.sends.push_back({(r + 1) % n, chunk});
      ph.recvs.push_back({(r + n - 1) % n, chunk});
      ph.latency_ps = step_latency;
      op.phases.push_back(ph);
    }
    g.add(op);
  }
  return g;
}

}  // namespace

TEST_CASE("ring steps: per-step time is transfer + step latency, bytes are conserved", "[engine][collective]") {
  // Each step moves 1 MB per rank over its own up- and down-link: 10 us + 1 us latency; 3 steps.
  const TaskGraph g = ring_graph(4, kMB, kUs);
  const Timeline tl = run(g, switch_node(4, 132, 1));
  for (int r = 0; r < 4; ++r) CHECK(tl.ops[static_cast<std::size_t>(r)].end_ps == 33 * kUs);
  const auto pairs = bytes_by_pair(tl);
  REQUIRE(pairs.size() == 4);
  for (const PairBytes& p : pairs) {
    CHECK(p.dst == (p.src + 1) % 4);
    CHECK(p.bytes == 3 * kMB);
  }
  // Conservation on the fabric: what enters the switch leaves it (up-links are even ids, down odd).
  double up = 0, down = 0;
  for (std::size_t l = 0; l < 8; ++l) (l % 2 == 0 ? up : down) += tl.link_bytes[l];
  CHECK(up == 12.0 * kMB);
  CHECK(down == up);
}

TEST_CASE("bytes sent equal bytes received per rank pair (random phases)", "[engine][collective]") {
  // Every rank sends a different size to every other rank in one phase (an all-to-all); each pair's
  // transferred bytes must equal what the sender declared and what the receiver expected.
  const int n = 5;
  TaskGraph g(n);
  auto size = [](int s, int d) { return Bytes{1000 * (1 + s * 7 + d * 3)}; };
  for (int r = 0; r < n; ++r) {
    Op op = comm_kernel("a2a", g.add_stream(r, "comm"), 2, 0);
    op.collective = 9;
    Phase ph;
    for (int p = 0; p < n; ++p)
      if (p != r) {
        ph.sends.push_back({p, size(r, p)});
        ph.recvs.push_back({p, size(p, r)});
      }
    op.phases.push_back(ph);
    g.add(op);
  }
  const Timeline tl = run(g, switch_node(n, 16, 1));
  const auto pairs = bytes_by_pair(tl);
  REQUIRE(pairs.size() == static_cast<std::size_t>(n * (n - 1)));
  for (const PairBytes& p : pairs) CHECK(p.bytes == size(p.src, p.dst));
}

TEST_CASE("mismatched sizes between a send and its receive are an error", "[engine][collective]") {
  TaskGraph g(2);
  Op a = comm_kernel("send", g.add_stream(0, "c0"), 1, 0);
  a.collective = 3;
  a.phases.push_back(Phase{{{1, 100}}, {}, 0, 0});
  g.add(a);
  Op b = comm_kernel("recv", g.add_stream(1, "c1"), 1, 0);
  b.collective = 3;
  b.phases.push_back(Phase{{}, {{0, 200}}, 0, 0});
  g.add(b);
  CHECK_THROWS_WITH(run(g, switch_node(2, 8, 1)), Catch::Contains("sends 100 bytes") && Catch::Contains("expects 200"));
}
