// What a new user types first: --hardware / --tp / --tokens on the commands that run a scenario,
// the overrides in every output's header, run's closing lines, sweep axes from the command line,
// profile YAML that loads back, -o meaning --output, the validate verdict.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cost_model/profile_loader.hpp"
#include "sim/report.hpp"
#include "sim/sweep.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"
#include "tools/cli.hpp"
#include "tools/cmd_validate.hpp"
#include "tools/input_paths.hpp"

namespace fs = std::filesystem;

namespace {

using namespace overlap::test;  // cli, CliResult, TempDir, read_text

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

nlohmann::json run_json(std::vector<std::string> args) {
  args.push_back("--format");
  args.push_back("json");
  const CliResult r = cli_unchecked(args);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("the shortcuts --tp, --tokens and --hardware are the --set they stand for", "[cli][first_hour]") {
  const nlohmann::json by_flag = run_json({"--tp", "4", "--tokens", "4096", "--hardware", "a800-8x-nvlink"});
  const nlohmann::json by_set =
      run_json({"--set", "hardware=a800-8x-nvlink", "--set", "workload.tp=4", "--set", "workload.tokens=4096"});
  CHECK(by_flag["workload"] == by_set["workload"]);
  CHECK(by_flag["workload"]["tp"] == 4);
  CHECK(by_flag["workload"]["tokens"] == 4096);
  CHECK(by_flag["hardware"] == "a800-8x-nvlink");
  CHECK(by_flag["results"] == by_set["results"]);
  // The header names what was overridden, as typed: the --set forms, the flags as the --set they mean.
  // The flags in a fixed order (hardware, tp, tokens), after any --set.
  CHECK(by_flag["scenario"] == "llama3-70b-tp8-mlp (hardware=a800-8x-nvlink workload.tp=4 workload.tokens=4096)");
  CHECK(by_flag["overrides"] == nlohmann::json({"hardware=a800-8x-nvlink", "workload.tp=4", "workload.tokens=4096"}));
  CHECK(by_set["scenario"] == by_flag["scenario"]);
  // Nothing overridden: the scenario's own name and an empty list.
  const nlohmann::json plain = run_json({});
  CHECK(plain["scenario"] == "llama3-70b-tp8-mlp");
  CHECK(plain["overrides"] == nlohmann::json::array());
}

TEST_CASE("the shortcut --tokens on attention and transformer workloads is batch 1 x seq N", "[cli][first_hour]") {
  const nlohmann::json j = run_json({"llama3-8b-tp4-transformer", "--tokens", "2048"});
  CHECK(j["workload"]["batch"] == 1);
  CHECK(j["workload"]["seq"] == 2048);
  CHECK(j["overrides"] == nlohmann::json({"workload.batch=1", "workload.seq=2048"}));
}

TEST_CASE("an error in a shortcut names the flag and its text", "[cli][first_hour]") {
  const CliResult tp = cli_unchecked({"--tp", "3"});
  CHECK(tp.rc == 2);
  CHECK(contains(tp.err, "not divisible by tp = 3"));
  CHECK(contains(tp.err, "(with --tp 3)"));
  CHECK_FALSE(contains(tp.err, "--set"));
  const CliResult tokens = cli_unchecked({"--tokens", "100"});
  CHECK(tokens.rc == 2);
  CHECK(contains(tokens.err, "error: --tokens 100: workload.tokens: 100 is not divisible by tp = 8"));
  const CliResult hw = cli_unchecked({"--hardware", "no-such-gpu"});
  CHECK(hw.rc == 2);
  CHECK(contains(hw.err, "error: --hardware no-such-gpu: hardware: unknown hardware profile 'no-such-gpu'"));
  CHECK(cli_unchecked({"--tp", "x"}).rc == 2);  // CLI11: not a number
  const CliResult decode = cli_unchecked({"dtp-a1", "--tokens", "8"});
  CHECK(decode.rc == 2);
  CHECK(contains(decode.err, "--tokens 8: a decode_stack workload"));
}

TEST_CASE("sweep and tune SCENARIO take the shortcuts and show them in every row", "[cli][first_hour]") {
  const CliResult sweep = cli({"sweep", "--tp", "4", "--only-axes", "--sweep", "workload.tokens=2048"});
  INFO(sweep.err);
  REQUIRE(sweep.rc == 0);
  std::istringstream rows(sweep.out);
  std::string line;
  std::getline(rows, line);  // header
  int n = 0;
  while (std::getline(rows, line)) {
    CHECK(line.rfind("2048,llama3-70b-tp8-mlp (workload.tp=4),", 0) == 0);
    ++n;
  }
  CHECK(n >= 2);
  const CliResult tune = cli({"tune", "--tp", "4", "--hardware", "h200-sxm-8x-nvswitch", "--format", "json", "-j", "1"});
  INFO(tune.err);
  REQUIRE(tune.rc == 0);
  CHECK(contains(tune.out, "llama3-70b-tp8-mlp (hardware=h200-sxm-8x-nvswitch workload.tp=4)"));
  // The operator form has --ranks and --gemm for these.
  CHECK(cli({"tune", "--hardware", "a800-8x-nvlink", "--gemm", "8192x8192x4096", "--primitive", "all_reduce", "--ranks",
             "4", "--tp", "4"})
            .rc == 2);
}

TEST_CASE("run ends with the best scheme and the schemes that did not apply", "[cli][first_hour]") {
  const CliResult r = cli_unchecked({});
  REQUIRE(r.rc == 0);
  const nlohmann::json j = run_json({});
  // The best row is the one with the highest speedup.
  double best = 0;
  std::string best_scheme;
  for (const auto& row : j["results"])
    if (row["speedup_vs_no_overlap"].get<double>() > best) {
      best = row["speedup_vs_no_overlap"].get<double>();
      best_scheme = row["scheme"].get<std::string>();
    }
  CHECK(j["best"]["scheme"] == best_scheme);
  CHECK(j["best"]["speedup_vs_baseline"].get<double>() == best);
  CHECK(contains(r.out, fmt::format("best: {}", best_scheme)));
  CHECK(contains(r.out, fmt::format("{:.3f}x vs no_overlap", best)));
  // flashoverlap and dtp are absent from an MLP run, and the table says where they apply.
  for (const auto& row : j["results"]) {
    CHECK(row["scheme"] != "flashoverlap");
    CHECK(row["scheme"] != "dtp");
  }
  bool fo = false, dtp = false;
  for (const auto& s : j["not_applicable"]) {
    if (s["scheme"] == "flashoverlap") {
      fo = true;
      CHECK(s["applies_to"] == "gemm_collective with all_reduce/reduce_scatter/all_to_all, tp >= 2");
    }
    if (s["scheme"] == "dtp") {
      dtp = true;
      CHECK(s["applies_to"] == "decode_stack");
    }
  }
  CHECK(fo);
  CHECK(dtp);
  CHECK(contains(r.out, "not applicable to this mlp_tpsp tp=8 workload: flashoverlap (for gemm_collective with"));
  // --scheme on a workload it does not apply to says where it does.
  const CliResult only = cli_unchecked({"--scheme", "flashoverlap"});
  CHECK(only.rc == 2);
  CHECK(contains(only.err, "'flashoverlap' does not apply to a mlp_tpsp tp=8 workload; it applies to gemm_collective with "
                           "all_reduce/reduce_scatter/all_to_all, tp >= 2"));
}

TEST_CASE("scheme_applies_to agrees with every scheme's applies", "[cli][first_hour]") {
  for (const overlap::sim::SchemeInfo& s : overlap::sim::scheme_registry()) {
    const std::string text = overlap::sim::scheme_applies_to(s);
    INFO(s.name << ": " << text);
    CHECK_FALSE(text.empty());
    CHECK(text != "no workload");
  }
  CHECK(overlap::sim::scheme_applies_to(*overlap::sim::find_scheme("no_overlap")) == "every workload");
}

TEST_CASE("sweep axes from the command line: ranges, --no-axis, --only-axes", "[sweep][first_hour]") {
  using overlap::sim::expand_sweep_range;
  CHECK(expand_sweep_range("1024..16384x2", "k") == std::vector<std::string>{"1024", "2048", "4096", "8192", "16384"});
  CHECK(expand_sweep_range("1024..16384", "k") == expand_sweep_range("1024..16384x2", "k"));
  CHECK(expand_sweep_range("1..100x10", "k") == std::vector<std::string>{"1", "10", "100"});
  CHECK(expand_sweep_range("0..64+16", "k") == std::vector<std::string>{"0", "16", "32", "48", "64"});
  CHECK(expand_sweep_range("3..10+4", "k") == std::vector<std::string>{"3", "7"});
  CHECK(expand_sweep_range("../hardware/x.yaml", "hardware") == std::vector<std::string>{"../hardware/x.yaml"});
  CHECK(expand_sweep_range("ring", "k") == std::vector<std::string>{"ring"});
  CHECK_THROWS_WITH(expand_sweep_range("8..1", "k"), Catch::Contains("ends (1) before it starts (8)"));
  CHECK_THROWS_WITH(expand_sweep_range("1..8x1", "k"), Catch::Contains("factor of at least 2"));
  CHECK_THROWS_WITH(expand_sweep_range("1..8+0", "k"), Catch::Contains("at least 1"));
  CHECK_THROWS_WITH(expand_sweep_range("1..x", "k"), Catch::Contains("whole numbers"));
  CHECK_THROWS_WITH(expand_sweep_range("0..100000+1", "k"), Catch::Contains("more than 4096 values"));
  // Near the top of int64 the next value is not computed past B.
  CHECK(expand_sweep_range("4611686018427387904..9000000000000000000x2", "k").size() == 1);
  const auto flag = overlap::sim::parse_sweep_flag("workload.tokens=512,2048..8192x4");
  CHECK(flag.values == std::vector<std::vector<std::string>>{{"512"}, {"2048"}, {"8192"}});

  // The default scenario sweeps NVLink bandwidth and tokens; --no-axis drops one, and --plot's
  // error names the axes.
  const CliResult three = cli({"sweep", "--sweep", "workload.tp=2,4", "--plot", "x.png"});
  if (three.rc == 2 && contains(three.err, "varies 3")) {
    CHECK(contains(three.err, "hardware.fabric.links.nvlink.bandwidth_gbps, workload.tokens, workload.tp"));
  }
  const CliResult dropped = cli({"sweep", "--no-axis", "hardware.fabric.links.nvlink.bandwidth_gbps"});
  REQUIRE(dropped.rc == 0);
  CHECK(dropped.out.rfind("workload.tokens,scenario,", 0) == 0);
  const CliResult only = cli({"sweep", "--only-axes", "--sweep", "workload.tp=2..8x2"});
  REQUIRE(only.rc == 0);
  CHECK(only.out.rfind("workload.tp,scenario,", 0) == 0);
  CHECK(contains(only.out, "\n2,"));
  CHECK(contains(only.out, "\n4,"));
  CHECK(contains(only.out, "\n8,"));
  const CliResult unknown = cli({"sweep", "--no-axis", "workload.k"});
  CHECK(unknown.rc == 2);
  CHECK(contains(unknown.err, "--no-axis workload.k: the scenario does not sweep this key (its axes: "
                              "hardware.fabric.links.nvlink.bandwidth_gbps, workload.tokens)"));
  const CliResult none = cli({"sweep", "--only-axes"});
  CHECK(none.rc == 2);
  CHECK(contains(none.err, "every axis was dropped"));
}

TEST_CASE("profile show --format yaml loads back as the same profile, for every built-in", "[cli][first_hour][profile]") {
  TempDir tmp("first-hour");
  const auto names = overlap::builtin_profile_names(overlap::default_hardware_dir());
  REQUIRE(names.size() >= 13);
  for (const std::string& name : names) {
    INFO(name);
    const CliResult yaml = cli({"profile", "show", name, "--format", "yaml"});
    REQUIRE(yaml.rc == 0);
    const std::string file = tmp.file(name + ".yaml");
    std::ofstream(file) << yaml.out;
    const CliResult original = cli({"profile", "show", name, "--format", "json"});
    const CliResult reloaded = cli({"profile", "show", file, "--format", "json"});
    REQUIRE(original.rc == 0);
    REQUIRE(reloaded.rc == 0);
    nlohmann::json a = nlohmann::json::parse(original.out), b = nlohmann::json::parse(reloaded.out);
    CHECK(a["source_file"] != b["source_file"]);
    a.erase("source_file");
    b.erase("source_file");
    CHECK(a == b);
    // And its YAML again is the same text but for the line naming the file it came from.
    const CliResult again = cli({"profile", "show", file, "--format", "yaml"});
    CHECK(again.out.substr(again.out.find('\n')) == yaml.out.substr(yaml.out.find('\n')));
  }
}

TEST_CASE("H200 and B200 HGX profiles carry their published figures", "[cli][first_hour][profile]") {
  const auto h200 = overlap::load_profile("h200-sxm-8x-nvswitch", overlap::default_hardware_dir());
  CHECK(h200.gpu.sm_count == 132);
  CHECK(h200.gpu.hbm_bandwidth_gbps == 4800);
  CHECK(h200.gpu.peak_tflops.at("bf16") == 989);
  CHECK(h200.fabric.links.at("nvlink").bandwidth_gbps == 450);
  CHECK(h200.fabric.num_gpus == 8);
  const auto b200 = overlap::load_profile("b200-hgx-8x-nvswitch", overlap::default_hardware_dir());
  CHECK(b200.gpu.sm_count == 148);
  CHECK(b200.gpu.hbm_bandwidth_gbps == 8000);
  CHECK(b200.gpu.peak_tflops.at("bf16") == 2250);
  CHECK(b200.gpu.peak_tflops.at("fp8") == 4500);
  CHECK(b200.fabric.links.at("nvlink").bandwidth_gbps == 900);
  // The same GEMM-bound MLP is faster on B200 than on H200 (2.3x the peak, 2x the NVLink).
  const nlohmann::json on_h200 = run_json({"--hardware", "h200-sxm-8x-nvswitch", "--scheme", "no_overlap"});
  const nlohmann::json on_b200 = run_json({"--hardware", "b200-hgx-8x-nvswitch", "--scheme", "no_overlap"});
  CHECK(on_b200["results"][0]["latency_us"].get<double>() < on_h200["results"][0]["latency_us"].get<double>());
}

TEST_CASE("a run on a profile with placeholder figures says so in one line", "[cli][first_hour][profile]") {
  // A shipped profile gives each guess a range: the run says which guess decides its ranking (or that
  // none does) instead of counting the profile's comments.
  const CliResult b200 = cli({"run", "--hardware", "b200-hgx-8x-nvswitch"});
  REQUIRE(b200.rc == 0);
  CHECK(contains(b200.out, "placeholder decides the ranking: transports.sm_copy.cta_gbps"));
  CHECK_FALSE(contains(b200.out, "placeholder defaults"));
  // A calibrated profile (measured curves) is not flagged.
  const CliResult calibrated =
      cli({"run", "--hardware", "calibrate/results/nvidia-h100-80gb-hbm3-vm/profile.yaml", "--tp", "4", "--tokens", "2048"});
  INFO(calibrated.err);
  if (calibrated.rc == 0) CHECK_FALSE(contains(calibrated.out, "placeholder defaults"));
  // A profile of one's own whose comments mark guesses but which gives them no ranges (the H200 file
  // without its `placeholders:` section): the count is its lines whose comment says "placeholder".
  std::string text = read_text(overlap::default_hardware_dir() + "/h200-sxm-8x-nvswitch.yaml");
  text = text.substr(0, text.find("# Guessed values"));
  TempDir dir("first-hour-placeholders");
  const std::string own = dir.write("h200-no-ranges.yaml", text);
  const CliResult h200 = cli({"run", "--hardware", own, "--scheme", "no_overlap"});
  std::istringstream in(text);
  int lines = 0;
  for (std::string line; std::getline(in, line);) {
    const auto hash = line.find('#');
    const std::string comment = hash == std::string::npos ? "" : line.substr(hash);
    lines += contains(comment, "placeholder") || contains(comment, "Placeholder") ? 1 : 0;
  }
  CHECK(lines >= 5);
  CHECK(contains(h200.out, fmt::format("h200-sxm-8x-nvswitch: {} lines of its profile mark placeholder defaults", lines)));
}

TEST_CASE("every command's -o is --output, and a written file is confirmed on stderr", "[cli][first_hour]") {
  TempDir tmp("first-hour");
  const CliResult run = cli_unchecked({"-o", tmp.file("r.txt")});
  CHECK(run.rc == 0);
  CHECK(run.out.empty());
  CHECK(run.err == "wrote " + tmp.file("r.txt") + "\n");
  CHECK(contains(read_text(tmp.file("r.txt")), "best: "));
  const CliResult coll = cli({"collective", "all_reduce", "-b", "1M", "-e", "4M", "-o", tmp.file("c.txt")});
  CHECK(coll.rc == 0);
  CHECK(coll.out.empty());
  CHECK(coll.err == "wrote " + tmp.file("c.txt") + "\n");
  const std::string table = read_text(tmp.file("c.txt"));
  CHECK(contains(table, "# Collective test starting: all_reduce_perf"));
  CHECK(contains(table, "     1048576  "));
  // nccl-tests' -o (the reduction) is --op here.
  const CliResult op = cli({"collective", "all_reduce", "-b", "1M", "-e", "1M", "--op", "max"});
  CHECK(op.rc == 0);
  CHECK(contains(op.out, "     max  "));
  const CliResult sweep = cli({"sweep", "--only-axes", "--sweep", "workload.tokens=2048", "-o", tmp.file("s.csv")});
  CHECK(sweep.rc == 0);
  CHECK(contains(sweep.err, "wrote " + tmp.file("s.csv") + "\n"));
}

TEST_CASE("collective refuses fewer than 2 ranks", "[cli][first_hour]") {
  for (const char* g : {"0", "-1", "1"}) {
    const CliResult r = cli({"collective", "all_reduce", "-g", g});
    INFO(g);
    CHECK(r.rc == 2);
    CHECK(contains(r.err, std::string("--ranks/-g: must be at least 2 (got ") + g));
    CHECK(r.out.empty());
  }
  CHECK(cli({"collective", "all_reduce", "-g", "2", "-b", "8", "-e", "8"}).rc == 0);
}

TEST_CASE("every command's --help shows defaults and examples", "[cli][first_hour]") {
  for (const char* cmd : {"run", "tune", "sweep", "collective", "validate", "schemes"}) {
    INFO(cmd);
    const CliResult r = cli({cmd, "--help"});
    CHECK(r.rc == 0);
    CHECK(contains(r.out, "Examples:\n  overlap-sim "));
    CHECK_FALSE(contains(r.out, "=[]"));
  }
  CHECK(contains(cli_unchecked({"--help"}).out, "--format TEXT:{table,json,csv}=table"));
  CHECK(contains(cli({"sweep", "--help"}).out, "--format TEXT=csv"));
  CHECK(contains(cli({"collective", "--help"}).out, "-b,--minbytes TEXT=8"));
  CHECK(contains(cli({"tune", "--help"}).out, "--budget INT=40"));
}

TEST_CASE("validate puts its verdict first and flags suspicious GEMM points", "[cli][first_hour][validate]") {
  for (const char* dir : {"calibrate/results/nvidia-h100-80gb-hbm3-vm", "tests/data/calibrate/fixture-h100"}) {
    INFO(dir);
    const CliResult r = cli({"validate", dir});
    REQUIRE(r.rc == 0);
    const auto rep = overlap::tools::validate_dir(overlap::tools::resolve_input_path(dir));
    CHECK(r.out.rfind("verdict: " + rep.verdict + ": ", 0) == 0);
    REQUIRE(rep.recorded_median_pct);
    std::vector<std::string> missed;
    for (const auto& g : rep.groups) {
      // Each group's line: its result against its target and record, and the rows beyond its tolerance.
      CHECK(contains(r.out, fmt::format("  {}", g.benchmark)));
      CHECK(g.target_median_pct == overlap::tools::accuracy_target_pct(g.benchmark));
      const bool miss = g.scored > 0 && g.target_median_pct && g.median_abs_error_pct > *g.target_median_pct;
      CHECK(contains(g.result, "MISS") == miss);
      if (miss) missed.push_back(g.benchmark);
      // The committed results are what validation.json recorded: nothing regressed.
      CHECK_FALSE(contains(g.result, "REGRESSED"));
      int off = 0;
      for (const auto& row : g.rows) {
        CHECK(row.off == (!row.fitted && std::fabs(row.error_pct) > g.tolerance_pct));
        off += row.off ? 1 : 0;
      }
      CHECK(off == g.off_rows);
      CHECK(g.tolerance_pct >= overlap::tools::kOffFloorPct);
    }
    CHECK(rep.verdict == (missed.empty() ? "PASS" : "MISS"));
    for (const auto& m : missed) CHECK(contains(rep.verdict_detail, m + " "));
  }
  // The H100's GEMMs on k SMs are the one group above its 5 % target (5.11 %).
  const auto h100 = overlap::tools::validate_dir(overlap::tools::resolve_input_path("calibrate/results/nvidia-h100-80gb-hbm3-vm"));
  CHECK(h100.verdict == "MISS");
  CHECK(h100.verdict_detail == "gemm_sm 5.11 % > target 5 %");
}

TEST_CASE("validate says REGRESSED when a median exceeds its record", "[cli][first_hour][validate]") {
  TempDir tmp("first-hour");
  const fs::path dir = tmp.path / "h100";
  fs::copy(overlap::tools::resolve_input_path("calibrate/results/nvidia-h100-80gb-hbm3-vm"), dir, fs::copy_options::recursive);
  nlohmann::json rec = nlohmann::json::parse(read_text((dir / "validation.json").string()));
  rec["median_abs_error_pct"]["transfer"] = 0.1;  // recorded far below today's 1.24 %
  std::ofstream(dir / "validation.json") << rec.dump(2);
  const auto rep = overlap::tools::validate_dir(dir.string());
  CHECK(rep.verdict == "MISS, REGRESSED");
  CHECK(contains(rep.verdict_detail, "transfer 1.24 % > recorded 0.10 % + 0.5"));
  for (const auto& g : rep.groups)
    if (g.benchmark == "transfer") CHECK(g.result == "REGRESSED");
}

TEST_CASE("validate reports a GEMM measured slower than the same GEMM with 4x its K", "[cli][first_hour][validate]") {
  TempDir tmp("first-hour");
  const fs::path dir = tmp.path / "fixture";
  fs::copy(overlap::tools::resolve_input_path("tests/data/calibrate/fixture-h100"), dir, fs::copy_options::recursive);
  nlohmann::json doc = nlohmann::json::parse(read_text((dir / "measurements.json").string()));
  int patched = 0;
  for (auto& m : doc["measurements"]) {
    const auto& c = m["config"];
    // 1024^3 at 7 us: slower than 1024x1024x4096 (6.2 us in the fixture) with 4x its K.
    if (m["benchmark"] == "gemm" && c["m"] == 1024 && c["n"] == 1024 && c["k"] == 1024 && patched++ == 0)
      for (const char* k : {"min", "median", "mean", "max"}) m["time_us"][k] = 7.0;
  }
  REQUIRE(patched >= 1);
  std::ofstream(dir / "measurements.json") << doc.dump(2);
  const auto rep = overlap::tools::validate_dir(dir.string());
  REQUIRE(rep.suspicious.size() == 1);
  CHECK(contains(rep.suspicious[0], "gemm 1024x1024x1024 bf16"));
  CHECK(contains(rep.suspicious[0], "measured 7.0 us, slower than 1024x1024x4096 bf16 with 4x its K"));
  const CliResult r = cli({"validate", dir.string()});
  REQUIRE(r.rc == 0);
  CHECK(contains(r.out, "  suspicious: gemm 1024x1024x1024 bf16"));
  CHECK(contains(r.out, "SUSPICIOUS: measured 7.0 us"));
  // The unpatched fixture has none.
  CHECK(overlap::tools::validate_dir(overlap::tools::resolve_input_path("tests/data/calibrate/fixture-h100")).suspicious.empty());
}
