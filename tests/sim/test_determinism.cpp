// Determinism, graph checks, deadlock diagnostics and the Chrome trace's format.
#include <catch2/catch.hpp>

#include "node_fixtures.hpp"
#include "sim/chrome_trace.hpp"

using namespace overlap;
using namespace overlap::sim;
using namespace overlap::sim::test;

namespace {

// A busy little graph: two ranks, GEMMs on two streams, a comm kernel, copies both ways, counters.
TaskGraph busy_graph() {
  TaskGraph g(2);
  for (int r = 0; r < 2; ++r) {
    const StreamId a = g.add_stream(r, "compute");
    const StreamId b = g.add_stream(r, "side");
    const StreamId c = g.add_stream(r, "comm", 1);
    const CounterId done = g.add_counter("tiles" + std::to_string(r));
    Op gemm = tiled("gemm", a, 300, 700'000 + 1000 * r);
    gemm.tile_counters = {done};
    g.add(gemm);
    g.add(tiled("side_gemm", b, 50, 900'000));
    Op w;
    w.kind = OpKind::wait;
    w.name = "wait_half";
    w.stream = c;
    w.counter = done;
    w.target = 150;
    g.add(w);
    g.add(copy("push", c, r, 1 - r, 3'000'000));
    Op ar = comm_kernel("allreduce", c, 16, 5'000'000);
    ar.collective = 1;
    ar.members = 2;
    g.add(ar);
  }
  return g;
}

}  // namespace

TEST_CASE("the same graph run twice gives identical timelines and traces", "[engine][determinism]") {
  const TaskGraph g = busy_graph();
  const NodeConfig node = switch_node(2, 132, 2, 50.0, 250'000);
  EngineOptions opt;
  opt.record_ctas = true;
  const Timeline a = run(g, node, opt);
  const Timeline b = run(g, node, opt);
  REQUIRE(a.ops.size() == b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    CHECK(a.ops[i].start_ps == b.ops[i].start_ps);
    CHECK(a.ops[i].end_ps == b.ops[i].end_ps);
    CHECK(a.ops[i].sms == b.ops[i].sms);
  }
  CHECK(a.events == b.events);
  CHECK(a.ctas.size() == b.ctas.size());
  CHECK(chrome_trace(g, a, node).dump() == chrome_trace(g, b, node).dump());
  TraceOptions cta;
  cta.level = TraceLevel::cta;
  CHECK(chrome_trace(g, a, node, cta).dump() == chrome_trace(g, b, node, cta).dump());
}

TEST_CASE("the Chrome trace follows the trace-event format", "[engine][trace]") {
  const TaskGraph g = busy_graph();
  const NodeConfig node = switch_node(2, 132, 2);
  EngineOptions opt;
  opt.record_ctas = true;
  const Timeline tl = run(g, node, opt);
  TraceOptions cta;
  cta.level = TraceLevel::cta;
  const nlohmann::json trace = chrome_trace(g, tl, node, cta);
  REQUIRE(trace.contains("traceEvents"));
  std::size_t slices = 0, counters = 0, ctas = 0;
  for (const auto& e : trace["traceEvents"]) {
    REQUIRE(e.contains("ph"));
    REQUIRE(e.contains("pid"));
    const std::string ph = e["ph"];
    if (ph == "X") {
      ++slices;
      CHECK(e.contains("name"));
      CHECK(e.contains("tid"));
      CHECK(e["ts"].get<double>() >= 0);
      CHECK(e["dur"].get<double>() >= 0);
      if (e["cat"] == "cta") ++ctas;
    } else if (ph == "C") {
      ++counters;
      CHECK(e.contains("ts"));
    } else if (ph == "b" || ph == "e" || ph == "s" || ph == "f") {
      CHECK(e.contains("id"));
      CHECK(e.contains("ts"));
    } else {
      CHECK(ph == "M");
    }
  }
  CHECK(ctas == 700);
  CHECK(slices >= g.ops().size() + ctas);
  CHECK(counters > 0);
}

TEST_CASE("a cycle is rejected with the ops on it named", "[engine][graph]") {
  TaskGraph g(1);
  const StreamId a = g.add_stream(0, "a");
  const StreamId b = g.add_stream(0, "b");
  const OpId x = g.add(delay("x", a, 1));
  Op y = delay("y", b, 1);
  y.deps.push_back(x);
  const OpId yid = g.add(y);
  Op z = delay("z", a, 1);  // stream order: z after x
  z.deps.push_back(yid);
  const OpId zid = g.add(z);
  g.depend(x, zid);  // x waits for z: x -> y -> z -> x
  CHECK_THROWS_AS(g.check_acyclic(), GraphError);
  CHECK_THROWS_WITH(g.check_acyclic(), Catch::Contains("'x'") && Catch::Contains("'y'") && Catch::Contains("'z'"));
  CHECK_THROWS_AS(run(g, switch_node(1, 8, 1)), GraphError);
}

TEST_CASE("graphviz export names every op and marks stream order", "[engine][graph]") {
  const TaskGraph g = busy_graph();
  const std::string dot = g.to_graphviz();
  CHECK(dot.rfind("digraph", 0) == 0);
  CHECK(dot.find("allreduce") != std::string::npos);
  CHECK(dot.find("style=dashed") != std::string::npos);
  CHECK(dot.find("cluster_rank1") != std::string::npos);
}

TEST_CASE("a wait that can never be satisfied is reported, not hung", "[engine][deadlock]") {
  TaskGraph g(1);
  const StreamId s = g.add_stream(0, "s");
  Op w;
  w.kind = OpKind::wait;
  w.name = "wait_forever";
  w.stream = s;
  w.counter = g.add_counter("never");
  w.target = 1;
  g.add(w);
  g.add(delay("after", s, 1));
  CHECK_THROWS_WITH(run(g, switch_node(1, 8, 1)),
                    Catch::Contains("wait_forever") && Catch::Contains("'never'") && Catch::Contains("2 of 2"));
}

TEST_CASE("a kernel asking more SMs than the GPU has is an error", "[engine][deadlock]") {
  TaskGraph g(1);
  g.add(comm_kernel("greedy", g.add_stream(0, "s"), 200, 1));
  CHECK_THROWS_WITH(run(g, switch_node(1, 132, 1)), Catch::Contains("greedy") && Catch::Contains("200 SMs"));
  CHECK_THROWS_AS(run(g, switch_node(1, 132, 1)), ResourceError);
}

TEST_CASE("a graph too large to simulate tile by tile is refused at once", "[engine][deadlock]") {
  TaskGraph g(1);
  g.add(tiled("huge_gemm", g.add_stream(0, "s"), 300'000'000));
  CHECK_THROWS_AS(run(g, switch_node(1, 132, 1)), ResourceError);
  CHECK_THROWS_WITH(run(g, switch_node(1, 132, 1)), Catch::Contains("300000000 CTAs"));
}

TEST_CASE("without an HBM resource memory-bound kernels take no time", "[engine][memory]") {
  NodeConfig n;
  n.gpus.push_back(GpuConfig{8, 1});
  n.fabric.add_node("gpu0", 0);
  TaskGraph g(1);
  Op m;
  m.kind = OpKind::memory;
  m.name = "rmsnorm";
  m.bytes = 1'000'000;
  m.stream = g.add_stream(0, "s");
  const OpId id = g.add(m);
  const OpId after = g.add(delay("after", m.stream, 5));
  const Timeline tl = run(g, n);
  CHECK(tl.ops[id].end_ps == 0);
  CHECK(tl.ops[after].end_ps == 5);
}

TEST_CASE("invalid ops are rejected when added", "[engine][graph]") {
  TaskGraph g(2);
  const StreamId s = g.add_stream(0, "s");
  CHECK_THROWS_AS(g.add(tiled("empty", s, 0)), GraphError);
  CHECK_THROWS_AS(g.add(copy("nowhere", s, 0, 5, 10)), GraphError);
  Op bad = tiled("bad_counters", s, 4);
  bad.tile_counters = {0, 0};
  CHECK_THROWS_WITH(g.add(bad), Catch::Contains("bad_counters"));
  CHECK_THROWS_AS(g.add_stream(3, "x"), GraphError);
}
