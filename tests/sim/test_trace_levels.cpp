// Trace levels, flow arrows and the rank / time filters of the Chrome trace (sim/chrome_trace.hpp),
// on a small hand-built graph whose op, CTA and transfer counts are known exactly.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "node_fixtures.hpp"
#include "sim/chrome_trace.hpp"

using namespace overlap;
using namespace overlap::sim;
using namespace overlap::sim::test;

namespace {

constexpr int kRanks = 3;
constexpr std::int64_t kTiles = 8;

// Per rank: a GEMM of 8 tiles, a ring exchange (one phase: send 4 KB to the next rank, receive from
// the previous one), and a delay. Rank 0 also copies 1 MB to rank 1 with a copy engine. Ops: 3 per
// rank + 1 copy = 10; CTAs: 8 per rank = 24; phase transfers (send -> receive pairs): 3.
TaskGraph ring_graph() {
  TaskGraph g(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    const StreamId compute = g.add_stream(r, "compute");
    const StreamId comm = g.add_stream(r, "comm", 1);
    g.add(tiled("gemm", compute, kTiles));
    Op ring = comm_kernel("ring", comm, 1, 0);
    ring.collective = 5;
    ring.phases.push_back(Phase{{{(r + 1) % kRanks, 4096}}, {{(r + kRanks - 1) % kRanks, 4096}}, 0, 0});
    g.add(ring);
    g.add(delay("tail", compute, 2 * kTile));
    if (r == 0) g.add(copy("push", comm, 0, 1, 1 << 20));
  }
  return g;
}

struct Counts {
  std::map<int, int> op_slices_per_rank;  // X events on stream tracks
  int ctas = 0, flows_s = 0, flows_f = 0, async = 0, counters = 0;
  std::set<int> pids;
};

Counts count(const nlohmann::json& trace) {
  Counts c;
  for (const auto& e : trace.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "M") continue;
    c.pids.insert(e.at("pid").get<int>());
    if (ph == "X") {
      if (e.at("cat") == "cta") ++c.ctas;
      else if (e.at("cat") == "compute" || e.at("cat") == "comm") ++c.op_slices_per_rank[e.at("pid").get<int>()];
    } else if (ph == "s") {
      ++c.flows_s;
    } else if (ph == "f") {
      ++c.flows_f;
    } else if (ph == "b") {
      ++c.async;
    } else if (ph == "C") {
      ++c.counters;
    }
  }
  return c;
}

struct Run {
  TaskGraph graph = ring_graph();
  NodeConfig node = switch_node(kRanks, 4, 1);
  Timeline tl;
  explicit Run(bool ctas) {
    EngineOptions o;
    o.record_ctas = ctas;
    tl = run(graph, node, o);
  }
};

}  // namespace

TEST_CASE("kernel level: one slice per op per rank, no CTAs, a flow per send", "[trace][levels]") {
  const Run r(false);
  const nlohmann::json trace = chrome_trace(r.graph, r.tl, r.node);  // kernel is the default
  const Counts c = count(trace);
  CHECK(c.op_slices_per_rank == std::map<int, int>{{0, 4}, {1, 3}, {2, 3}});
  CHECK(c.ctas == 0);
  CHECK(c.async == 0);
  CHECK(c.flows_s == kRanks);  // the copy has no receiving op: no arrow
  CHECK(c.flows_f == kRanks);
  CHECK(trace["otherData"]["trace_level"] == "kernel");
  // Every op appears exactly once, on its own rank's process and stream.
  std::map<int, int> seen;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X") {
      const int op = e["args"]["op"].get<int>();
      ++seen[op];
      CHECK(e["pid"].get<int>() == r.graph.rank_of(op));
      CHECK(e["tid"].get<int>() == r.graph.op(op).stream);
    }
  CHECK(seen.size() == r.graph.ops().size());
  for (const auto& [op, n] : seen) CHECK(n == 1);
}

TEST_CASE("flow arrows pair up: each s has one f with its id, from sender to receiver", "[trace][levels]") {
  const Run r(false);
  const nlohmann::json trace = chrome_trace(r.graph, r.tl, r.node);
  std::map<std::int64_t, nlohmann::json> starts, finishes;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "s") CHECK(starts.emplace(e["id"].get<std::int64_t>(), e).second);
    if (e["ph"] == "f") CHECK(finishes.emplace(e["id"].get<std::int64_t>(), e).second);
  }
  REQUIRE(starts.size() == static_cast<std::size_t>(kRanks));
  std::set<std::pair<int, int>> pairs;
  for (const auto& [id, s] : starts) {
    REQUIRE(finishes.count(id) == 1);
    const auto& f = finishes.at(id);
    CHECK(f["bp"] == "e");
    CHECK(f["ts"].get<double>() >= s["ts"].get<double>());
    const int src = s["pid"].get<int>(), dst = f["pid"].get<int>();
    CHECK(dst == (src + 1) % kRanks);  // the ring: each rank sends to the next
    pairs.insert({src, dst});
    // Both ends sit inside the ring op's slice on its rank (where Perfetto binds them).
    for (const auto& [end, rank] : {std::pair{s, src}, std::pair{f, dst}}) {
      bool inside = false;
      for (const auto& e : trace["traceEvents"])
        if (e["ph"] == "X" && e["pid"] == rank && e["tid"] == end["tid"] && e["name"] == "ring")
          inside = e["ts"].get<double>() <= end["ts"].get<double>() &&
                   end["ts"].get<double>() <= e["ts"].get<double>() + e["dur"].get<double>() + 1e-9;
      CHECK(inside);
    }
  }
  CHECK(pairs.size() == static_cast<std::size_t>(kRanks));
  CHECK(finishes.size() == starts.size());
}

TEST_CASE("cta level: one slice per CTA on its SM, plus the kernel level's slices", "[trace][levels]") {
  const Run r(true);
  TraceOptions o;
  o.level = TraceLevel::cta;
  const nlohmann::json trace = chrome_trace(r.graph, r.tl, r.node, o);
  const Counts c = count(trace);
  CHECK(c.ctas == kRanks * kTiles);
  CHECK(c.op_slices_per_rank == std::map<int, int>{{0, 4}, {1, 3}, {2, 3}});
  CHECK(c.flows_s == kRanks);
  CHECK(c.async > 0);     // transfers on the links they crossed
  CHECK(c.counters > 0);  // SMs busy, links
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "cta") CHECK(e["tid"].get<int>() >= 200000);  // an SM track
  CHECK(trace["otherData"]["trace_level"] == "cta");
}

TEST_CASE("rank filter keeps only those ranks' processes, and arrows with both ends kept", "[trace][filters]") {
  const Run r(true);
  TraceOptions o;
  o.level = TraceLevel::cta;
  o.ranks = {1, 2};
  const nlohmann::json trace = chrome_trace(r.graph, r.tl, r.node, o);
  const Counts c = count(trace);
  CHECK(c.op_slices_per_rank == std::map<int, int>{{1, 3}, {2, 3}});
  CHECK(c.ctas == 2 * kTiles);
  CHECK(c.flows_s == 1);  // 1 -> 2 only (0 -> 1 and 2 -> 0 have an end on rank 0)
  CHECK(c.flows_f == 1);
  for (int pid : c.pids) CHECK((pid == 1 || pid == 2 || pid == kRanks));  // kRanks: the fabric
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "process_name") CHECK(e["pid"].get<int>() != 0);
}

TEST_CASE("time window keeps exactly the events that overlap it", "[trace][filters]") {
  const Run r(true);
  // A window inside the run: from the end of rank 1's GEMM to just before the end.
  Ps gemm1_end = 0;
  for (OpId id = 0; id < static_cast<OpId>(r.graph.ops().size()); ++id)
    if (r.graph.rank_of(id) == 1 && r.graph.op(id).name == "gemm") gemm1_end = r.tl.ops[static_cast<std::size_t>(id)].end_ps;
  const Ps w0 = gemm1_end + 1, w1 = r.tl.makespan_ps - 1;
  REQUIRE(w0 < w1);
  for (TraceLevel level : {TraceLevel::kernel, TraceLevel::cta}) {
    TraceOptions o;
    o.level = level;
    o.window_start_ps = w0;
    o.window_end_ps = w1;
    const nlohmann::json trace = chrome_trace(r.graph, r.tl, r.node, o);
    int expected_ops = 0, expected_ctas = 0;
    for (const OpRecord& rec : r.tl.ops) expected_ops += rec.end_ps >= w0 && rec.start_ps <= w1;
    for (const CtaRecord& cta : r.tl.ctas) expected_ctas += cta.end_ps >= w0 && cta.start_ps <= w1;
    int ops = 0, ctas = 0;
    for (const auto& e : trace["traceEvents"]) {
      if (e["ph"] == "M") continue;
      const double ts = e["ts"].get<double>();
      if (e["ph"] == "X") {
        CHECK(ts <= us_from_ps(w1));
        CHECK(ts + e["dur"].get<double>() >= us_from_ps(w0) - 1e-9);
        // One slice per op on its stream track (compute / comm); cta level adds CTAs, and the
        // copy-engine and comm-SM tracks, which repeat ops already counted.
        if (e["cat"] == "cta") ++ctas;
        if (e["cat"] == "compute" || e["cat"] == "comm") ++ops;
      }
      if (e["ph"] == "C") CHECK((ts >= us_from_ps(w0) && ts <= us_from_ps(w1)));
    }
    CHECK(ops == expected_ops);
    CHECK(ops < static_cast<int>(r.graph.ops().size()));  // the window did cut something
    CHECK(ctas == (level == TraceLevel::cta ? expected_ctas : 0));
  }
}
