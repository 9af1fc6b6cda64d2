// `overlap-sim sweep` (sim/sweep.hpp, tools/cmd_sweep.cpp): the grid, row counts, determinism across
// thread counts, --resume, checkpoints, and bad points reported all at once (exit 2).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cost_model/input_error.hpp"
#include "sim/report.hpp"
#include "sim/sweep.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"
#include "tools/cli.hpp"

namespace fs = std::filesystem;
using namespace overlap;

namespace {

using namespace overlap::test;  // cli, CliResult, TempDir, read_text, write_text

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Small and quick: one GEMM + reduce-scatter on 4 H100s, three schemes, a 2 x 3 grid (line 9-11).
const std::string kScenario =
    "hardware: h100-sxm-8x-nvswitch\n"                                           // 1
    "workload:\n"                                                                // 2
    "  kind: gemm_collective\n"                                                  // 3
    "  tp: 4\n"                                                                  // 4
    "  m: 1024\n"                                                                // 5
    "  n: 2048\n"                                                                // 6
    "  k: 1024\n"                                                                // 7
    "  primitive: reduce_scatter\n"                                              // 8
    "schemes: [no_overlap, {name: data_slicing, params: {chunks: 2}}, flashoverlap]\n"  // 9
    "sweep:\n"                                                                   // 10
    "  workload.k: [512, 1024]\n"                                                // 11
    "  hardware.fabric.links.nvlink.bandwidth_gbps: [200, 450, 900]\n";          // 12

constexpr std::size_t kPoints = 6, kSchemes = 3;

}  // namespace

TEST_CASE("sweep flags split values at top-level commas and merge with the scenario's axes", "[sweep]") {
  const sim::SweepAxis a = sim::parse_sweep_flag("params.groups=[1,2],[2, 2],auto");
  CHECK(a.keys == std::vector<std::string>{"params.groups"});
  REQUIRE(a.values.size() == 3);
  CHECK(a.values[0][0] == "[1,2]");
  CHECK(a.values[1][0] == "[2, 2]");
  CHECK(a.values[2][0] == "auto");
  CHECK_THROWS_AS(sim::parse_sweep_flag("workload.k"), InputError);
  CHECK_THROWS_AS(sim::parse_sweep_flag("workload.k=1,,2"), InputError);
  CHECK_THROWS_AS(sim::parse_sweep_flag("sweep.x=1"), InputError);

  sim::SweepAxis k{{"workload.k"}, {{"1"}, {"2"}}, 3};
  sim::SweepAxis m{{"workload.m"}, {{"8"}}, 4};
  const auto merged = sim::merge_sweep_axes({k, m}, {sim::parse_sweep_flag("workload.k=5,6,7"),
                                                     sim::parse_sweep_flag("workload.n=9")});
  REQUIRE(merged.size() == 3);
  CHECK(merged[0].values.size() == 3);  // replaced in place
  CHECK(merged[1].keys == std::vector<std::string>{"workload.m"});
  CHECK(merged[2].keys == std::vector<std::string>{"workload.n"});
  const sim::SweepGrid g = sim::make_sweep_grid(merged);
  CHECK(g.columns == std::vector<std::string>{"workload.k", "workload.m", "workload.n"});
  REQUIRE(g.points.size() == 3);
  CHECK(g.points[2].sets == std::vector<std::string>{"workload.k=7", "workload.m=8", "workload.n=9"});
}

TEST_CASE("sweep: one row per (point, scheme), swept values first, the same bytes on 1 and 2 threads", "[sweep][cli]") {
  TempDir dir("sweep-test");
  const std::string scen = dir.file("s.yaml");
  write_text(scen, kScenario);
  const CliResult one = cli({"sweep", scen, "-j", "1"});
  INFO(one.err);
  REQUIRE(one.rc == 0);
  const auto rows = lines(one.out);
  REQUIRE(rows.size() == 1 + kPoints * kSchemes);
  std::vector<std::string> header = {"workload.k", "hardware.fabric.links.nvlink.bandwidth_gbps"};
  for (const auto& c : sim::csv_columns()) header.push_back(c);
  header.push_back("best");  // the point's best schemes, ties named (sim/sweep.hpp kSweepBestColumn)
  CHECK(rows[0] == sim::csv_line(header));
  // Grid order: the last axis fastest; schemes in the scenario's order within a point.
  CHECK(rows[1].rfind("512,200,s,h100-sxm-8x-nvswitch,no_overlap,", 0) == 0);
  CHECK(rows[2].rfind("512,200,s,h100-sxm-8x-nvswitch,data_slicing,", 0) == 0);
  CHECK(rows[3].rfind("512,200,s,h100-sxm-8x-nvswitch,flashoverlap,", 0) == 0);
  CHECK(rows[4].rfind("512,450,", 0) == 0);
  CHECK(rows.back().rfind("1024,900,s,h100-sxm-8x-nvswitch,flashoverlap,", 0) == 0);

  const CliResult two = cli({"sweep", scen, "-j", "2"});
  REQUIRE(two.rc == 0);
  CHECK(two.out == one.out);

  // A point's rows are what `run` reports for that point's scenario.
  const CliResult run = cli({"run", scen, "--format", "csv", "--set", "workload.k=1024", "--set",
                             "hardware.fabric.links.nvlink.bandwidth_gbps=450"});
  REQUIRE(run.rc == 0);
  const auto run_rows = lines(run.out);
  REQUIRE(run_rows.size() == 1 + kSchemes);
  // run names its scenario with the --set it was given; the sweep's rows carry them as columns.
  const std::string label = "s (workload.k=1024 hardware.fabric.links.nvlink.bandwidth_gbps=450),";
  // The sweep adds the point's best: the scheme run's JSON names best (no two tie here).
  const CliResult run_json = cli({"run", scen, "--format", "json", "--set", "workload.k=1024", "--set",
                                  "hardware.fabric.links.nvlink.bandwidth_gbps=450"});
  REQUIRE(run_json.rc == 0);
  const auto best = nlohmann::json::parse(run_json.out)["best"];
  REQUIRE(best["tied"].size() == 1);
  for (std::size_t s = 0; s < kSchemes; ++s) {
    REQUIRE(run_rows[1 + s].rfind(label, 0) == 0);
    CHECK(rows[1 + (3 + 1) * kSchemes + s] ==
          "1024,450,s," + run_rows[1 + s].substr(label.size()) + "," + best["label"].get<std::string>());
  }

  // --sweep adds an axis: 2 x 3 x 2 points.
  const CliResult more = cli({"sweep", scen, "--sweep", "workload.m=1024,2048", "-j", "2"});
  REQUIRE(more.rc == 0);
  CHECK(lines(more.out).size() == 1 + kPoints * 2 * kSchemes);
}

TEST_CASE("sweep --format json: the same rows, typed point values", "[sweep][cli]") {
  TempDir dir("sweep-test");
  const std::string scen = dir.file("s.yaml");
  write_text(scen, kScenario);
  const CliResult r = cli({"sweep", scen, "--format", "json", "-o", dir.file("out.json")});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(read_text(dir.file("out.json")));
  CHECK(j["swept"] == nlohmann::json({"workload.k", "hardware.fabric.links.nvlink.bandwidth_gbps"}));
  CHECK(j["points"] == kPoints);
  REQUIRE(j["rows"].size() == kPoints * kSchemes);
  CHECK(j["rows"][0]["point"]["workload.k"] == 512);
  CHECK(j["rows"][0]["point"]["hardware.fabric.links.nvlink.bandwidth_gbps"] == 200);
  CHECK(j["rows"][0]["workload"]["k"] == 512);
  for (const auto& row : j["rows"])
    CHECK(row["exposed_comm_ps"].get<std::int64_t>() == row["latency_ps"].get<std::int64_t>() - row["compute_only_ps"].get<std::int64_t>());
  // The checkpoint is gone once the output is written.
  CHECK(dir.entries() == std::vector<std::string>{"out.json", "s.yaml"});
}

TEST_CASE("sweep --resume skips the points already in the output file", "[sweep][cli]") {
  TempDir dir("sweep-test");
  const std::string scen = dir.file("s.yaml");
  write_text(scen, kScenario);
  const std::string out = dir.file("out.csv");
  REQUIRE(cli({"sweep", scen, "-o", out}).rc == 0);
  const std::string full = read_text(out);
  auto rows = lines(full);

  // Keep the header and the first two points, and mark them: a resumed run that recomputed them
  // would write the real numbers back.
  std::string kept = rows[0] + "\n";
  for (std::size_t i = 1; i <= 2 * kSchemes; ++i) {
    std::string row = rows[i];
    const auto at = row.find(",s,");
    REQUIRE(at != std::string::npos);
    kept += row.replace(at, 3, ",MARK,") + "\n";
  }
  // A third point cut short (one of its three rows): not done, so it runs again.
  kept += rows[1 + 2 * kSchemes] + "\n";
  write_text(out, kept);
  const CliResult r = cli({"sweep", scen, "-o", out, "--resume", "--progress"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.err, Catch::Contains("2 done before, skipped"));
  CHECK_THAT(r.err, Catch::Contains("4 points in"));
  const auto resumed = lines(read_text(out));
  REQUIRE(resumed.size() == rows.size());
  for (std::size_t i = 1; i < resumed.size(); ++i) {
    INFO("row " << i);
    if (i <= 2 * kSchemes) CHECK_THAT(resumed[i], Catch::Contains(",MARK,"));
    else CHECK(resumed[i] == rows[i]);
  }

  // Checkpoint lines count as done too; a line cut by a crash does not.
  write_text(out, rows[0] + "\n");
  std::string ck;
  for (std::size_t p = 0; p < 3; ++p) {
    std::string text;
    for (std::size_t s = 0; s < kSchemes; ++s) text += rows[1 + p * kSchemes + s] + "\n";
    std::string values = rows[1 + p * kSchemes].substr(0, rows[1 + p * kSchemes].find(",s,"));
    const auto comma = values.find(',');
    ck += sim::sweep_checkpoint_line(sim::SweepFormat::csv,
                                     sim::sweep_point_key({values.substr(0, comma), values.substr(comma + 1)}), text);
  }
  ck += ck.substr(0, 40);  // a cut line
  write_text(out + ".partial", ck);
  const CliResult r2 = cli({"sweep", scen, "-o", out, "--resume", "--progress"});
  REQUIRE(r2.rc == 0);
  CHECK_THAT(r2.err, Catch::Contains("3 done before, skipped"));
  CHECK(read_text(out) == full);
  CHECK(!fs::exists(out + ".partial"));

  // --resume needs the file to resume.
  CHECK(cli({"sweep", scen, "--resume"}).rc == 2);
  // A file of another sweep is refused, not merged.
  write_text(out, "a,b,c\n1,2,3\n");
  const CliResult other = cli({"sweep", scen, "-o", out, "--resume"});
  CHECK(other.rc == 2);
  CHECK_THAT(other.err, Catch::Contains(out));
}

TEST_CASE("sweep over hardware: the swept column is headed swept:hardware, beside the profile name", "[sweep][cli]") {
  TempDir dir("sweep-test");
  const std::string scen = dir.file("s.yaml");
  write_text(scen, kScenario);
  const std::string out = dir.file("hw.csv");
  const CliResult r = cli({"sweep", scen, "--sweep", "hardware=h100-sxm-8x-nvswitch,a800-8x-nvlink", "-o", out});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const auto rows = lines(read_text(out));
  REQUIRE(rows.size() == 1 + 2 * kPoints * kSchemes);
  std::vector<std::string> header = {"workload.k", "hardware.fabric.links.nvlink.bandwidth_gbps", "swept:hardware"};
  for (const auto& c : sim::csv_columns()) header.push_back(c);
  header.push_back("best");
  CHECK(rows[0] == sim::csv_line(header));
  std::vector<std::string> sorted = header;
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());  // every column named once
  // The swept value, then the report's scenario and the profile's own name.
  CHECK(rows[1].rfind("512,200,h100-sxm-8x-nvswitch,s,h100-sxm-8x-nvswitch,no_overlap,", 0) == 0);
  CHECK(rows[1 + kSchemes].rfind("512,200,a800-8x-nvlink,s,", 0) == 0);
  // --resume reads its own header back.
  const CliResult again = cli({"sweep", scen, "--sweep", "hardware=h100-sxm-8x-nvswitch,a800-8x-nvlink", "-o", out,
                               "--resume", "--progress"});
  INFO(again.err);
  REQUIRE(again.rc == 0);
  CHECK_THAT(again.err, Catch::Contains("12 done before, skipped"));
}

TEST_CASE("sweep checks every point first and reports every bad key and value (exit 2)", "[sweep][cli]") {
  TempDir dir("sweep-test");
  const std::string scen = dir.file("s.yaml");
  write_text(scen, kScenario);
  const std::string out = dir.file("out.csv");
  // m must be divisible by tp = 4 for a reduce-scatter: 1022 and 1023 are bad at every k and bandwidth.
  const CliResult bad = cli({"sweep", scen, "--sweep", "workload.m=1022,1024,1023", "-o", out});
  CHECK(bad.rc == 2);
  CHECK_THAT(bad.err, Catch::Contains("12 of 18 sweep points"));
  CHECK_THAT(bad.err, Catch::Contains("workload.m=1022") && Catch::Contains("workload.m=1023"));
  CHECK_THAT(bad.err, Catch::Contains("workload.m: 1022 is not divisible"));
  CHECK(bad.err.find("workload.m=1024:") == std::string::npos);
  CHECK(!fs::exists(out));  // nothing ran, nothing written
  CHECK(dir.entries() == std::vector<std::string>{"s.yaml"});

  // A key the scenario does not have.
  const CliResult key = cli({"sweep", scen, "--sweep", "workload.mm=1024"});
  CHECK(key.rc == 2);
  CHECK_THAT(key.err, Catch::Contains("workload.mm"));
  // A bad value of a hardware key, named with its value.
  const CliResult hw = cli({"sweep", scen, "--sweep", "hardware.fabric.links.nvlink.bandwidth_gbps=-5"});
  CHECK(hw.rc == 2);
  CHECK_THAT(hw.err, Catch::Contains("bandwidth_gbps=-5"));
  // Bad sweep flags and formats.
  CHECK(cli({"sweep", scen, "--sweep", "workload.k"}).rc == 2);
  CHECK(cli({"sweep", scen, "--format", "xml"}).rc == 2);
  CHECK(cli({"sweep", scen, "-j", "-1"}).rc == 2);
  // No sweep at all.
  write_text(scen, kScenario.substr(0, kScenario.find("sweep:")));
  const CliResult none = cli({"sweep", scen});
  CHECK(none.rc == 2);
  CHECK_THAT(none.err, Catch::Contains("--sweep"));
}

TEST_CASE("run does not run the sweep, but refuses a sweep key or value that sweep refuses", "[sweep][cli]") {
  // The default scenario sweeps hardware.fabric.links.nvlink.bandwidth_gbps; on the A800 profile the
  // run itself is valid.
  const CliResult r = cli({"run", "--set", "hardware=a800-8x-nvlink", "--scheme", "no_overlap", "--format", "json"});
  INFO(r.err);
  CHECK(r.rc == 0);
  TempDir dir("sweep-test");
  const std::string scen = dir.file("s.yaml");
  write_text(scen, kScenario + "  workload.n: [2048, 2047]\n");  // 2047 fine for n; and a bad key:
  write_text(scen, kScenario + "  workload.nn: [1]\n");
  CHECK(cli({"run", scen, "--scheme", "no_overlap"}).rc == 2);  // both read the block alike
  CHECK(cli({"sweep", scen}).rc == 2);
}

TEST_CASE("sweep --plot needs one or two swept keys", "[sweep][cli][plot]") {
  TempDir dir("sweep-test");
  const std::string scen = dir.file("s.yaml");
  write_text(scen, kScenario);
  const CliResult three = cli({"sweep", scen, "--sweep", "workload.m=1024,2048", "--plot", dir.file("p.png")});
  if (std::system("python3 -c 'import matplotlib' > /dev/null 2>&1") != 0) {
    CHECK(three.rc == 2);
    WARN("python3 with matplotlib not available: the sweep plot is not drawn");
    return;
  }
  CHECK(three.rc == 2);
  CHECK_THAT(three.err, Catch::Contains("--plot"));
  const CliResult r = cli({"sweep", scen, "-o", dir.file("out.csv"), "--plot", dir.file("p.png")});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const std::string png = read_text(dir.file("p.png"));
  REQUIRE(png.size() > 8);
  CHECK(png.substr(1, 3) == "PNG");
  CHECK(dir.entries() == std::vector<std::string>{"out.csv", "p.png", "s.yaml"});
}
