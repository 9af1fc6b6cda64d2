// The overlap-sim CLI, run in-process through run_cli (tools/cli.hpp): exit codes, the documented
// JSON / CSV / table outputs, the Chrome trace, atomic output files, the default scenario.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "sim/report.hpp"
#include "sim/schemes/scheme.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/corpus_sample.hpp"
#include "tests/support/temp_file.hpp"
#include "tools/cli.hpp"

namespace fs = std::filesystem;

namespace {

using namespace overlap::test;  // cli, CliResult, TempDir, read_text, write_text

// A small, fast scenario: one GEMM + reduce-scatter on 4 of the H100s.
// Its lines are gemm_collective_scenario's one below theirs (line 1 is the comment).
const std::string kScenario = "# test scenario\n" + gemm_collective_scenario("reduce_scatter") +
                              "  - no_overlap\n"                                 // 11
                              "  - {name: data_slicing, params: {chunks: 2}}\n"; // 12

// Sets an environment variable for one scope and restores it.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, const std::string& value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old) ::setenv(name.c_str(), old->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

}  // namespace

TEST_CASE("usage errors exit 2 with a message on stderr", "[cli]") {
  TempDir dir("cli-test");
  const std::string scen = dir.file("s.yaml");
  write_text(scen, kScenario);

  const CliResult none = cli({});
  CHECK(none.rc == 2);
  CHECK(!none.err.empty());

  const CliResult bogus = cli_unchecked({scen, "--bogus"});
  CHECK(bogus.rc == 2);
  CHECK_THAT(bogus.err, Catch::Contains("--bogus"));

  const CliResult format = cli_unchecked({scen, "--format", "xml"});
  CHECK(format.rc == 2);
  CHECK_THAT(format.err, Catch::Contains("xml"));

  CHECK(cli_unchecked({scen, "--fidelity", "exact"}).rc == 2);
  CHECK(cli({"frobnicate"}).rc == 2);

  const CliResult missing = cli_unchecked({dir.file("nope.yaml")});
  CHECK(missing.rc == 2);
  CHECK_THAT(missing.err, Catch::Contains("nope.yaml"));

  const CliResult scheme = cli_unchecked({scen, "--scheme", "warp_drive"});
  CHECK(scheme.rc == 2);
  CHECK_THAT(scheme.err, Catch::Contains("warp_drive"));
  CHECK(cli_unchecked({scen, "--scheme", "dtp"}).rc == 2);  // does not apply to this workload

  const CliResult help = cli({"--help"});
  CHECK(help.rc == 0);
  CHECK_THAT(help.out, Catch::Contains("run"));
  CHECK_THAT(help.out, Catch::Contains("schemes"));
}

TEST_CASE("scenario input errors exit 2 naming the file, line and key", "[cli]") {
  TempDir dir("cli-test");
  const std::string scen = dir.file("s.yaml");
  write_text(scen, kScenario);

  const CliResult set = cli_unchecked({scen, "--set", "workload.m=0"});
  CHECK(set.rc == 2);
  CHECK_THAT(set.err, Catch::Contains("workload.m"));

  write_text(scen, kScenario + "  - {name: data_slicing, params: {chunkz: 2}}\n");  // line 13
  const CliResult param = cli_unchecked({scen});
  CHECK(param.rc == 2);
  CHECK_THAT(param.err, Catch::Contains(scen + ":13"));
  CHECK_THAT(param.err, Catch::Contains("schemes.2.params.chunkz"));  // the path --set accepts

  // A value outside the knob's table range is refused by the loader at its line (exit 2).
  write_text(scen, kScenario + "  - {name: data_slicing, params: {chunks: 0}}\n");
  const CliResult range = cli_unchecked({scen});
  CHECK(range.rc == 2);
  CHECK_THAT(range.err, Catch::Contains(scen + ":13: schemes.2.params.chunks: must be an integer in [1, 4096] (got 0)"));

  // A value inside the range that this workload cannot use (512 rows per rank cut into 2000 slices)
  // is rejected by the builder and still located at its line; the other schemes' results are
  // reported and the exit status is 1 (one failing scheme does not hide the others).
  write_text(scen, kScenario + "  - {name: commfuse, params: {m: 2000}}\n");
  const CliResult value = cli_unchecked({scen});
  CHECK(value.rc == 1);
  CHECK_THAT(value.err, Catch::Contains(scen + ":13"));
  CHECK_THAT(value.err, Catch::Contains("schemes.2.params.m") && Catch::Contains("cannot be cut into m = 2000 slices"));

  // Written as a block, the knob's own line is named, not the scheme's.
  write_text(scen, kScenario + "  - name: commfuse\n    params:\n      channels: 8\n      m: 2000\n");  // m: line 16
  const CliResult block = cli_unchecked({scen});
  CHECK(block.rc == 1);
  CHECK_THAT(block.err, Catch::Contains(scen + ":16: schemes.2.params.m"));
}

TEST_CASE("run --format json has the documented keys and consistent metrics", "[cli][report]") {
  TempDir dir("cli-test");
  const std::string scen = dir.file("s.yaml");
  write_text(scen, kScenario);
  const CliResult r = cli_unchecked({scen, "--format", "json"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"scenario", "hardware", "workload", "results", "exposed_comm_definition"})
    CHECK(j.contains(key));
  CHECK(j["scenario"] == "s");
  CHECK(j["hardware"] == "h100-sxm-8x-nvswitch");
  CHECK(j["workload"]["kind"] == "gemm_collective");
  CHECK(j["workload"]["tp"] == 4);
  CHECK(j["workload"]["m"] == 2048);
  REQUIRE(j["results"].size() == 2);
  for (const auto& row : j["results"]) {
    for (const char* key : {"scheme", "params", "latency_us", "compute_only_us", "comm_us", "exposed_comm_us",
                            "overlap_efficiency", "speedup_vs_no_overlap", "bound_us", "pct_of_bound",
                            "sms_lost_to_comm", "reason"})
      CHECK(row.contains(key));
    // The one definition of exposed communication, exactly in picoseconds.
    CHECK(row["exposed_comm_ps"].get<std::int64_t>() ==
          row["latency_ps"].get<std::int64_t>() - row["compute_only_ps"].get<std::int64_t>());
    CHECK(row["latency_us"].get<double>() == Approx(row["latency_ps"].get<double>() / 1e6));
    CHECK(row["latency_us"].get<double>() > 0);
  }
  CHECK(j["results"][0]["scheme"] == "no_overlap");
  CHECK(j["results"][0]["speedup_vs_no_overlap"].get<double>() == Approx(1.0));
  CHECK(j["results"][1]["scheme"] == "data_slicing");
  CHECK(j["results"][1]["params"] == nlohmann::json{{"chunks", 2}, {"order", "linear"}});  // given + defaults
  // speedup = baseline latency / latency.
  CHECK(j["results"][1]["speedup_vs_no_overlap"].get<double>() ==
        Approx(j["results"][0]["latency_ps"].get<double>() / j["results"][1]["latency_ps"].get<double>()));

  // Deterministic: the same run prints the same bytes.
  CHECK(cli_unchecked({scen, "--format", "json"}).out == r.out);
}

TEST_CASE("run --format csv and table carry the same rows", "[cli][report]") {
  TempDir dir("cli-test");
  const std::string scen = dir.file("s.yaml");
  write_text(scen, kScenario);
  const CliResult csv = cli_unchecked({scen, "--format", "csv"});
  REQUIRE(csv.rc == 0);
  std::istringstream lines(csv.out);
  std::string header, row1, row2, extra;
  std::getline(lines, header);
  std::getline(lines, row1);
  std::getline(lines, row2);
  CHECK(!std::getline(lines, extra));
  std::string expected;
  for (const auto& c : overlap::sim::csv_columns()) expected += (expected.empty() ? "" : ",") + c;
  CHECK(header == expected);
  CHECK(row1.rfind("s,h100-sxm-8x-nvswitch,no_overlap,", 0) == 0);
  CHECK(row2.rfind("s,h100-sxm-8x-nvswitch,data_slicing,", 0) == 0);

  const CliResult table = cli_unchecked({scen});
  REQUIRE(table.rc == 0);
  CHECK_THAT(table.out, Catch::Contains("latency (us)"));
  CHECK_THAT(table.out, Catch::Contains("exposed comm (us)"));
  CHECK_THAT(table.out, Catch::Contains("exposed comm = latency - compute-only latency"));
  // The default table names only the parameters that differ from their defaults; --wide names all.
  CHECK_THAT(table.out, Catch::Contains("data_slicing (chunks=2)"));
  const CliResult wide = cli_unchecked({scen, "--wide"});
  REQUIRE(wide.rc == 0);
  CHECK_THAT(wide.out, Catch::Contains("data_slicing (chunks=2 order=linear)"));
  CHECK_THAT(table.out, Catch::Contains("hardware: h100-sxm-8x-nvswitch"));
  CHECK(table.out.find("nan") == std::string::npos);
}

TEST_CASE("option output: writes the report atomically and an error leaves no file", "[cli][atomic]") {
  TempDir dir("cli-test");
  const std::string scen = dir.file("s.yaml");
  write_text(scen, kScenario);
  const std::string out = dir.file("out.json");

  const CliResult ok = cli_unchecked({scen, "--format", "json", "--output", out});
  REQUIRE(ok.rc == 0);
  CHECK(ok.out.empty());
  CHECK(read_text(out) == cli_unchecked({scen, "--format", "json"}).out);

  // A failing run keeps the previous file untouched and leaves no temporary behind.
  write_text(out, "OLD");
  const CliResult bad = cli_unchecked({scen, "--format", "json", "--output", out, "--set", "workload.k=-1"});
  CHECK(bad.rc == 2);
  CHECK(read_text(out) == "OLD");
  CHECK(dir.entries() == std::vector<std::string>{"out.json", "s.yaml"});

  // A failing run writes nothing at all: not the report, not the trace.
  const CliResult bad2 = cli_unchecked({scen, "--output", dir.file("new.txt"), "--trace", dir.file("t.json"),
                              "--set", "workload.primitive=gather_everything"});
  CHECK(bad2.rc == 2);
  CHECK(dir.entries() == std::vector<std::string>{"out.json", "s.yaml"});

  // An output path that cannot be written is a usage error.
  const CliResult nodir = cli_unchecked({scen, "--output", dir.file("no/such/dir/out.txt")});
  CHECK(nodir.rc == 2);
  CHECK_THAT(nodir.err, Catch::Contains("no/such/dir"));
}

TEST_CASE("option trace: writes a Chrome trace of one scheme", "[cli][trace]") {
  TempDir dir("cli-test");
  const std::string scen = dir.file("s.yaml");
  write_text(scen, kScenario);
  const std::string trace = dir.file("t.json");
  const CliResult r = cli_unchecked({scen, "--scheme", "data_slicing", "--trace", trace, "--trace-level", "cta"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  // --scheme runs only that scheme.
  CHECK_THAT(r.out, Catch::Contains("data_slicing"));
  CHECK(r.out.find("\nno_overlap ") == std::string::npos);  // no row for the baseline
  const auto j = nlohmann::json::parse(read_text(trace));
  REQUIRE(j.contains("traceEvents"));
  REQUIRE(j["traceEvents"].is_array());
  int slices = 0, ctas = 0;
  for (const auto& e : j["traceEvents"]) {
    REQUIRE(e.contains("ph"));
    REQUIRE(e.contains("pid"));
    const std::string ph = e["ph"];
    if (ph == "M") continue;
    CHECK(e.contains("ts"));
    if (ph == "X") {
      ++slices;
      CHECK(e.contains("dur"));
      CHECK(e.contains("tid"));
      CHECK(e["dur"].get<double>() >= 0);
      if (e.value("cat", "") == "cta") ++ctas;
    }
  }
  CHECK(slices > 0);
  CHECK(ctas > 0);  // the run recorded CTAs for the SM lanes
  CHECK(j["otherData"]["scheme"] == "data_slicing");
}

TEST_CASE("hardware that cannot run a scheme is an input error, not a crash", "[cli]") {
  // async_tp pulls with copy engines; a GPU without any cannot run it.
  const CliResult r = cli_unchecked({"--scheme", "async_tp", "--set", "hardware.gpu.copy_engines=0"});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("copy engine"));
  const CliResult too_many = cli_unchecked({"--set", "hardware.comm.channels=200"});
  CHECK(too_many.rc == 2);
  CHECK_THAT(too_many.err, Catch::Contains("hardware.comm.channels") && Catch::Contains("sm_count"));
}

namespace {

void require_finite(const nlohmann::json& j, const std::string& where) {
  if (j.is_number_float()) {
    INFO(where);
    REQUIRE(std::isfinite(j.get<double>()));
  } else if (j.is_object()) {
    for (const auto& [k, v] : j.items()) require_finite(v, where + "." + k);
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) require_finite(j[i], where + "[" + std::to_string(i) + "]");
  }
}

}  // namespace

// [sampled]: the sanitizer pass runs this on its sample of the corpus; the release pass leaves it to the
// golden test (tests/golden/shipped_outputs.py), which checks the same on every shipped scenario's JSON
// report while it runs them (tests/CMakeLists.txt).
TEST_CASE("every shipped scenario runs and reports finite numbers", "[cli][shipped][sampled]") {
  std::vector<std::string> files;
  for (const char* dir : {"/scenarios", "/scenarios/papers"})
    for (const auto& e : fs::directory_iterator(std::string(OVERLAP_SOURCE_DIR) + dir))
      if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 10);
  for (const std::string& f : overlap::test::corpus_sample(files)) {
    INFO(f);
    const CliResult r = cli({"run", f, "--format", "json"});
    INFO(r.err);
    REQUIRE(r.rc == 0);
    const auto j = nlohmann::json::parse(r.out);
    REQUIRE(!j["results"].empty());
    require_finite(j, "report");
    for (const auto& res : j["results"]) CHECK(res["latency_us"].get<double>() > 0);
  }
}

TEST_CASE("absurd sizes are refused with the key named, not simulated for hours", "[cli]") {
  const CliResult r = cli_unchecked({"--scheme", "no_overlap", "--set", "workload.tokens=1099511627776"});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("workload.tokens") && Catch::Contains("[1, 16777216] tokens"));
}

TEST_CASE("a profile without a memory model (hbm_bandwidth_gbps 0) still runs", "[cli]") {
  const CliResult r = cli_unchecked({"--scheme", "no_overlap", "--set", "hardware.gpu.hbm_bandwidth_gbps=0", "--format", "json"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["results"][0]["latency_us"].get<double>() > 0);
}

TEST_CASE("option graphviz: writes the task graph of one scheme as dot", "[cli][graphviz]") {
  TempDir dir("cli-test");
  const std::string scen = dir.file("s.yaml");
  write_text(scen, kScenario);
  const std::string dot = dir.file("g.dot");
  const CliResult r = cli_unchecked({scen, "--scheme", "data_slicing", "--graphviz", dot});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const std::string text = read_text(dot);
  CHECK(text.rfind("digraph tasks {", 0) == 0);
  CHECK_THAT(text, Catch::Contains("cluster_rank0"));
  CHECK_THAT(text, Catch::Contains("->"));
}

TEST_CASE("run without a scenario uses the default Llama-3-70B MLP scenario", "[cli]") {
  const CliResult r = cli_unchecked({"--scheme", "no_overlap", "--format", "json"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["scenario"] == "llama3-70b-tp8-mlp");
  CHECK(j["workload"]["kind"] == "mlp_tpsp");
  CHECK(j["workload"]["tp"] == 8);
  CHECK(j["workload"]["d_model"] == 8192);

  // A paper scenario by its name, found under the source tree.
  CHECK(cli_unchecked({"dtp-a1", "--scheme", "tp_baseline", "--format", "csv"}).rc == 0);

  // OVERLAP_HOME moves the source tree: an empty one has no default scenario.
  TempDir home("cli-test");
  ScopedEnv env("OVERLAP_HOME", home.path.string());
  const CliResult moved = cli_unchecked({});
  CHECK(moved.rc == 2);
  CHECK_THAT(moved.err, Catch::Contains(home.path.string()));
}

TEST_CASE("schemes lists every scheme with its parameters and source", "[cli]") {
  const CliResult table = cli({"schemes"});
  REQUIRE(table.rc == 0);
  const CliResult json = cli({"schemes", "--format", "json"});
  REQUIRE(json.rc == 0);
  const auto j = nlohmann::json::parse(json.out);
  REQUIRE(j["schemes"].size() == overlap::sim::scheme_registry().size());
  for (std::size_t i = 0; i < overlap::sim::scheme_registry().size(); ++i) {
    const auto& info = overlap::sim::scheme_registry()[i];
    CHECK(j["schemes"][i]["name"] == info.name);
    CHECK(j["schemes"][i]["source"] == info.source);
    CHECK(j["schemes"][i]["params"].size() == info.params.size());
    CHECK_THAT(table.out, Catch::Contains(info.name));
    for (const auto& p : info.params) CHECK_THAT(table.out, Catch::Contains(p.name));
  }
}

TEST_CASE("profile show prints a built-in profile", "[cli]") {
  const CliResult r = cli({"profile", "show", "h100-sxm-8x-nvswitch", "--format", "json"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK_NOTHROW(nlohmann::json::parse(r.out));
  CHECK_THAT(r.out, Catch::Contains("132"));
  CHECK(cli({"profile", "show"}).rc == 2);  // the name is required
}

TEST_CASE("option plot: reports a missing Python clearly and writes nothing", "[cli][plot]") {
  TempDir dir("cli-test");
  const std::string scen = dir.file("s.yaml");
  write_text(scen, kScenario);
  ScopedEnv env("PYTHON", dir.file("no-such-python3"));
  const CliResult r = cli_unchecked({scen, "--output", dir.file("out.txt"), "--plot", dir.file("t.png")});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("Python"));
  CHECK(dir.entries() == std::vector<std::string>{"s.yaml"});
}

TEST_CASE("option plot: writes a PNG timeline when matplotlib is available", "[cli][plot]") {
  if (std::system("python3 -c 'import matplotlib' > /dev/null 2>&1") != 0) {
    WARN("python3 with matplotlib not available: --plot not exercised");
    return;
  }
  TempDir dir("cli-test");
  const std::string scen = dir.file("s.yaml");
  write_text(scen, kScenario);
  const std::string png = dir.file("t.png");
  const CliResult r = cli_unchecked({scen, "--scheme", "data_slicing", "--plot", png});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const std::string bytes = read_text(png);
  REQUIRE(bytes.size() > 8);
  CHECK(bytes.substr(1, 3) == "PNG");
  CHECK(dir.entries() == std::vector<std::string>{"s.yaml", "t.png"});  // no temporaries left
}

TEST_CASE("trace flags: kernel level by default, ranks and window filters, bad values name the flag",
          "[cli][trace]") {
  TempDir dir("cli-test");
  const std::string scen = dir.file("s.yaml");
  write_text(scen, kScenario);
  const std::string trace = dir.file("t.json");
  const CliResult r = cli_unchecked({scen, "--scheme", "data_slicing", "--trace", trace});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const auto kernel = nlohmann::json::parse(read_text(trace));  // valid JSON
  CHECK(kernel["otherData"]["trace_level"] == "kernel");
  std::set<int> pids;
  int slices = 0;
  for (const auto& e : kernel["traceEvents"]) {
    if (e["ph"] == "X") {
      ++slices;
      CHECK(e["cat"] != "cta");
      CHECK(e["tid"].get<int>() < 100000);  // stream tracks only
      pids.insert(e["pid"].get<int>());
    }
  }
  CHECK(slices > 0);
  CHECK(pids.size() == 4);

  const CliResult f = cli_unchecked({scen, "--scheme", "data_slicing", "--trace", trace, "--trace-ranks", "1,3",
                           "--trace-window", "0:1e6"});
  INFO(f.err);
  REQUIRE(f.rc == 0);
  const nlohmann::json filtered = nlohmann::json::parse(read_text(trace));  // (a named document: a range-for
  for (const auto& e : filtered["traceEvents"])                        //  over a temporary's member dangles)
    if (e["ph"] == "X") CHECK((e["pid"] == 1 || e["pid"] == 3));

  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--trace-level", "warp"}, {"--trace-ranks", "2-1"}, {"--trace-ranks", "0,9"},
           {"--trace-window", "9:3"}, {"--trace-window", "x"}}) {
    const CliResult bad = cli_unchecked({scen, "--scheme", "data_slicing", "--trace", dir.file("b.json"), flag, value});
    INFO(flag << " " << value << ": " << bad.err);
    CHECK(bad.rc == 2);
    CHECK_THAT(bad.err, Catch::Contains(flag));
    CHECK_FALSE(fs::exists(dir.file("b.json")));
  }
  const CliResult lonely = cli_unchecked({scen, "--trace-level", "cta"});
  CHECK(lonely.rc == 2);
  CHECK_THAT(lonely.err, Catch::Contains("--trace"));
}

TEST_CASE("a run reports a per-GEMM-name knob only when it was given, never its inherited formula", "[cli][te]") {
  // te_userbuffers' "<name>.<knob>" rows default to the scalar knob; the report holds values only.
  const CliResult r = cli_unchecked({"--scheme", "te_userbuffers", "--param", "fc2_fprop.num_splits=8", "--format", "json"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const auto params = nlohmann::json::parse(r.out)["results"][0]["params"];
  CHECK(params["fc2_fprop.num_splits"] == 8);
  CHECK(params["num_splits"] == 4);  // the scalar knob keeps its default
  for (const auto& [key, value] : params.items()) {
    INFO(key);
    if (key != "fc2_fprop.num_splits") CHECK(key.find('.') == std::string::npos);
  }
}
