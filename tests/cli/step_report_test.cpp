// A training step in every output of the CLI: the run table's step section, the CSV's step columns,
// the JSON "step" object, `schemes`' backward lines, the Chrome trace's passes and communicators, sweep
// axes over the training keys, and training-only knobs refused in a forward pass.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "sim/report.hpp"
#include "sim/schemes/scheme.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"

namespace fs = std::filesystem;

namespace {

using namespace overlap::test;  // cli, CliResult, TempDir, read_text, write_text

// Llama-3-70B's MLP as a TP 8 x DP 2 FSDP (ZeRO-3) training step on two nodes; a short sequence
// keeps it quick.
const std::string kStep =
    "hardware: h100-2node-ib400\n"                                   // 1
    "workload:\n"                                                    // 2
    "  kind: mlp_tpsp\n"                                             // 3
    "  tp: 8\n"                                                      // 4
    "  model: llama3-70b\n"                                          // 5
    "  tokens: 2048\n"                                               // 6
    "  dtype: bf16\n"                                                // 7
    "  pass: step\n"                                                 // 8
    "  parallel: {dp: 2, fsdp: zero3}\n"                             // 9
    "schemes:\n"                                                     // 10
    "  - no_overlap\n"                                               // 11
    "  - {name: data_slicing, params: {chunks: 2}}\n";               // 12

// The same layer's forward pass alone, on one node.
const std::string kForward =
    "hardware: h100-sxm-8x-nvswitch\n"                               // 1
    "workload: {kind: mlp_tpsp, tp: 8, model: llama3-70b, tokens: 2048, dtype: bf16}\n"  // 2
    "schemes:\n"                                                     // 3
    "  - no_overlap\n"                                               // 4
    "  - name: data_slicing\n"                                       // 5
    "    params:\n"                                                  // 6
    "      chunks: 2\n"                                              // 7
    "      column_backward: bulk\n";                                 // 8

// "123.456789" (exact_us: six decimals) as picoseconds.
std::int64_t ps_of(const std::string& us) {
  const auto dot = us.find('.');
  REQUIRE(dot != std::string::npos);
  REQUIRE(us.size() - dot - 1 == 6);
  return std::stoll(us.substr(0, dot)) * 1'000'000 + std::stoll(us.substr(dot + 1));
}

// One CSV line's fields (RFC 4180 quoting: a quoted field may hold commas and doubled quotes).
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

TEST_CASE("run on a training step: the JSON step object adds up, forward + backward = latency", "[cli][report][training]") {
  TempDir dir("step-test");
  const std::string scen = dir.file("step.yaml");
  write_text(scen, kStep);
  const CliResult r = cli_unchecked({scen, "--format", "json"});
  REQUIRE(r.rc == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["results"].size() == 2);
  for (const auto& row : j["results"]) {
    INFO(row["scheme"]);
    REQUIRE(row.contains("step"));
    const auto& s = row["step"];
    CHECK(s["pass"] == "step");
    CHECK(s["forward"]["latency_ps"].get<std::int64_t>() + s["backward"]["latency_ps"].get<std::int64_t>() ==
          row["latency_ps"].get<std::int64_t>());
    CHECK(s["forward"]["compute_only_ps"].get<std::int64_t>() + s["backward"]["compute_only_ps"].get<std::int64_t>() ==
          row["compute_only_ps"].get<std::int64_t>());
    // Both communicators run in this step; each one's exposed time is at most the whole exposed time
    // plus what the other hides (never more than the latency).
    CHECK(s["exposed_tp_ps"].get<std::int64_t>() > 0);
    CHECK(s["exposed_dp_ps"].get<std::int64_t>() >= 0);
    CHECK(s["exposed_tp_ps"].get<std::int64_t>() <= row["latency_ps"].get<std::int64_t>());
    CHECK(s["mfu"].get<double>() > 0);
    CHECK(s["mfu"].get<double>() < 1);
    // tokens/s = tokens x dp / latency.
    CHECK(s["tokens_per_s"].get<double>() == Approx(2048.0 * 2 / (row["latency_ps"].get<double>() * 1e-12)));
    // A step's params show column_backward (it shapes the backward).
    CHECK(row["params"].contains("column_backward"));
  }
}

TEST_CASE("run on a training step: the table's step section and the CSV's step columns", "[cli][report][training]") {
  TempDir dir("step-test");
  const std::string scen = dir.file("step.yaml");
  write_text(scen, kStep);

  const CliResult csv = cli_unchecked({scen, "--format", "csv"});
  REQUIRE(csv.rc == 0);
  const std::vector<std::string> lines = lines_of(csv.out);
  REQUIRE(lines.size() == 3);
  const std::vector<std::string> header = split_csv(lines[0]);
  CHECK(header == overlap::sim::csv_columns(true));
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> f = split_csv(lines[i]);
    REQUIRE(f.size() == header.size());
    CHECK(f[col["pass"]] == "step");
    // The passes add up to the step, exactly (picoseconds).
    CHECK(ps_of(f[col["forward_us"]]) + ps_of(f[col["backward_us"]]) == ps_of(f[col["latency_us"]]));
    CHECK(ps_of(f[col["forward_exposed_comm_us"]]) + ps_of(f[col["backward_exposed_comm_us"]]) ==
          ps_of(f[col["exposed_comm_us"]]));
    // Each pass's communication alone adds up to the workload's (comm_us), and its overlap efficiency
    // is 1 - exposed / comm, clamped, as the run's.
    CHECK(ps_of(f[col["forward_comm_us"]]) + ps_of(f[col["backward_comm_us"]]) == ps_of(f[col["comm_us"]]));
    for (const char* pass : {"forward", "backward"}) {
      const double comm = static_cast<double>(ps_of(f[col[std::string(pass) + "_comm_us"]]));
      const double exposed = static_cast<double>(ps_of(f[col[std::string(pass) + "_exposed_comm_us"]]));
      REQUIRE(comm > 0);
      CHECK(std::stod(f[col[std::string(pass) + "_overlap_efficiency"]]) ==
            Approx(std::clamp(1.0 - exposed / comm, 0.0, 1.0)).margin(1e-6));
    }
    CHECK(std::stod(f[col["mfu"]]) > 0);
    CHECK(std::stod(f[col["tokens_per_s"]]) > 0);
  }

  const CliResult table = cli_unchecked({scen});
  REQUIRE(table.rc == 0);
  CHECK_THAT(table.out, Catch::Contains("training step (pass step), times in us"));
  CHECK_THAT(table.out, Catch::Contains("workload: mlp_tpsp tp=8 tokens=2048 d_model=8192 d_ffn=28672 gated=true "
                                        "dtype=bf16 pass=step dp=2 fsdp=zero3 prefetch=1"));
  // A scheme that runs this layer's forward but has no backward form is named as such, not as if the
  // workload's kind were wrong.
  for (const overlap::sim::SchemeInfo& info : overlap::sim::scheme_registry()) {
    overlap::sim::Workload forward{overlap::sim::WorkloadKind::mlp_tpsp, 8, overlap::sim::MlpTpSp{2048, 8192, 28672, true, overlap::DType::bf16, true}};
    if (!info.backward.empty() || !info.applies || !info.applies(forward)) continue;
    INFO(info.name);
    CHECK_THAT(table.out, Catch::Contains("(for forward passes only: no backward form)"));
    CHECK_THAT(table.out, Catch::Contains(info.name));
  }
  CHECK_THAT(table.out, Catch::Contains("TP exposed"));
  CHECK_THAT(table.out, Catch::Contains("MFU (%)"));
  // The step section's row of no_overlap: forward + backward = the main table's latency (2 decimals each).
  double latency = -1, forward = -1, backward = -1;
  bool in_step = false;
  for (const std::string& l : lines_of(table.out)) {
    if (l.rfind("training step", 0) == 0) in_step = true;
    if (l.rfind("no_overlap ", 0) != 0) continue;
    std::istringstream in(l.substr(std::string("no_overlap").size()));
    if (!in_step) in >> latency;
    else if (forward < 0) in >> forward >> backward;
  }
  REQUIRE(latency > 0);
  REQUIRE(forward > 0);
  CHECK(forward + backward == Approx(latency).margin(0.011));
  for (const std::string& l : lines_of(table.out)) CHECK(l.size() <= overlap::sim::kTableWidth);
  const CliResult wide = cli_unchecked({scen, "--wide"});
  REQUIRE(wide.rc == 0);
  CHECK_THAT(wide.out, Catch::Contains("fwd compute-only"));
  CHECK_THAT(wide.out, Catch::Contains("bwd overlap eff. (%)"));
  CHECK_THAT(wide.out, Catch::Contains("model TFLOP"));
  CHECK(table.out.find("nan") == std::string::npos);
}

TEST_CASE("a forward pass: no step section or columns, and training-only knobs are neither shown nor accepted",
          "[cli][report][training]") {
  TempDir dir("step-test");
  const std::string scen = dir.file("fwd.yaml");
  // Without column_backward: the forward outputs as they were before training steps.
  write_text(scen, kForward.substr(0, kForward.rfind("      column_backward")));
  const CliResult json = cli_unchecked({scen, "--format", "json"});
  REQUIRE(json.rc == 0);
  const nlohmann::json j = nlohmann::json::parse(json.out);
  CHECK(j["results"][0]["params"] == nlohmann::json::object());
  CHECK(j["results"][1]["params"] == nlohmann::json{{"chunks", 2}, {"order", "linear"}});
  CHECK(!j["results"][0].contains("step"));
  const CliResult csv = cli_unchecked({scen, "--format", "csv"});
  REQUIRE(csv.rc == 0);
  CHECK(split_csv(lines_of(csv.out)[0]) == overlap::sim::csv_columns());
  const CliResult table = cli_unchecked({scen, "--wide"});
  REQUIRE(table.rc == 0);
  CHECK(table.out.find("training step") == std::string::npos);
  CHECK(table.out.find("column_backward") == std::string::npos);

  // Named in a forward pass it would have no effect: refused at its line, exit 2.
  write_text(scen, kForward);
  const CliResult named = cli_unchecked({scen});
  CHECK(named.rc == 2);
  CHECK_THAT(named.err, Catch::Contains("fwd.yaml:8"));
  CHECK_THAT(named.err, Catch::Contains("schemes.1.params.column_backward"));
  CHECK_THAT(named.err, Catch::Contains("training backward only"));
  write_text(scen, kForward.substr(0, kForward.rfind("      column_backward")));
  const CliResult flag = cli_unchecked({scen, "--scheme", "no_overlap", "--param", "column_backward=bulk"});
  CHECK(flag.rc == 2);
  CHECK_THAT(flag.err, Catch::Contains("column_backward"));
  CHECK_THAT(flag.err, Catch::Contains("workload.pass"));
}

TEST_CASE("schemes says how each scheme runs the backward, or that it has none", "[cli][training]") {
  const CliResult r = cli({"schemes"});
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("  backward: every collective after the GEMM"));
  CHECK_THAT(r.out, Catch::Contains("  backward: no backward form"));
  CHECK_THAT(r.out, Catch::Contains("training steps only (workload.pass backward | step)"));
  const CliResult j = cli({"schemes", "--format", "json"});
  REQUIRE(j.rc == 0);
  std::size_t with = 0, without = 0;
  const nlohmann::json list = nlohmann::json::parse(j.out);
  for (const auto& s : list["schemes"]) {
    REQUIRE(s.contains("backward"));
    (s["backward"].get<std::string>().empty() ? without : with) += 1;
    if (s["name"] == "no_overlap" || s["name"] == "data_slicing") CHECK(!s["backward"].get<std::string>().empty());
  }
  CHECK(with >= 2);
  CHECK(without >= 1);
}

TEST_CASE("the Chrome trace of a step tells the passes and the communicators apart", "[cli][trace][training]") {
  TempDir dir("step-test");
  const std::string scen = dir.file("step.yaml");
  write_text(scen, kStep);
  const std::string trace = dir.file("t.json");
  REQUIRE(cli_unchecked({scen, "--scheme", "no_overlap", "--trace", trace}).rc == 0);
  const nlohmann::json t = nlohmann::json::parse(read_text(trace));
  CHECK(t["otherData"]["training_step"] == true);
  const double forward_end = t["otherData"]["forward_end_us"].get<double>();
  std::map<std::string, int> passes, communicators;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] != "X") continue;
    REQUIRE(e["args"].contains("pass"));
    const std::string pass = e["args"]["pass"];
    ++passes[pass];
    const std::string name = e["name"];
    // The backward's slices, and only they, are named "bwd....", whatever their communicator; every
    // forward slice ends by the forward's end.
    CHECK((name.rfind("bwd.", 0) == 0) == (pass == "backward"));
    if (pass == "forward") CHECK(e["ts"].get<double>() + e["dur"].get<double>() <= forward_end + 1e-6);
    if (e["cat"] == "comm") {
      REQUIRE(e["args"].contains("communicator"));
      ++communicators[e["args"]["communicator"].get<std::string>()];
    } else {
      CHECK(!e["args"].contains("communicator"));
    }
  }
  CHECK(passes["forward"] > 0);
  CHECK(passes["backward"] > 0);
  CHECK(communicators["tp"] > 0);
  CHECK(communicators["dp"] > 0);

  // At the CTA level the SM tracks name the backward's CTAs the same way.
  REQUIRE(cli_unchecked({scen, "--scheme", "no_overlap", "--trace", trace, "--trace-level", "cta"}).rc == 0);
  const nlohmann::json c = nlohmann::json::parse(read_text(trace));
  std::size_t forward_ctas = 0, backward_ctas = 0;
  for (const auto& e : c["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "cta")
      ++(e["name"].get<std::string>().rfind("bwd.", 0) == 0 ? backward_ctas : forward_ctas);
  CHECK(forward_ctas > 0);
  CHECK(backward_ctas > 0);

  // A forward pass's trace is as it was: no pass or communicator in the args.
  const std::string fwd = dir.file("fwd.yaml");
  write_text(fwd, kForward.substr(0, kForward.rfind("      column_backward")));
  REQUIRE(cli_unchecked({fwd, "--scheme", "no_overlap", "--trace", trace}).rc == 0);
  const nlohmann::json f = nlohmann::json::parse(read_text(trace));
  CHECK(!f["otherData"].contains("training_step"));
  for (const auto& e : f["traceEvents"])
    if (e["ph"] == "X") CHECK(!e["args"].contains("pass"));
}

TEST_CASE("sweep over the training keys: the step columns, each row adding up", "[cli][sweep][training]") {
  TempDir dir("step-test");
  const std::string scen = dir.file("ddp.yaml");
  // DDP (gradient buckets) so that bucket_mb means something.
  std::string ddp = kStep;
  ddp.replace(ddp.find("fsdp: zero3"), std::string("fsdp: zero3").size(), "fsdp: none");
  write_text(scen, ddp);
  const CliResult r = cli({"sweep", scen, "--sweep", "workload.parallel.bucket_mb=10,100", "--sweep",
                           "workload.recompute=none,full", "-j", "2"});
  REQUIRE(r.rc == 0);
  const std::vector<std::string> lines = lines_of(r.out);
  REQUIRE(lines.size() == 1 + 2 * 2 * 2);
  const std::vector<std::string> header = split_csv(lines[0]);
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  REQUIRE(col.count("workload.parallel.bucket_mb"));
  REQUIRE(col.count("forward_us"));
  REQUIRE(col.count("exposed_dp_us"));
  std::set<std::string> latencies;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> f = split_csv(lines[i]);
    REQUIRE(f.size() == header.size());
    CHECK(ps_of(f[col["forward_us"]]) + ps_of(f[col["backward_us"]]) == ps_of(f[col["latency_us"]]));
    latencies.insert(f[col["latency_us"]]);
  }
  CHECK(latencies.size() > 1);  // the axes change the step

  // A forward scenario swept over workload.pass: the step columns are there, empty for the forward.
  const std::string fwd = dir.file("fwd.yaml");
  write_text(fwd, kForward.substr(0, kForward.rfind("      column_backward")));
  const CliResult p = cli({"sweep", fwd, "--sweep", "workload.pass=forward,step", "-j", "2"});
  REQUIRE(p.rc == 0);
  const std::vector<std::string> pl = lines_of(p.out);
  REQUIRE(pl.size() == 1 + 2 * 2);
  const std::vector<std::string> ph = split_csv(pl[0]);
  std::map<std::string, std::size_t> pc;
  for (std::size_t i = 0; i < ph.size(); ++i) pc[ph[i]] = i;
  REQUIRE(pc.count("pass"));
  for (std::size_t i = 1; i < pl.size(); ++i) {
    const std::vector<std::string> f = split_csv(pl[i]);
    REQUIRE(f.size() == ph.size());
    const std::string swept = f[pc["workload.pass"]];
    CHECK(f[pc["pass"]] == (swept == "step" ? "step" : ""));
  }
}

TEST_CASE("tune on the shipped training step: every scheme with a backward is tuned, flashoverlap included",
          "[cli][tune][training]") {
  // The shipped step lists no schemes, so flashoverlap (whose backward signals dgrad's reduce-scatter
  // per wave group) is among them; its one-operator wave-group search must not refuse the step.
  const std::string step = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/llama3-70b-tp8-train-step.yaml";
  const CliResult r = cli({"tune", step, "--set", "workload.layers=2", "--format", "json", "-j", "2"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  std::set<std::string> tuned;
  for (const auto& s : j["schemes"]) {
    tuned.insert(s["scheme"].get<std::string>());
    CHECK(!s["candidates"].empty());
  }
  for (const char* s : {"no_overlap", "data_slicing", "async_tp", "commfuse", "flashoverlap"}) CHECK(tuned.count(s) == 1);
  CHECK(j["best"]["latency_us"].get<double>() <= j["baseline_us"].get<double>());
}
