// Ties for the best scheme are named, never broken silently (sim/report.hpp best_results): `run`'s
// best: line and JSON "best", and `sweep`'s best column. A tie is equal latency in integer picoseconds.
// te_userbuffers' ring_exchange is built by async TP's Looped CollectiveEinsum builder with the same
// copy-engine pulls and two streams (sim/schemes/te_userbuffers.cpp, async_tp.cpp), so with their
// defaults the two give the same task graph and the same latency to the picosecond; TE's
// set_sm_margin (the GEMMs on sm_count - num_sm SMs) is one knob that separates them.
#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "sim/metrics.hpp"
#include "sim/report.hpp"
#include "sim/sweep.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"

using namespace overlap;
using namespace overlap::test;  // cli, CliResult, TempDir, read_text, write_text

namespace {

sim::SchemeResult row(const std::string& scheme, Ps latency_ps, Ps baseline_ps, nlohmann::json params = nlohmann::json::object()) {
  sim::SchemeResult r;
  r.scheme = scheme;
  r.params = std::move(params);
  r.latency_ps = latency_ps;
  r.speedup_vs_no_overlap = static_cast<double>(baseline_ps) / static_cast<double>(latency_ps);
  return r;
}

// The small GEMM + reduce-scatter scenario (4 H100s) with no_overlap, async_tp and te_userbuffers.
std::string tie_scenario(const TempDir& dir, const std::string& te = "te_userbuffers") {
  const std::string path = dir.file("tie.yaml");
  write_text(path, gemm_collective_scenario("reduce_scatter") + "  - no_overlap\n  - async_tp\n  - " + te + "\n");
  return path;
}

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

}  // namespace

TEST_CASE("best_results: rows of equal integer latency tie, one picosecond apart they do not", "[ties][report]") {
  const Ps base = 3'000'000;
  // 2'000'000 and 2'000'001 ps give speedups 1.5 and 1.49999925: equal at the table's 3 decimals, yet
  // no tie, because a tie is decided on the integer latency, not on a printed or divided figure.
  const std::vector<sim::SchemeResult> apart = {row("no_overlap", base, base), row("async_tp", 2'000'001, base),
                                                row("te_userbuffers", 2'000'000, base)};
  REQUIRE(sim::best_results(apart).size() == 1);
  CHECK(sim::best_results(apart).front()->scheme == "te_userbuffers");
  CHECK(sim::best_label(apart) == "te_userbuffers");

  const std::vector<sim::SchemeResult> tied = {row("no_overlap", base, base), row("async_tp", 2'000'000, base),
                                               row("data_slicing", 2'500'000, base),
                                               row("te_userbuffers", 2'000'000, base)};
  const auto best = sim::best_results(tied);
  REQUIRE(best.size() == 2);
  CHECK(best[0]->scheme == "async_tp");  // the earlier row first, as best_result picks it
  CHECK(best[1]->scheme == "te_userbuffers");
  CHECK(sim::best_label(tied) == "async_tp = te_userbuffers");
  // A failed row never ties, and no row with a speedup means no best.
  std::vector<sim::SchemeResult> failed = tied;
  failed[3].error = "refused";
  CHECK(sim::best_label(failed) == "async_tp");
  CHECK(sim::best_results({}).empty());
  CHECK(sim::best_label({}).empty());
}

TEST_CASE("run names async_tp = te_userbuffers when ring_exchange times as async TP", "[ties][cli]") {
  TempDir dir("ties");
  const std::string scen = tie_scenario(dir);
  const CliResult j = cli({"run", scen, "--format", "json"});
  INFO(j.err);
  REQUIRE(j.rc == 0);
  const auto doc = nlohmann::json::parse(j.out);
  REQUIRE(doc["results"].size() == 3);
  // The same graph from the same builder: the same latency to the picosecond.
  CHECK(doc["results"][1]["scheme"] == "async_tp");
  CHECK(doc["results"][2]["scheme"] == "te_userbuffers");
  REQUIRE(doc["results"][1]["latency_ps"] == doc["results"][2]["latency_ps"]);
  CHECK(doc["results"][1]["latency_ps"].get<Ps>() < doc["results"][0]["latency_ps"].get<Ps>());
  // JSON: the first as before (its readers keep working), and every tied scheme listed.
  CHECK(doc["best"]["scheme"] == "async_tp");
  REQUIRE(doc["best"]["tied"].size() == 2);
  CHECK(doc["best"]["tied"][0]["scheme"] == "async_tp");
  CHECK(doc["best"]["tied"][1]["scheme"] == "te_userbuffers");
  CHECK(doc["best"]["label"] == "async_tp = te_userbuffers");

  const CliResult t = cli({"run", scen});
  REQUIRE(t.rc == 0);
  CHECK_THAT(t.out, Catch::Contains("best: async_tp = te_userbuffers, "));

  // set_sm_margin gives TE's GEMMs sm_count - num_sm SMs: no longer the same graph, no tie named.
  const std::string margin = tie_scenario(dir, "{name: te_userbuffers, params: {set_sm_margin: true}}");
  const CliResult m = cli({"run", margin, "--format", "json"});
  INFO(m.err);
  REQUIRE(m.rc == 0);
  const auto md = nlohmann::json::parse(m.out);
  CHECK(md["results"][1]["latency_ps"] != md["results"][2]["latency_ps"]);
  CHECK(md["best"]["tied"].size() == 1);
  CHECK(md["best"]["label"] == md["best"]["scheme"]);
}

TEST_CASE("sweep writes each point's best schemes, ties named, as its last column and a JSON key", "[ties][sweep][cli]") {
  TempDir dir("ties");
  const std::string scen = tie_scenario(dir);
  const CliResult r = cli({"sweep", scen, "--sweep", "workload.k=1024,2048", "-j", "1"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  std::vector<std::string> lines;
  for (std::size_t at = 0, nl; (nl = r.out.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(r.out.substr(at, nl - at));
  REQUIRE(lines.size() == 1 + 2 * 3);
  const auto header = csv_fields(lines[0]);
  CHECK(header.back() == "best");
  const auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto f = csv_fields(lines[i]);
    REQUIRE(f.size() == header.size());
    // The label is the point's: every row carries the same, whatever its own scheme.
    CHECK(f[col("best")] == "async_tp = te_userbuffers");
  }
  // The latencies behind the label are equal in the JSON's exact picoseconds.
  const CliResult j = cli({"sweep", scen, "--sweep", "workload.k=1024,2048", "--format", "json", "-j", "1"});
  REQUIRE(j.rc == 0);
  const auto doc = nlohmann::json::parse(j.out);
  REQUIRE(doc["rows"].size() == 6);
  for (std::size_t p = 0; p < 2; ++p) {
    const auto& rows = doc["rows"];
    CHECK(rows[3 * p + 1]["latency_ps"] == rows[3 * p + 2]["latency_ps"]);
    for (std::size_t s = 0; s < 3; ++s)
      CHECK(rows[3 * p + s]["best"] == nlohmann::json::array({"async_tp", "te_userbuffers"}));
  }
  // Without a tie the column names one scheme.
  const CliResult one = cli({"sweep", tie_scenario(dir, "{name: te_userbuffers, params: {set_sm_margin: true}}"),
                             "--sweep", "workload.k=2048", "--format", "json"});
  REQUIRE(one.rc == 0);
  const auto od = nlohmann::json::parse(one.out);
  CHECK(od["rows"][0]["best"].size() == 1);
}
