// The CPU side of `trace --replay` (calibrate/traces/replay_graph.hpp): a launching thread's calls
// as graph nodes, on tests/data/trace/cpu_sync.json, whose layout make_fixtures.py's cpu_sync()
// describes. Every span below is worked out by hand from that layout (exact: times are integer
// nanoseconds and every factor divides the durations).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "calibrate/traces/replay_chrome_trace.hpp"
#include "calibrate/traces/replay_graph.hpp"
#include "calibrate/traces/trace_replay.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/trace/replay_test_support.hpp"
#include "tests/support/temp_file.hpp"

namespace {

namespace traces = overlap::traces;
using overlap::test::replay::kData;
using overlap::test::replay::rank_row;
using overlap::test::replay::replay_json;

const std::string kCpu = kData + "cpu_sync.json";

traces::ReplayGraph graph_of(const traces::RankTrace& t) { return traces::build_replay_graph({{&t, 0}}, {}); }

std::vector<std::int64_t> measured(const traces::ReplayGraph& g) {
  std::vector<std::int64_t> d;
  for (const traces::ReplayNode& n : g.nodes) d.push_back(n.duration_ns);
  return d;
}

double what_if_span_us(const std::string& what_if) {
  return rank_row(replay_json({kCpu, "--what-if", what_if}), 0)["what_if_span_us"].get<double>();
}

}  // namespace

TEST_CASE("the replay graph holds the launching thread's launches and synchronisations", "[trace][replay][cpu]") {
  const traces::RankTrace t = traces::read_trace(kCpu, "ProfilerStep#");
  const traces::ReplayGraph g = graph_of(t);
  REQUIRE(g.nodes.size() == 5);
  // Five launches and two synchronisations on one thread, six call-order edges between them.
  CHECK(g.cpu.size() == 7);
  CHECK(g.cpu_threads == 1);
  CHECK(g.cpu_syncs == 2);
  CHECK(g.launches_not_replayed == 0);
  CHECK(g.launch_latency_ns == std::vector<std::int64_t>{5000});
  std::int64_t order = 0, launch = 0, sync = 0;
  for (const traces::ReplayEdge& e : g.edges) {
    order += e.source == traces::EdgeSource::cpu_order ? 1 : 0;
    launch += e.source == traces::EdgeSource::launch ? 1 : 0;
    if (e.source != traces::EdgeSource::sync) continue;
    ++sync;
    // The stream synchronisation waits for G1 (ends 105), the device one for E2 (ends 282).
    REQUIRE_FALSE(g.is_cpu(e.from));
    CHECK((g.nodes[static_cast<std::size_t>(e.from)].end_ns == 105000 || g.nodes[static_cast<std::size_t>(e.from)].end_ns == 282000));
  }
  CHECK(order == 6);
  CHECK(launch == 5);
  CHECK(sync == 2);
  // Both return 2 us after what they wait for; E3's start 6 us past its launch plus latency is kept.
  for (const traces::CpuNode& c : g.cpu)
    if (c.call == traces::CpuCall::sync) CHECK(c.duration_ns == 2000);
  CHECK(g.unexplained == 1);
  // The identity: every kernel and every CPU call where it was measured.
  const traces::ReplayResult r = traces::replay(g, measured(g));
  CHECK(r.stuck == 0);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    CHECK(r.start_ns[i] == g.nodes[i].start_ns);
    CHECK(r.end_ns[i] == g.nodes[i].end_ns);
  }
  for (std::size_t j = 0; j < g.cpu.size(); ++j) {
    CHECK(r.start_ns[static_cast<std::size_t>(g.cpu_id(j))] + g.cpu[j].duration_ns == g.cpu[j].end_ns);
  }
}

TEST_CASE("what-ifs move the launches after a synchronisation, never the CPU's own gaps", "[trace][replay][cpu]") {
  CHECK(rank_row(replay_json({kCpu}), 0)["replayed_span_us"] == 330.0);
  // GEMMs twice as fast: G1 [5, 55]; the stream sync returns at 57; 50 of CPU work: E1 launched at
  // 107, runs [112, 122]; G2 (launched 110) [122, 172]; E2 [172, 182]; the device sync (called at
  // 120) returns at 184; E3 launched at 214 starts 11 later (as measured): [225, 235]. Span 230.
  CHECK(what_if_span_us("kind.gemm.speed=2") == 230.0);
  // Twice as slow: G1 [5, 205], sync back at 207, E1 launched 257 [262, 272], G2 [272, 472], E2
  // [472, 482], device sync back at 484, E3 launched 514: [525, 535]. Span 530.
  CHECK(what_if_span_us("kind.gemm.speed=0.5") == 530.0);
  // Elementwise kernels twice as fast: E1 [162, 167], G2 (released at 165) [167, 267], E2 [267, 272],
  // device sync back at 274, E3 launched 304: [315, 320]. Span 315.
  CHECK(what_if_span_us("kind.memory_bound.speed=2") == 315.0);
  // GEMMs 1000x: the step is the CPU's. G1 [5, 5.1], sync back 7.1, E1 launched 57.1 [62.1, 72.1],
  // G2 [72.1, 72.2], E2 [72.2, 82.2], device sync back 84.2, E3 launched 114.2: [125.2, 135.2].
  CHECK(what_if_span_us("kind.gemm.speed=1000") == Approx(130.2).margin(1e-9));
}

TEST_CASE("a synchronisation that returned before a kernel ended did not wait for it", "[trace][replay][cpu]") {
  traces::RankTrace t = traces::read_trace(kCpu, "ProfilerStep#");
  // The stream synchronisation said to return at 50, while G1 ran until 105: not joined to G1; its
  // measured 48 us stay as the thread's, and the identity is still exact.
  for (traces::SyncCall& s : t.syncs)
    if (s.kind == traces::SyncKind::stream_sync && s.thread != -1) s.end_ns = 50000;
  const traces::ReplayGraph g = graph_of(t);
  CHECK(g.cpu_syncs == 1);
  const traces::ReplayResult r = traces::replay(g, measured(g));
  CHECK(traces::replayed_span_ns(g, r) == traces::measured_span_ns(g));
}

TEST_CASE("launches from an unrecorded thread keep their measured times", "[trace][replay][cpu]") {
  traces::RankTrace t = traces::read_trace(kCpu, "ProfilerStep#");
  for (std::int64_t& th : t.launch_threads) th = -1;
  const traces::ReplayGraph g = graph_of(t);
  CHECK(g.launches_not_replayed == 5);
  // Only the synchronisations remain on the thread, and no launch follows them in the graph: E3
  // keeps its measured start, so GEMMs twice as fast leave the span as measured (330 us).
  std::vector<std::int64_t> d = measured(g);
  for (std::size_t i = 0; i < g.nodes.size(); ++i)
    if (t.activities[static_cast<std::size_t>(g.nodes[i].activity)].kind == traces::KernelKind::gemm) d[i] /= 2;
  const traces::ReplayResult r = traces::replay(g, d);
  CHECK(traces::replayed_span_ns(g, r) == 330000);
  CHECK(traces::replayed_span_ns(g, traces::replay(g, measured(g))) == traces::measured_span_ns(g));
}

TEST_CASE("the replay trace shows the CPU's synchronisations on their own track, measured and replayed", "[trace][replay][cpu]") {
  const std::filesystem::path out = overlap::test::binary_dir() / "trace_replay_cpu_trace.json";
  std::filesystem::remove(out);
  const overlap::test::CliResult r =
      overlap::test::cli({"trace", kCpu, "--replay", "--what-if", "kind.gemm.speed=2", "--replay-trace", out.string()});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  std::ifstream in(out);
  const nlohmann::json j = nlohmann::json::parse(in);
  // (pid, ts, dur) of each synchronisation: measured on process 0, replayed (GEMMs halved) on 1.
  std::vector<std::tuple<int, double, double>> syncs;
  int named_tracks = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["args"]["name"] == "CPU thread 0") ++named_tracks;
    if (e["ph"] != "X" || e["cat"] != "cpu_sync") continue;
    CHECK(e["tid"].get<std::int64_t>() == overlap::traces::kCpuTrackTid);
    syncs.emplace_back(e["pid"].get<int>(), e["ts"].get<double>(), e["dur"].get<double>());
  }
  CHECK(named_tracks == 2);
  std::sort(syncs.begin(), syncs.end());
  // Measured: [2, 107] and [170, 284]. Replayed: the stream sync called at 2 returns at 57; the
  // device sync is called at 120 (107 + 13 of launches) and returns at 184 (make_fixtures.py's
  // numbers, test above).
  const std::vector<std::tuple<int, double, double>> expected = {{0, 2, 105}, {0, 170, 114}, {1, 2, 55}, {1, 120, 64}};
  CHECK(syncs == expected);
}
