// `overlap-sim trace --replay` (calibrate/traces/replay_graph.hpp, trace_replay.hpp) on the
// fixtures of tests/data/trace/: the identity (every kernel at its measured duration: the replayed
// span within 2 % of the measured one, on every fixture), the graph's edges on the two-rank replay
// fixture whose layout make_fixtures.py's replay() describes, what-ifs whose answers are worked out
// by hand below (exact: times are integer nanoseconds and every factor divides them), and bad input.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "calibrate/traces/collective_wait.hpp"
#include "calibrate/traces/replay_graph.hpp"
#include "calibrate/traces/replay_what_if.hpp"
#include "calibrate/traces/trace_replay.hpp"
#include "cost_model/collective_model.hpp"
#include "cost_model/profile_loader.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/trace/replay_test_support.hpp"
#include "tests/support/temp_file.hpp"

namespace {

namespace fs = std::filesystem;
using overlap::test::cli;
using overlap::test::CliResult;
namespace traces = overlap::traces;
using overlap::test::replay::kData;
using overlap::test::replay::rank_row;
using overlap::test::replay::replay_json;

fs::path scratch(const std::string& name) {
  const fs::path dir = overlap::test::binary_dir() / "trace_replay_test_tmp";
  fs::create_directories(dir);
  return dir / name;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::vector<std::string> kPair = {kData + "replay_rank0.json", kData + "replay_rank1.json"};

// The graph of the two-rank replay fixture, built as the CLI builds it.
struct Loaded {
  std::vector<traces::RankTrace> traces;
  std::vector<traces::RankReport> reports;
  traces::ReplayGraph graph;
};
Loaded load_pair(bool drop_syncs = false) {
  Loaded l;
  for (const std::string& f : kPair) {
    l.traces.push_back(traces::read_trace(f, "ProfilerStep#"));
    if (drop_syncs) l.traces.back().syncs.clear();
    l.reports.push_back(traces::analyze(l.traces.back()));
  }
  const traces::CollectiveSplit split = traces::split_collective_waits(l.reports);
  std::vector<traces::ReplayRank> in;
  for (std::size_t i = 0; i < l.traces.size(); ++i) in.push_back({&l.traces[i], l.reports[i].clock_offset_ns.value_or(0)});
  l.graph = traces::build_replay_graph(in, split.members);
  return l;
}

}  // namespace

TEST_CASE("trace readers keep streams, launch threads and recorded stream waits", "[trace][replay]") {
  const traces::RankTrace t = traces::read_trace(kData + "replay_rank0.json", "ProfilerStep#");
  REQUIRE(t.activities.size() == 4);
  for (const traces::GpuActivity& a : t.activities)
    CHECK(a.stream == (a.cls == traces::ActivityClass::communication ? 20 : 7));
  REQUIRE(t.launch_threads.size() == t.launches.size());
  // Every runtime call with a correlation id: the four launches, cudaEventRecord and cudaStreamWaitEvent.
  CHECK(t.launches.size() == 6);
  // The runtime calls cudaEventRecord and cudaStreamWaitEvent and the cuda_sync record of the wait.
  int waits_with_streams = 0;
  for (const traces::SyncCall& s : t.syncs)
    if (s.kind == traces::SyncKind::stream_wait_event && s.wait_on_stream == 7 && s.stream == 20 && s.event_record_correlation == 2)
      ++waits_with_streams;
  CHECK(t.syncs.size() == 3);
  CHECK(waits_with_streams == 1);
}

TEST_CASE("the replay graph reads stream waits, infers the one the trace omits and joins the collective", "[trace][replay]") {
  const Loaded l = load_pair();
  const traces::ReplayGraph& g = l.graph;
  CHECK(g.nodes.size() == 8);
  // Per rank: A -> B -> C on stream 7 (2 edges), A -> all-reduce from the recorded wait; on rank 0,
  // C starts at 175 after B's end at 155: the all-reduce's end at 175 (stream 20) is inferred.
  CHECK(g.event_waits == 2);
  CHECK(g.inferred == 1);
  CHECK(g.unexplained == 0);
  CHECK(g.collectives.size() == 1);
  CHECK(g.launch_latency_ns == std::vector<std::int64_t>{5000, 5000});
  // Without the cuda_sync records the waits of the all-reduce on A are inferred instead (A ends
  // exactly when the all-reduce starts), and the replay still matches the measurement.
  const Loaded bare = load_pair(true);
  CHECK(bare.graph.event_waits == 0);
  CHECK(bare.graph.inferred == 3);
  std::vector<std::int64_t> d;
  for (const auto& n : bare.graph.nodes) d.push_back(n.duration_ns);
  const traces::ReplayResult r = traces::replay(bare.graph, d);
  CHECK(r.stuck == 0);
  CHECK(traces::replayed_span_ns(bare.graph, r) == traces::measured_span_ns(bare.graph));
}

TEST_CASE("the replay identity: each kernel at its measured duration lands within 2 % of the measured span", "[trace][replay]") {
  const std::vector<std::vector<std::string>> sets = {
      {kData + "rank0.json"},
      {kData + "rank0.json", kData + "rank1.json.gz"},
      {kData + "late_rank0.json", kData + "late_rank1.json"},
      {kData + "deepep_rank0.json"},
      {kData + "old_layout.json"},
      {kData + "cpu_sync.json"},
      kPair,
  };
  for (const auto& files : sets) {
    INFO(files.front());
    const nlohmann::json j = replay_json(files);
    CHECK(j["graph"]["kernels_never_ran"] == 0);
    for (const auto& row : j["ranks"]) {
      INFO(row.dump());
      CHECK(std::abs(row["replay_error_pct"].get<double>()) <= 2.0);
      CHECK(row["measured_span_us"].get<double>() > 0);
    }
  }
}

TEST_CASE("the replay identity holds on an Nsight Systems export", "[trace][replay]") {
  const fs::path path = scratch("nsys_rank.sqlite");
  fs::remove(path);
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  const std::string sql = slurp(kData + "nsys_rank.sql");
  REQUIRE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  const nlohmann::json j = replay_json({path.string()});
  CHECK(j["streams"].size() >= 1);
  for (const auto& row : j["ranks"]) CHECK(std::abs(row["replay_error_pct"].get<double>()) <= 2.0);
}

TEST_CASE("what-ifs on the two-rank replay fixture give the spans worked out by hand", "[trace][replay]") {
  // Measured: both ranks span [5, 195] = 190 us.
  {
    const nlohmann::json j = replay_json(kPair);
    CHECK(rank_row(j, "all")["replayed_span_us"] == 190.0);
  }
  // GEMMs twice as fast. Rank 0: A [5, 55], B [55, 80]; rank 1: A [5, 65], B [65, 90]. The
  // all-reduce arrives at 55 and 65, transfers 50 after the last: ends at 115 on both. Rank 0's C
  // waits for it (inferred): [115, 135]; rank 1's C follows B: [90, 110]. Spans 130 and 110.
  {
    const nlohmann::json j = replay_json({kPair[0], kPair[1], "--what-if", "kind.gemm.speed=2"});
    CHECK(rank_row(j, 0)["what_if_span_us"] == 130.0);
    CHECK(rank_row(j, 1)["what_if_span_us"] == 110.0);
    CHECK(rank_row(j, "all")["what_if_span_us"] == 130.0);
  }
  // Communication twice as fast: the transfer takes 25 after rank 1 arrives at 125 (ends 150).
  // Rank 0: B ends at 155, so C runs [155, 175]: span 170. Rank 1 is bound by its own GEMMs: A, B,
  // C end at 195 as measured (190).
  {
    const nlohmann::json j = replay_json({kPair[0], kPair[1], "--what-if", "comm.speed=2"});
    CHECK(rank_row(j, 0)["what_if_span_us"] == 170.0);
    CHECK(rank_row(j, 1)["what_if_span_us"] == 190.0);
  }
  // Both at once multiply per kernel: kind.collective.speed=2 is comm.speed=2 for NCCL kernels.
  {
    const nlohmann::json a = replay_json({kPair[0], kPair[1], "--what-if", "kind.collective.speed=2"});
    const nlohmann::json b = replay_json({kPair[0], kPair[1], "--what-if", "comm.speed=2"});
    CHECK(a["ranks"] == b["ranks"]);
  }
}

TEST_CASE("trace --replay --hardware prices the collective's transfer and replays its wait", "[trace][replay]") {
  // The fixture names no GEMM shape (no aten::mm op): only the all-reduce (1048576 bf16 = 2 MiB over
  // 2 GPUs) is priced, on both ranks. With the model's transfer T: it ends at 125 + T on both ranks
  // (rank 1 arrives last); rank 0's C starts at max(155, 125 + T) and ends 20 later, rank 1's C
  // ends at 195 as measured (its GEMMs and C do not wait for the all-reduce in the graph).
  const overlap::HardwareProfile hw = overlap::load_profile("h100-sxm-8x-nvswitch", overlap::default_hardware_dir());
  const std::int64_t t_ns =
      overlap::collective_time_ps(hw, overlap::CollectivePrimitive::all_reduce, 2 * 1048576, 2, overlap::sim::collective_link_class(hw, 2)) / 1000;
  const nlohmann::json j = replay_json({kPair[0], kPair[1], "--hardware", "h100-sxm-8x-nvswitch"});
  CHECK(j["hardware"]["kernels_priced"] == 2);
  const double rank0_end_us = std::max(155.0, 125.0 + static_cast<double>(t_ns) / 1000.0) + 20.0;
  CHECK(rank_row(j, 0)["predicted_span_us"].get<double>() == Approx(rank0_end_us - 5.0).epsilon(1e-12));
  CHECK(rank_row(j, 1)["predicted_span_us"].get<double>() == Approx(std::max(190.0, 120.0 + static_cast<double>(t_ns) / 1000.0)));
  CHECK(rank_row(j, "all").contains("predicted_error_pct"));
}

TEST_CASE("trace --replay-trace writes the replay beside the original", "[trace][replay]") {
  const fs::path out = scratch("replay_trace.json");
  fs::remove(out);
  const CliResult r = cli({"trace", kPair[0], kPair[1], "--replay", "--replay-trace", out.string()});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const nlohmann::json j = nlohmann::json::parse(slurp(out.string()));
  int measured = 0, replayed = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    (e["pid"].get<int>() % 2 == 0 ? measured : replayed) += 1;
  }
  // Every kernel once as measured and once as replayed.
  CHECK(measured == 8);
  CHECK(replayed == 8);
}

TEST_CASE("trace --replay refuses bad what-ifs and flags, naming the flag, and writes nothing", "[trace][replay]") {
  const fs::path out = scratch("refused.txt"), chrome = scratch("refused.json");
  const std::vector<std::vector<std::string>> bad = {
      {"--what-if", "comm.speed=2"},  // without --replay
      {"--replay-trace", chrome.string()},  // without --replay
      {"--replay", "--what-if", "comm.speed=0"},
      {"--replay", "--what-if", "comm.speed=-1"},
      {"--replay", "--what-if", "comm.speed=nan"},
      {"--replay", "--what-if", "comm.speed=inf"},
      {"--replay", "--what-if", "comm.speed=fast"},
      {"--replay", "--what-if", "comm.speed="},
      {"--replay", "--what-if", "kind.tensor.speed=2"},
      {"--replay", "--what-if", "link.bandwidth=2"},
      {"--replay", "--what-if", "comm.speed"},
      {"--replay", "--what-if", "kind.gemm.speed=1e9"},
      {"--replay", "--kernels"},
      {"--replay", "--what-if", "link.nvlink.gbps=900"},  // a link what-if needs --hardware
      {"--replay", "--hardware", "h100-sxm-8x-nvswitch", "--what-if", "link.infiniband.gbps=2"},
      {"--replay", "--hardware", "h100-sxm-8x-nvswitch", "--what-if", "link.nvlink.gbps=0"},
  };
  for (const auto& extra : bad) {
    fs::remove(out);
    fs::remove(chrome);
    std::vector<std::string> args = {"trace", kPair[0], kPair[1], "-o", out.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    if (extra.front() != "--replay-trace") args.insert(args.end(), {"--replay-trace", chrome.string()});
    const CliResult r = cli(args);
    INFO(r.err);
    CHECK(r.rc == 2);
    // The flag refused: the one after --replay, or the first.
    CHECK(r.err.find(extra.size() > 1 && extra[0] == "--replay" ? extra[extra.size() == 5 ? 3 : 1] : extra[0]) != std::string::npos);
    CHECK_FALSE(fs::exists(out));
    CHECK_FALSE(fs::exists(chrome));
  }
}

TEST_CASE("parse_what_if reads a kind's speed and the communication speed", "[trace][replay]") {
  const traces::WhatIf g = traces::parse_what_if("kind.gemm.speed=1.5");
  CHECK_FALSE(g.comm);
  CHECK(g.kind == traces::KernelKind::gemm);
  CHECK(g.speed == 1.5);
  const traces::WhatIf c = traces::parse_what_if("comm.speed=2");
  CHECK(c.comm);
  CHECK(c.speed == 2.0);
  CHECK_THROWS_AS(traces::parse_what_if("kind..speed=2"), std::invalid_argument);
}
