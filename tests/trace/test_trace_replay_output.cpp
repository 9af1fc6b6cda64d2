// `trace --replay`'s outputs and its link what-if on the two-rank replay fixture
// (tests/data/trace/replay_rank*.json, laid out in make_fixtures.py's replay()): the per-kind table,
// one CSV row per kernel, and link.<class>.gbps against the cost model's transfer. The what-if's
// times are worked out by hand in test_trace_replay.cpp ("what-ifs on the two-rank replay fixture").
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cost_model/collective_model.hpp"
#include "cost_model/profile_loader.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/trace/replay_test_support.hpp"

namespace {

using overlap::test::cli;
using overlap::test::CliResult;
using overlap::test::replay::kData;
using overlap::test::replay::rank_row;
using overlap::test::replay::replay_json;

const std::vector<std::string> kPair = {kData + "replay_rank0.json", kData + "replay_rank1.json"};

// A row's fields: five before the kernel's name and `after` after it have no commas (numbers and
// kind names), so the name is what lies between them, unquoted (RFC 4180: quotes doubled inside).
std::vector<std::string> fields(const std::string& line, std::size_t after) {
  std::vector<std::string> out;
  std::size_t from = 0;
  for (int i = 0; i < 5; ++i) {
    const std::size_t comma = line.find(',', from);
    out.push_back(line.substr(from, comma - from));
    from = comma + 1;
  }
  std::size_t to = line.size();
  std::vector<std::string> tail;
  for (std::size_t i = 0; i < after; ++i) {
    const std::size_t comma = line.rfind(',', to - 1);
    tail.insert(tail.begin(), line.substr(comma + 1, to - comma - 1));
    to = comma;
  }
  std::string name = line.substr(from, to - from);
  if (name.size() >= 2 && name.front() == '"' && name.back() == '"') {
    std::string plain;
    for (std::size_t i = 1; i + 1 < name.size(); ++i) {
      plain += name[i];
      if (name[i] == '"') ++i;  // a doubled quote
    }
    name = plain;
  }
  out.push_back(name);
  out.insert(out.end(), tail.begin(), tail.end());
  return out;
}

}  // namespace

TEST_CASE("trace --replay tables kernel time per kind, measured and after a what-if", "[trace][replay]") {
  const nlohmann::json j = replay_json({kPair[0], kPair[1], "--what-if", "kind.gemm.speed=2"});
  std::map<std::string, nlohmann::json> kinds;
  for (const auto& row : j["kinds"]) kinds[row["kind"].get<std::string>()] = row;
  // GEMMs: A (100 and 120) and B (50 each); halved. The all-reduce's members run from their
  // arrival to the transfer's end: measured [105, 175] and [125, 175]; with GEMMs halved [55, 115]
  // and [65, 115] (its wait shrinks with rank 0's GEMM gap). The fill kernels: 20 each, unchanged.
  REQUIRE(kinds.count("gemm"));
  CHECK(kinds["gemm"]["kernels"] == 4);
  CHECK(kinds["gemm"]["measured_busy_us"] == 320.0);
  CHECK(kinds["gemm"]["what_if_busy_us"] == 160.0);
  REQUIRE(kinds.count("collective"));
  CHECK(kinds["collective"]["measured_busy_us"] == 120.0);
  CHECK(kinds["collective"]["what_if_busy_us"] == 110.0);
  std::int64_t total = 0;
  for (const auto& [kind, row] : kinds) total += row["kernels"].get<std::int64_t>();
  CHECK(total == 8);
  // The table says the same.
  const CliResult t = cli({"trace", kPair[0], kPair[1], "--replay", "--what-if", "kind.gemm.speed=2"});
  REQUIRE(t.rc == 0);
  CHECK(t.out.find("Kernel time per kind") != std::string::npos);
  CHECK(t.out.find("CPU: 8 call(s) on 2 launching thread(s)") != std::string::npos);
}

TEST_CASE("trace --replay --format csv writes one row per kernel: measured, replayed and what-if", "[trace][replay]") {
  const CliResult r = cli({"trace", kPair[0], kPair[1], "--replay", "--what-if", "kind.gemm.speed=2", "--format", "csv"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  std::istringstream in(r.out);
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = fields(line, 6);
  CHECK(header == std::vector<std::string>{"rank", "device", "stream", "kind", "class", "name", "measured_start_us",
                                           "measured_dur_us", "replayed_start_us", "replayed_dur_us", "what_if_start_us",
                                           "what_if_dur_us"});
  int rows = 0, quoted_names = 0, names_with_commas = 0;
  while (std::getline(in, line)) {
    const std::vector<std::string> f = fields(line, 6);
    REQUIRE(f.size() == header.size());
    ++rows;
    quoted_names += line.find('"') != std::string::npos ? 1 : 0;
    names_with_commas += f[5].find(", ") != std::string::npos ? 1 : 0;
    // The identity: every kernel where it was measured.
    CHECK(f[6] == f[8]);
    CHECK(f[7] == f[9]);
    if (f[3] == "gemm") CHECK(std::stod(f[11]) == std::stod(f[7]) / 2);
    // Rank 0's fill kernel C waits for the all-reduce: [115, 135] with GEMMs halved.
    if (f[0] == "0" && f[3] == "memory_bound") {
      CHECK(f[10] == "115.000");
      CHECK(f[11] == "20.000");
    }
  }
  CHECK(rows == 8);
  // The fill kernel's signature holds commas: quoted, on both ranks.
  CHECK(quoted_names == 2);
  CHECK(names_with_commas == 2);
}

TEST_CASE("link.<class>.gbps scales the model's transfer by the profile's bandwidth over the new one", "[trace][replay]") {
  const overlap::HardwareProfile hw = overlap::load_profile("h100-sxm-8x-nvswitch", overlap::default_hardware_dir());
  REQUIRE(overlap::sim::collective_link_class(hw, 2) == "nvlink");
  const double gbps = hw.fabric.links.at("nvlink").bandwidth_gbps;
  const std::int64_t t_ns =
      overlap::collective_time_ps(hw, overlap::CollectivePrimitive::all_reduce, 2 * 1048576, 2, "nvlink") / 1000;
  // Twice the bandwidth: the all-reduce's transfer takes half the model's time (rounded to the ns);
  // rank 0's C follows max(B's end 155, the transfer's end 125 + T / 2), 20 us, from the start at 5.
  const nlohmann::json j = replay_json({kPair[0], kPair[1], "--hardware", "h100-sxm-8x-nvswitch", "--what-if",
                                        "link.nvlink.gbps=" + std::to_string(2 * gbps)});
  const double half_us = static_cast<double>(std::llround(static_cast<double>(t_ns) / 2)) / 1000.0;
  CHECK(rank_row(j, 0)["predicted_span_us"].get<double>() == Approx(std::max(155.0, 125.0 + half_us) + 20.0 - 5.0).epsilon(1e-12));
  CHECK(j["what_if_comm_kernels_without_link"] == 0);
  // The same bandwidth as the profile's changes nothing against the prediction.
  const nlohmann::json same = replay_json({kPair[0], kPair[1], "--hardware", "h100-sxm-8x-nvswitch", "--what-if",
                                           "link.nvlink.gbps=" + std::to_string(gbps)});
  const nlohmann::json plain = replay_json({kPair[0], kPair[1], "--hardware", "h100-sxm-8x-nvswitch"});
  CHECK(same["ranks"] == plain["ranks"]);
}
