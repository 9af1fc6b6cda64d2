// Hardening: every bad input is refused with exit 2 and a message naming the file or
// flag, the key and (for ranges) the limit; input paths that are not regular files are refused at
// once; one failing scheme does not hide the others' results; outputs appear together or not at all.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cost_model/input_error.hpp"
#include "cost_model/input_file.hpp"
#include "cost_model/input_ranges.hpp"
#include "cost_model/profile_loader.hpp"
#include "cost_model/yaml_reader.hpp"
#include "sim/scenario.hpp"
#include "sim/sweep.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"
#include "tools/cli.hpp"
#include "tools/input_paths.hpp"

namespace fs = std::filesystem;

namespace {

using namespace overlap::test;  // cli, CliResult, TempDir, read_text, write_text

const std::string kGemm = gemm_collective_scenario("all_reduce") + "  - no_overlap\n";  // 10

// The InputError a scenario text raises ("" when it loads).
std::string load_error(const std::string& text, const std::vector<std::string>& sets = {}) {
  overlap::sim::ScenarioOptions o;
  o.sets = sets;
  try {
    (void)overlap::sim::load_scenario_text(text, "h.yaml", o);
  } catch (const overlap::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("out-of-range physical quantities are refused with the key and the limit", "[harden][ranges]") {
  // --set: the message names the flag (not the YAML file), the key and the range.
  for (const std::string v : {"1e-9", "1e300"}) {
    const CliResult r = cli_unchecked({"--set", "hardware.gpu.peak_tflops.bf16=" + v});
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::Contains("--set hardware.gpu.peak_tflops.bf16=" + v));
    CHECK_THAT(r.err, Catch::Contains("hardware.gpu.peak_tflops.bf16"));
    CHECK_THAT(r.err, Catch::Contains("[0.001, 100000] TFLOP/s"));
  }
  const CliResult hbm = cli_unchecked({"--set", "hardware.gpu.hbm_bandwidth_gbps=1e-300"});
  CHECK(hbm.rc == 2);
  CHECK_THAT(hbm.err, Catch::Contains("hardware.gpu.hbm_bandwidth_gbps") && Catch::Contains("GB/s"));
  const CliResult gpus = cli_unchecked({"--set", "hardware.fabric.num_gpus=1000000"});
  CHECK(gpus.rc == 2);
  CHECK_THAT(gpus.err, Catch::Contains("hardware.fabric.num_gpus") && Catch::Contains("65536"));

  // In a file: file:line and key.
  std::string e = load_error(kGemm + "fidelity: curve\n", {"workload.m=1e18"});
  CHECK_THAT(e, Catch::Contains("workload.m") && Catch::Contains("16777216"));
  const std::string attention =
      "hardware: h100-sxm-8x-nvswitch\n"
      "workload: {kind: attention_tpsp, tp: 8, batch: 1000000000000000000, seq: 8192, d_model: 8192, heads: 64}\n";
  e = load_error(attention);
  CHECK_THAT(e, Catch::Contains("h.yaml:2") && Catch::Contains("workload.batch") && Catch::Contains("1048576"));
  // batch and seq each in range, their product is not.
  e = load_error(attention, {"workload.batch=1048576"});
  CHECK_THAT(e, Catch::Contains("batch x seq") && Catch::Contains("16777216"));

  const std::string decode =
      "hardware: h100-sxm-8x-nvswitch\n"
      "workload: {kind: decode_stack, tp: 8, model: llama3-70b, allreduce_us: 1e13}\n";
  e = load_error(decode);
  CHECK_THAT(e, Catch::Contains("h.yaml:2") && Catch::Contains("workload.allreduce_us") && Catch::Contains("[0, 1e+06] us"));
}

TEST_CASE("copy_engines 0 in a file is refused at its line and key", "[harden][ranges]") {
  TempDir d("harden");
  const std::string profile = d.file("p.yaml");
  std::string text = read_text(overlap::tools::hardware_dir() + "/h100-sxm-8x-nvswitch.yaml");
  text += "\n";
  // Replace the gpu section's copy_engines (or add it) at a known line.
  std::istringstream lines(text);
  std::string line, out;
  int n = 0, at = 0;
  while (std::getline(lines, line)) {
    ++n;
    if (line.rfind("  copy_engines:", 0) == 0) {
      line = "  copy_engines: 0";
      at = n;
    }
    out += line + "\n";
  }
  REQUIRE(at > 0);
  write_text(profile, out);
  CHECK(cli({"profile", "show", profile}).rc == 2);
  try {
    (void)overlap::load_profile_file(profile);
    FAIL("copy_engines: 0 was accepted");
  } catch (const overlap::InputError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains(profile + ":" + std::to_string(at)));
    CHECK_THAT(std::string(e.what()), Catch::Contains("gpu.copy_engines") && Catch::Contains("[1, 64]"));
  }
}

TEST_CASE("every range of the table is well formed", "[harden][ranges]") {
  for (const overlap::InputRange* r : overlap::ranges::kAll) {
    INFO(r->quantity);
    CHECK(r->min <= r->max);
    CHECK_FALSE(r->why.empty());
    CHECK_FALSE(overlap::range_violation(*r, r->min).has_value());
    CHECK_FALSE(overlap::range_violation(*r, r->max).has_value());
    CHECK(overlap::range_violation(*r, r->max * 2 + 1).has_value());
  }
}

TEST_CASE("a link class or key nothing reads is an error naming where it came from", "[harden][keys]") {
  const CliResult r = cli_unchecked({"--set", "hardware.fabric.links.nvlnk.bandwidth_gbps=5"});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("--set hardware.fabric.links.nvlnk.bandwidth_gbps=5"));
  CHECK_THAT(r.err, Catch::Contains("hardware.fabric.links.nvlnk") && Catch::Contains("unknown link class"));
  // profile show does not list it either: it refuses it, on the command's error stream like every command.
  const CliResult show = cli({"profile", "show", "h100-sxm-8x-nvswitch", "--set", "fabric.links.nvlnk.bandwidth_gbps=5"});
  CHECK(show.rc == 2);
  CHECK(show.out.empty());
  CHECK_THAT(show.err, Catch::StartsWith("overlap-sim: error: ") && Catch::Contains("unknown link class"));
  try {
    (void)overlap::load_profile("h100-sxm-8x-nvswitch", overlap::tools::hardware_dir(), {"fabric.links.nvlnk.bandwidth_gbps=5"});
    FAIL("the misspelt link class was accepted");
  } catch (const overlap::InputError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("--set fabric.links.nvlnk.bandwidth_gbps=5") && Catch::Contains("nvlnk"));
  }
  // An unknown key under a map set inline.
  const std::string e = load_error(kGemm, {"workload.mm=5"});
  CHECK_THAT(e, Catch::Contains("--set workload.mm=5") && Catch::Contains("workload.mm") && Catch::Contains("unknown key"));
  // A file's mistake is still the file's: its line, not --set.
  const std::string f = load_error(kGemm + "  - {name: no_overlap, params: {x: 1}}\n", {"workload.m=4096"});
  CHECK_THAT(f, Catch::Contains("h.yaml:11") && Catch::Contains("schemes.1.params.x"));
}

TEST_CASE("a path in a message is accepted back by --set", "[harden][keys]") {
  const std::string e = load_error(kGemm + "  - {name: data_slicing, params: {chunks: true}}\n");
  REQUIRE_THAT(e, Catch::Contains("schemes.1.params.chunks"));
  // The same path through --set fixes it.
  CHECK(load_error(kGemm + "  - {name: data_slicing, params: {chunks: true}}\n", {"schemes.1.params.chunks=2"}).empty());
  // The top-level message says what is required.
  const std::string list = load_error("[1, 2]\n");
  CHECK_THAT(list, Catch::Contains("hardware and workload (required)"));
  CHECK_THAT(list, !Catch::Contains("hardware, workload and schemes"));
}

TEST_CASE("FlashOverlap wave groups larger than the GEMM are refused like a wrong list", "[harden][keys]") {
  TempDir d("harden");
  const std::string scen = d.file("fo.yaml");
  for (const std::string groups : {"1000000", "[100, 100]"}) {
    write_text(scen, kGemm + "  - {name: flashoverlap, params: {groups: " + groups + "}}\n");
    const CliResult r = cli_unchecked({scen, "--scheme", "flashoverlap"});
    INFO(groups << ": " << r.err);
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::Contains("groups") && Catch::Contains("waves"));
  }
}

TEST_CASE("input paths that are not regular files are refused at once", "[harden][files]") {
  TempDir d("harden");
  // A directory, a device, a FIFO (would block forever), an oversized file.
  const CliResult dir = cli_unchecked({d.path.string()});
  CHECK(dir.rc == 2);
  CHECK_THAT(dir.err, Catch::Contains(d.path.string()) && Catch::Contains("directory"));
  const CliResult zero = cli_unchecked({"/dev/zero"});
  CHECK(zero.rc == 2);
  CHECK_THAT(zero.err, Catch::Contains("/dev/zero") && Catch::Contains("device"));
  const std::string fifo = d.file("fifo.yaml");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const CliResult pipe = cli_unchecked({fifo});
  CHECK(pipe.rc == 2);
  CHECK_THAT(pipe.err, Catch::Contains("FIFO"));
  const std::string big = d.file("big.yaml");
  {
    std::ofstream out(big, std::ios::binary);
    const std::string block(1 << 20, '#');
    for (int i = 0; i < 17; ++i) out << block;
  }
  const CliResult huge = cli_unchecked({big});
  CHECK(huge.rc == 2);
  CHECK_THAT(huge.err, Catch::Contains("16 MiB"));
  // A hardware path in a scenario that names a directory: an input error at the scenario's line.
  const std::string scen = d.file("hw.yaml");
  write_text(scen, "hardware: " + d.path.string() + "/\nworkload: {kind: gemm_collective, tp: 2, m: 64, n: 64, k: 64, primitive: all_reduce}\n");
  const CliResult hw = cli_unchecked({scen});
  CHECK(hw.rc == 2);
  CHECK_THAT(hw.err, Catch::Contains("directory"));
  // The reader itself.
  CHECK_THROWS_AS(overlap::read_input_file("/dev/null"), overlap::InputError);
  CHECK_FALSE(overlap::read_input_file_if_exists(d.file("absent")).has_value());
  write_text(d.file("ok"), "abc");
  CHECK(overlap::read_input_file(d.file("ok")) == "abc");
}

TEST_CASE("a 3000-value sweep list validates, each value checked", "[harden][sweep]") {
  std::string values;
  for (int i = 1; i <= 3000; ++i) values += (i > 1 ? ", " : "") + std::to_string(i * 64);
  const std::string text = kGemm + "sweep:\n  workload.k: [" + values + "]\n";
  const overlap::sim::Scenario sc = overlap::sim::load_scenario_text(text, "sweep.yaml");
  REQUIRE(sc.sweep.size() == 1);
  CHECK(sc.sweep[0].values.size() == 3000);
  CHECK(overlap::sim::sweep_points(sc).size() == 3000);
  // The text a point reloads no longer carries the sweep, and its lines still match the file's.
  CHECK(sc.text.find("sweep") == std::string::npos);
  CHECK(std::count(sc.text.begin(), sc.text.end(), '\n') == std::count(text.begin(), text.end(), '\n'));
  CHECK_THAT(load_error(sc.text + "bogus: 1\n"), Catch::Contains("h.yaml:13"));
  // A bad value among them is still found, at the sweep's line.
  // (A short list: the 3000 loads above are what this test pays for; CI runs it under ASan too.)
  const std::string bad = kGemm + "sweep:\n  workload.k: [64, 128, 0]\n";
  const std::string e = load_error(bad);
  CHECK_THAT(e, Catch::Contains("h.yaml:12") && Catch::Contains("workload.k"));
}

TEST_CASE("one failing scheme is a FAILED row, the others are reported, exit 1", "[harden][failed]") {
  TempDir d("harden");
  const std::string scen = d.file("mixed.yaml");
  write_text(scen, kGemm + "  - {name: flashoverlap, params: {groups: 1000000}}\n");  // line 11
  const CliResult j = cli_unchecked({scen, "--format", "json"});
  INFO(j.err);
  CHECK(j.rc == 1);
  const auto doc = nlohmann::json::parse(j.out);
  REQUIRE(doc["results"].size() == 2);
  CHECK(doc["results"][0]["scheme"] == "no_overlap");
  CHECK(doc["results"][0]["latency_us"].get<double>() > 0);
  CHECK_FALSE(doc["results"][0].contains("failed"));
  CHECK(doc["results"][1]["failed"] == true);
  const std::string error = doc["results"][1]["error"];
  CHECK_THAT(error, Catch::Contains(scen + ":11") && Catch::Contains("schemes.1.params.groups"));
  CHECK_THAT(j.err, Catch::Contains("schemes.1.params.groups"));

  const CliResult csv = cli_unchecked({scen, "--format", "csv"});
  CHECK(csv.rc == 1);
  CHECK_THAT(csv.out, Catch::Contains("FAILED: "));
  const CliResult table = cli_unchecked({scen});
  CHECK(table.rc == 1);
  CHECK_THAT(table.out, Catch::Contains("FAILED"));

  // Every scheme failing is an invalid scenario: exit 2, nothing reported.
  write_text(scen, "hardware: h100-sxm-8x-nvswitch\nworkload: {kind: gemm_collective, tp: 4, m: 2048, n: 4096, k: 2048, "
              "primitive: all_reduce}\nschemes:\n  - {name: flashoverlap, params: {groups: 1000000}}\n");
  const CliResult all = cli_unchecked({scen});
  CHECK(all.rc == 2);
  CHECK(all.out.empty());
}

TEST_CASE("sweep: -o and --plot land together or not at all", "[harden][outputs][sweep]") {
  TempDir d("harden");
  const std::string report = d.file("s.csv");
  write_text(report, "old sweep");
  const std::size_t before = d.entries().size();
  const CliResult r = cli({"sweep", "--sweep", "workload.tokens=4096,8192", "-o", report, "--plot", "/nonexistent/p.png"});
  INFO(r.err);
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("--plot"));
  CHECK(read_text(report) == "old sweep");
  // The --plot directory is checked with every output before any point runs: nothing was run, so
  // nothing was written (no temporary, no checkpoint).
  CHECK_THAT(r.err, Catch::Contains("/nonexistent"));
  CHECK(d.entries().size() == before);
}

TEST_CASE("outputs are moved into place only when all of them succeeded", "[harden][outputs]") {
  TempDir d("harden");
  const std::string report = d.file("r.json"), trace = d.file("t.json");
  write_text(report, "old report");
  write_text(trace, "old trace");
  const std::size_t before = d.entries().size();
  for (const std::vector<std::string>& failing :
       {std::vector<std::string>{"--plot", "/nonexistent/p.png"}, std::vector<std::string>{"--graphviz", "/nonexistent/g.dot"}}) {
    std::vector<std::string> args = {"run", "--scheme", "no_overlap", "--trace", trace, "-o", report, "--format", "json"};
    args.insert(args.end(), failing.begin(), failing.end());
    const CliResult r = cli(args);
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK(read_text(report) == "old report");
    CHECK(read_text(trace) == "old trace");
    CHECK(d.entries().size() == before);  // no temporary left behind
  }
  // All succeed: all are replaced.
  const CliResult ok = cli_unchecked({"--scheme", "no_overlap", "--trace", trace, "-o", report, "--format", "json",
                      "--graphviz", d.file("g.dot")});
  INFO(ok.err);
  REQUIRE(ok.rc == 0);
  CHECK(nlohmann::json::parse(read_text(report))["results"].size() == 1);
  CHECK(nlohmann::json::parse(read_text(trace)).contains("traceEvents"));
  CHECK(fs::exists(d.file("g.dot")));
  CHECK(d.entries().size() == before + 1);
}

TEST_CASE("a hardware path given by --set is read where the user typed it (the README's calibrated profiles)",
          "[harden][files]") {
  // Runs from a scratch working directory: CWD-relative, then source-tree-relative, then missing.
  const fs::path source = OVERLAP_SOURCE_DIR;
  const std::string in_tree = "calibrate/results/nvidia-h100-80gb-hbm3-vm/schemes/profile_virtual_t4_d2d.yaml";
  REQUIRE(fs::exists(source / in_tree));
  TempDir d("harden");
  fs::create_directories(d.path / "mine");
  std::string text;
  {
    std::ifstream in(source / in_tree);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  const std::string renamed = "name: \"my-copy-of-t4\"";
  text.replace(text.find("name: \"virtual-t4-d2d\""), std::string("name: \"virtual-t4-d2d\"").size(), renamed);
  std::ofstream(d.path / "mine" / "t4.yaml") << text;
  const fs::path before = fs::current_path();
  fs::current_path(d.path);
  const CliResult own = cli_unchecked({"--set", "hardware=mine/t4.yaml", "--set", "workload.tp=4", "--scheme", "no_overlap",
                       "--format", "json"});
  const CliResult tree = cli_unchecked({"--set", "hardware=" + in_tree, "--set", "workload.tp=4", "--scheme", "no_overlap",
                        "--format", "json"});
  const CliResult missing = cli_unchecked({"--set", "hardware=mine/none.yaml", "--set", "workload.tp=4"});
  fs::current_path(before);
  INFO(own.err << tree.err);
  REQUIRE(own.rc == 0);
  REQUIRE(tree.rc == 0);
  CHECK(own.out.find("my-copy-of-t4") != std::string::npos);     // the working directory's file
  CHECK(tree.out.find("virtual-t4-d2d") != std::string::npos);   // not there: the source tree's
  CHECK(missing.rc == 2);
  // Neither exists: the message names the file where the user pointed, not beside the scenario.
  CHECK(missing.err.find((d.path / "mine" / "none.yaml").lexically_normal().string()) != std::string::npos);
  CHECK(missing.err.find("scenarios/mine") == std::string::npos);
}

TEST_CASE("an edit of the hardware survives a later choice of the hardware, in any order", "[harden][keys]") {
  // `hardware=` chooses the profile, `hardware.a.b=` edits it: applied in that order whatever the
  // order given (a sweep's axes come in file order), so neither assignment is dropped silently.
  auto latency = [](const std::vector<std::string>& sets) {
    std::vector<std::string> args = {"--scheme", "no_overlap", "--format", "json"};
    for (const auto& s : sets) {
      args.push_back("--set");
      args.push_back(s);
    }
    const CliResult r = cli_unchecked(args);
    INFO(r.err);
    REQUIRE(r.rc == 0);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    CHECK(j["hardware"] == "a800-8x-nvlink");
    return j["results"][0]["latency_us"].get<double>();
  };
  const double plain = latency({"hardware=a800-8x-nvlink"});
  const double edit_after = latency({"hardware=a800-8x-nvlink", "hardware.gpu.sm_count=100"});
  const double edit_before = latency({"hardware.gpu.sm_count=100", "hardware=a800-8x-nvlink"});
  CHECK(edit_before == edit_after);
  CHECK(edit_after != plain);
  // A bad edit of the chosen profile names its own --set; a chosen profile that cannot be read
  // names the choice.
  const CliResult bad = cli_unchecked({"--set", "hardware=a800-8x-nvlink", "--set", "hardware.gpu.sm_count=-3"});
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("--set hardware.gpu.sm_count=-3") != std::string::npos);
  const CliResult missing = cli_unchecked({"--set", "hardware.gpu.sm_count=100", "--set", "hardware=/nonexistent/p.yaml"});
  CHECK(missing.rc == 2);
  CHECK(missing.err.find("--set hardware=/nonexistent/p.yaml") != std::string::npos);
}

// ---- Outputs, numbers, budgets, internal errors, topologies, flags ----

namespace {

bool is_fifo(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

const std::string kMlp = "scenarios/llama3-70b-tp8-mlp.yaml";

std::string src(const std::string& rel) { return (fs::path(overlap::tools::source_dir()) / rel).string(); }

}  // namespace

TEST_CASE("two outputs naming one file are refused before anything is written", "[harden2][outputs]") {
  TempDir d("harden");
  const std::string k = d.file("k.json");
  write_text(k, "old");
  const std::vector<std::vector<std::string>> cases = {
      {"run", src(kMlp), "--scheme", "no_overlap", "-o", k, "--trace", k},
      {"run", src(kMlp), "--scheme", "no_overlap", "--graphviz", k, "--trace", d.path.string() + "/./k.json"},
      {"tune", "--hardware", "a800-8x-nvlink", "--gemm", "8192x8192x4096", "--primitive", "all_reduce", "--ranks", "4",
       "--search", "flashoverlap", "-o", k, "--export-flashoverlap", k},
  };
  for (const auto& args : cases) {
    const CliResult r = cli(args);
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::Contains("name the same file"));
    CHECK(read_text(k) == "old");
    CHECK(d.entries().size() == 1);  // no temporary left behind
  }
  // Through a symbolic link: the link and its target are one file.
  fs::create_symlink("k.json", d.file("link.json"));
  const CliResult r = cli_unchecked({src(kMlp), "--scheme", "no_overlap", "-o", d.file("link.json"), "--trace", k});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("-o " + d.file("link.json")) && Catch::Contains("--trace " + k));
  CHECK(read_text(k) == "old");
  // A sweep's -o and its checkpoint FILE.partial.
  const CliResult s = cli({"sweep", src(kMlp), "--sweep", "workload.tokens=4096", "-o", d.file("s.csv"), "--plot",
                     d.file("s.csv.partial")});
  CHECK(s.rc == 2);
  CHECK_THAT(s.err, Catch::Contains("name the same file"));
}

TEST_CASE("a symbolic link given as an output is written through, the link kept", "[harden2][outputs]") {
  TempDir d("harden");
  fs::create_directories(d.path / "real");
  fs::create_symlink("real/target.txt", d.file("link.txt"));
  const CliResult r = cli_unchecked({src(kMlp), "--scheme", "no_overlap", "--format", "csv", "-o", d.file("link.txt")});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(fs::is_symlink(d.file("link.txt")));
  CHECK(read_text((d.path / "real" / "target.txt").string()).rfind("scenario,", 0) == 0);
  // Nothing else appeared beside the link or the target.
  CHECK(d.entries().size() == 2);
}

TEST_CASE("a named pipe or a character device is written in place, never replaced", "[harden2][outputs]") {
  TempDir d("harden");
  const std::string fifo = d.file("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // No reader: refused at once (no hang), the pipe stays a pipe.
  const CliResult none = cli_unchecked({src(kMlp), "--scheme", "no_overlap", "-o", fifo});
  CHECK(none.rc == 2);
  CHECK_THAT(none.err, Catch::Contains("named pipe with no reader"));
  CHECK(is_fifo(fifo));
  // /dev/null: written in place (exit 0) and still the device.
  const CliResult null = cli_unchecked({src(kMlp), "--scheme", "no_overlap", "-o", "/dev/null"});
  CHECK(null.rc == 0);
  CHECK(null.out.empty());
  struct stat st {};
  REQUIRE(::stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  // /dev/full: the write fails with the OS's own error, exit 2.
  if (fs::exists("/dev/full")) {
    const CliResult full = cli_unchecked({src(kMlp), "--scheme", "no_overlap", "-o", "/dev/full"});
    CHECK(full.rc == 2);
    CHECK_THAT(full.err, Catch::Contains(std::strerror(ENOSPC)));
    REQUIRE(::stat("/dev/full", &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
  }
}

TEST_CASE("an output that is a directory or empty is refused with the OS error, exit 2", "[harden2][outputs]") {
  TempDir d("harden");
  fs::create_directories(d.path / "out");
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"run", src(kMlp), "--scheme", "no_overlap", "-o", d.file("out")},
           {"validate", "--papers", "--source", "dtp", "-o", d.file("out")}}) {
    const CliResult r = cli(args);
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::Contains("is a directory"));
    CHECK_THAT(r.err, !Catch::Contains("Success"));
  }
  const CliResult empty = cli_unchecked({src(kMlp), "--scheme", "no_overlap", "-o", ""});
  CHECK(empty.rc == 2);
  CHECK_THAT(empty.err, Catch::Contains("-o ''") && Catch::Contains("empty path"));
  CHECK(empty.out.empty());
  // validate DIR --record with validation.json a directory.
  const std::string results = src("tests/data/calibrate/fixture-h100");
  if (fs::exists(results)) {
    fs::copy(results, d.path / "res", fs::copy_options::recursive);
    std::error_code ec;
    fs::remove(d.path / "res" / "validation.json", ec);
    fs::create_directories(d.path / "res" / "validation.json");
    const CliResult v = cli({"validate", d.file("res"), "--record"});
    CHECK(v.rc == 2);
    CHECK_THAT(v.err, Catch::Contains("validation.json") && Catch::Contains("is a directory"));
  }
}

TEST_CASE("numbers are read as written: decimal, never octal, hex, quoted or tagged", "[harden2][numbers]") {
  // Leading zeros are decimal, everywhere.
  CHECK(overlap::parse_decimal_int("020000") == 20000);
  CHECK(overlap::parse_decimal_int("0132") == 132);
  CHECK(overlap::parse_decimal_int("-007") == -7);
  CHECK(!overlap::parse_decimal_int("0x10"));
  CHECK(!overlap::parse_decimal_int("0o17"));
  CHECK(!overlap::parse_decimal_int("1_000"));
  CHECK(!overlap::parse_decimal_int("99999999999999999999"));
  CHECK(overlap::parse_decimal_real("0.5e1") == 5.0);
  CHECK(!overlap::parse_decimal_real(".nan"));
  CHECK(!overlap::parse_decimal_real(".inf"));
  CHECK(!overlap::parse_decimal_real("0x1p3"));
  overlap::sim::ScenarioOptions o;
  o.sets = {"workload.m=0020"};
  const auto sc = overlap::sim::load_scenario_text(kGemm, "h.yaml", o);
  CHECK(std::get<overlap::sim::GemmCollective>(sc.workload.shape).m == 20);
  // A profile's sm_count: 0132 is 132 SMs.
  const auto hw = overlap::load_profile("h100-sxm-8x-nvswitch", overlap::default_hardware_dir(), {"gpu.sm_count=0132"});
  CHECK(hw.gpu.sm_count == 132);

  // Quoted strings, block scalars and tags are not numbers, in a file or a --set.
  for (const std::string v : {"\"2048\"", "'2048'", "!foo 2048", "!!int 2048", "!!python/object:os.system 1"}) {
    std::string text = kGemm;
    text.replace(text.find("m: 2048"), 7, "m: " + v);
    const std::string e = load_error(text);
    INFO(v << " -> " << e);
    CHECK_THAT(e, Catch::Contains("h.yaml:5") && Catch::Contains("workload.m"));
    const std::string s = load_error(kGemm, {"workload.m=" + v});
    CHECK_THAT(s, Catch::Contains("--set workload.m=" + v) && Catch::Contains("workload.m"));
  }
  std::string block = kGemm;
  block.replace(block.find("m: 2048"), 7, "m: |\n    2048");
  CHECK_THAT(load_error(block), Catch::Contains("workload.m") && Catch::Contains("quoted string or block scalar"));
  // The CLI's number options: 010 is ten.
  const CliResult r = cli({"tune", "--hardware", "a800-8x-nvlink", "--gemm", "8192x8192x4096", "--primitive", "all_reduce",
                     "--ranks", "010"});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("--ranks 10"));
  const CliResult hex = cli({"tune", "--hardware", "a800-8x-nvlink", "--gemm", "8192x8192x4096", "--primitive",
                       "all_reduce", "--ranks", "0x4"});
  CHECK(hex.rc == 2);
  CHECK_THAT(hex.err, Catch::Contains("--ranks") && Catch::Contains("decimal"));
}

TEST_CASE("everything in a file is read or refused: documents, nulls", "[harden2][numbers]") {
  CHECK_THAT(load_error(kGemm + "---\nfidelity: steps\n"), Catch::Contains("h.yaml:11") && Catch::Contains("second YAML document"));
  CHECK_THAT(load_error(kGemm + "...\nfidelity: steps\n"), Catch::Contains("h.yaml:12") && Catch::Contains("second YAML document"));
  CHECK(load_error(kGemm + "...\n# a comment after the end\n").empty());
  std::string null_schemes = kGemm.substr(0, kGemm.find("schemes:")) + "schemes: ~\n";
  CHECK_THAT(load_error(null_schemes), Catch::Contains("h.yaml:9") && Catch::Contains("schemes: has no value"));
  std::string empty_fidelity = kGemm + "fidelity:\n";
  CHECK_THAT(load_error(empty_fidelity), Catch::Contains("fidelity: has no value"));
}

TEST_CASE("invalid UTF-8 is refused with file, line and key, or replaced in a name from a path",
          "[harden2][internal]") {
  std::string bad = kGemm + "name: \"x\xff\"\n";
  CHECK_THAT(load_error(bad), Catch::Contains("h.yaml:11") && Catch::Contains("name") && Catch::Contains("UTF-8"));
  CHECK_THAT(load_error(kGemm, {"name=\xc3\x28"}), Catch::Contains("--set name=") && Catch::Contains("UTF-8"));
  // A scenario file whose name is not UTF-8 (no `name:`): JSON output, exit 0, U+FFFD in the name.
  TempDir d("harden");
  const std::string path = d.file("\xff.yaml");
  write_text(path, kGemm);
  const CliResult r = cli_unchecked({path, "--format", "json"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("\xEF\xBF\xBD"));
  CHECK(overlap::utf8_or_replaced("a\xed\xa0\x80z") == "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDz");  // a surrogate
  CHECK(overlap::utf8_or_replaced("\xe2\x82\xac") == "\xe2\x82\xac");
}

TEST_CASE("alias expansion, sweep grids and key checks are bounded", "[harden2][budget]") {
  // Nine nested aliases of nine: 9^10 nodes when expanded. Refused from the parser's events, at once.
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n";
  const std::string names = "abcdefghij";
  for (std::size_t i = 1; i < names.size(); ++i) {
    const std::string p(1, names[i - 1]), c(1, names[i]);
    bomb += c + ": &" + c + " [";
    for (int k = 0; k < 9; ++k) bomb += (k ? ", *" : "*") + p;
    bomb += "]\n";
  }
  bomb += "workload: *j\n";
  CHECK_THAT(load_error(bomb), Catch::Contains("more than 1000000 YAML nodes"));
  // A few aliases are fine (well under the budget).
  CHECK(load_error("hardware: &h h100-sxm-8x-nvswitch\ndescription: *h\n"
                   "workload: {kind: gemm_collective, tp: 4, m: 2048, n: 4096, k: 2048, primitive: all_reduce}\n")
            .empty());

  // An alias inside the node it names is a cycle: refused at its line, never walked.
  CHECK_THAT(load_error(kGemm + "sweep:\n  workload.m: &s [*s]\n"),
             Catch::Contains("h.yaml:12") && Catch::Contains("sweep.workload.m.0") && Catch::Contains("recursive"));
  CHECK_THAT(load_error(kGemm, {"workload.m=&a [1, *a]"}),
             Catch::Contains("--set workload.m=&a [1, *a]") && Catch::Contains("recursive"));

  // A grid of 1000^3 points is refused with its size, before it is expanded.
  std::vector<overlap::sim::SweepAxis> axes(3);
  for (int a = 0; a < 3; ++a) {
    axes[static_cast<std::size_t>(a)].keys = {"workload.m"};
    for (int v = 0; v < 1000; ++v) axes[static_cast<std::size_t>(a)].values.push_back({std::to_string(v + 1)});
  }
  CHECK(overlap::sim::sweep_grid_size(axes) == overlap::sim::kMaxSweepPoints + 1);
  try {
    (void)overlap::sim::make_sweep_grid(axes, "g.yaml");
    FAIL("a 1000^3 grid was expanded");
  } catch (const overlap::InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("1000 x 1000 x 1000 = 1000000000 points") && Catch::Contains("100000"));
  }
  // Unknown swept keys are found with one load per axis, not one per point.
  const CliResult r = cli({"sweep", src(kMlp), "--sweep", "workload.tokns=1,2,3,4,5,6,7,8,9,10", "--sweep",
                     "hardware.gpu.sm_cont=1,2,3,4,5,6,7,8,9,10", "--sweep", "workload.tokens=1024,2048"});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("not a key of the scenario") && Catch::Contains("tokns"));

  // 100,000 keys in one map: checked with a hash set, well within a second.
  std::string many = kGemm + "sweep:\n";
  for (int i = 0; i < 100000; ++i) many += "  k" + std::to_string(i) + ": [1]\n";
  many += "  k5: [1]\n";
  const auto start = std::chrono::steady_clock::now();
  CHECK_THAT(load_error(many), Catch::Contains("sweep.k5: key given twice"));
  // (Linear: about 2 s here, most of it parsing; the quadratic check took 20 s without sanitizers.)
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
}

TEST_CASE("work beyond the documented budgets is refused up front, naming the estimate and the limit",
          "[harden2][budget]") {
  std::string huge = kGemm;
  for (const char* key : {"m: 2048", "n: 4096", "k: 2048"}) {
    const auto at = huge.find(key);
    huge.replace(at, std::string(key).size(), std::string(key).substr(0, 3) + "16777216");
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string e = load_error(huge);
  CHECK_THAT(e, Catch::Contains("h.yaml:5: workload.m") && Catch::Contains("GEMM tiles") &&
                    Catch::Contains(std::to_string(overlap::sim::kMaxGemmTilesPerRank)));
  const CliResult tune = cli({"tune", "--hardware", "a800-8x-nvlink", "--gemm", "16777216x16777216x16777216", "--primitive",
                        "all_reduce", "--ranks", "4", "--search", "flashoverlap"});
  CHECK(tune.rc == 2);
  CHECK_THAT(tune.err, Catch::Contains("--gemm 16777216x16777216x16777216") && Catch::Contains("GEMM tiles"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  // TP beyond the simulated-rank budget, on hardware that has the GPUs.
  const std::string tp = load_error(kGemm, {"hardware.fabric.num_gpus=65536", "workload.tp=65536"});
  CHECK_THAT(tp, Catch::Contains("workload.tp") && Catch::Contains("65536 ranks") && Catch::Contains("512"));
  // Just inside: 512 ranks load.
  CHECK(load_error(kGemm, {"hardware.fabric.num_gpus=512", "workload.tp=512"}).empty());
}

TEST_CASE("one topology check for every command: errors name the profile file, line and key",
          "[harden2][topology]") {
  const std::string base =
      "name: ex\n"                                              // 1
      "gpu: {name: H100, sm_count: 132, peak_tflops: {bf16: 989}, hbm_bandwidth_gbps: 3350}\n"  // 2
      "fabric:\n"                                               // 3
      "  topology: explicit\n"                                  // 4
      "  num_gpus: 2\n"                                         // 5
      "  links: {nvlink: {bandwidth_gbps: 450, latency_us: 1}}\n"  // 6
      "  nodes:\n"                                              // 7
      "    - {name: g0, kind: gpu, gpu: 0}\n"                   // 8
      "    - {name: g1, kind: gpu, gpu: 1}\n"                   // 9
      "    - {name: sw, kind: nvswitch}\n"                      // 10
      "  edges:\n"                                              // 11
      "    - {from: g0, to: sw, link_class: nvlink}\n"          // 12
      "    - {from: g1, to: sw, link_class: nvlink}\n";         // 13
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string t = base;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  struct Case {
    std::string text, where, what;
  };
  const std::vector<Case> cases = {
      {with("{from: g1, to: sw", "{from: g1, to: g1"), ":13: fabric.edges.1.to", "to itself"},
      {with("    - {from: g1, to: sw, link_class: nvlink}\n", ""), ":9: fabric.nodes.1", "no path of edges"},
      {with("{name: g1, kind: gpu, gpu: 1}", "{name: g1, kind: gpu, gpu: 0}"), ":9: fabric.nodes.1.gpu", "already node"},
      {with("link_class: nvlink}\n", "link_class: nvlink, bidirectional: false}\n"), ":12: fabric.edges.0", "one-way"},
      {with("num_gpus: 2", "num_gpus: 3"), ":5: fabric.num_gpus", "2 GPU nodes"},
  };
  TempDir d("harden");
  write_text(d.file("ok.yaml"), base);
  CHECK(cli({"profile", "show", d.file("ok.yaml")}).rc == 0);
  int n = 0;
  for (const Case& c : cases) {
    const std::string profile = d.file("p" + std::to_string(n) + ".yaml");
    const std::string scenario = d.file("s" + std::to_string(n++) + ".yaml");
    write_text(profile, c.text);
    write_text(scenario, "hardware: " + profile +
                        "\nworkload: {kind: gemm_collective, tp: 2, m: 1024, n: 1024, k: 1024, primitive: all_reduce}\n");
    std::string err;
    try {
      (void)overlap::load_profile_file(profile);
    } catch (const overlap::InputError& e) {
      err = e.what();
    }
    INFO(c.what << ": " << err);
    CHECK_THAT(err, Catch::Contains(profile + c.where) && Catch::Contains(c.what));
    // `run` refuses it alike, naming the profile (not the scenario).
    const CliResult r = cli_unchecked({scenario});
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::Contains(profile + c.where) && Catch::Contains(c.what));
  }
}

TEST_CASE("loose flags: --algo -1, a repeated --param, --set errors name the --set", "[harden2][flags]") {
  const CliResult algo = cli({"tune", "--hardware", "a800-8x-nvlink", "--gemm", "8192x8192x4096", "--primitive", "all_reduce",
                        "--ranks", "4", "--search", "flashoverlap", "--algo", "-1"});
  CHECK(algo.rc == 2);
  CHECK_THAT(algo.err, Catch::Contains("--algo"));
  const CliResult param = cli_unchecked({src(kMlp), "--scheme", "data_slicing", "--param", "chunks=4", "--param", "chunks=8"});
  CHECK(param.rc == 2);
  CHECK_THAT(param.err, Catch::Contains("--param chunks") && Catch::Contains("given twice"));
  // A value --set wrote, refused by the loader: the message names the --set and its text.
  for (const std::string a : {"workload.tokens=\"8192\"", "workload.tokens=08192x", "schemes=~", "hardware.gpu.sm_count=0x84"}) {
    const CliResult r = cli_unchecked({src(kMlp), "--set", a});
    INFO(a << " -> " << r.err);
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::Contains("--set " + a));
    CHECK_THAT(r.err, !Catch::Contains("llama3-70b-tp8-mlp.yaml:"));
  }
}
