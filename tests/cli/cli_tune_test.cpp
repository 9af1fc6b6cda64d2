// The tuning command line: `tune` (operator and scenario level), `run --param`, `--wide` and the
// 120-column table, `profile list`, `--version`, unknown commands, examples in every --help.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cost_model/profile_loader.hpp"
#include "sim/report.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"
#include "tools/cli.hpp"
#include "tools/export_production.hpp"

namespace fs = std::filesystem;

namespace {

using namespace overlap::test;  // cli, CliResult, TempFile, read_text

const std::vector<std::string> kA800 = {"tune",        "--hardware", "a800-8x-nvlink", "--gemm", "8192x8192x4096",
                                        "--dtype",     "fp16",       "--primitive",    "all_reduce", "--ranks",
                                        "4"};

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

}  // namespace

TEST_CASE("tune --format json has exactly the documented keys", "[cli][tune]") {
  for (const char* search : {"flashoverlap", "optimal", "exhaustive", "simulate"}) {
    INFO(search);
    const CliResult r = cli(with(kA800, {"--search", search, "--format", "json", "--budget", "12"}));
    INFO(r.err);
    REQUIRE(r.rc == 0);
    const auto j = nlohmann::json::parse(r.out);
    for (const char* key : {"groups_waves", "groups_tiles", "predicted_us", "simulated_us", "no_overlap_us",
                            "speedup_vs_no_overlap", "search", "candidates", "search_ms"})
      CHECK(j.contains(key));
    CHECK(j["search"] == search);
    const auto waves = j["groups_waves"].get<std::vector<int>>();
    const auto tiles = j["groups_tiles"].get<std::vector<std::int64_t>>();
    CHECK(std::accumulate(waves.begin(), waves.end(), 0) == j["waves"].get<int>());
    CHECK(std::accumulate(tiles.begin(), tiles.end(), std::int64_t{0}) == j["tiles"].get<std::int64_t>());
    CHECK(j["speedup_vs_no_overlap"].get<double>() ==
          Approx(j["no_overlap_us"].get<double>() / j["simulated_us"].get<double>()));
    REQUIRE(!j["candidates"].empty());
    for (const auto& c : j["candidates"]) {
      CHECK(c.contains("predicted_us"));
      CHECK(c.contains("simulated_us"));
      if (!c["simulated_us"].is_null())
        CHECK(c["simulated_minus_predicted_us"].get<double>() ==
              Approx(c["simulated_us"].get<double>() - c["predicted_us"].get<double>()).margin(1e-6));
    }
  }
  // The A800 shape has 20 waves: exhaustive is allowed, and agrees with optimal.
  const auto ex = nlohmann::json::parse(cli(with(kA800, {"--search", "exhaustive", "--format", "json"})).out);
  const auto opt = nlohmann::json::parse(cli(with(kA800, {"--search", "optimal", "--format", "json"})).out);
  CHECK(ex["predicted_us"] == opt["predicted_us"]);
}

TEST_CASE("tune: exhaustive above 20 waves and bad options exit 2 with a clear message", "[cli][tune]") {
  const CliResult big = cli({"tune", "--hardware", "a800-8x-nvlink", "--gemm", "65536x8192x1024", "--primitive",
                             "all_reduce", "--ranks", "4", "--search", "exhaustive"});
  CHECK(big.rc == 2);
  CHECK_THAT(big.err, Catch::Contains("exhaustive") && Catch::Contains("limit 20") && Catch::Contains("optimal"));

  auto fails_naming = [](const std::vector<std::string>& args, const std::string& what) {
    const CliResult r = cli(args);
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::Contains(what));
  };
  fails_naming({"tune", "--hardware", "a800-8x-nvlink", "--gemm", "8192x8192", "--primitive", "all_reduce", "--ranks", "4"}, "--gemm");
  fails_naming({"tune", "--hardware", "a800-8x-nvlink", "--gemm", "8192x0x4096", "--primitive", "all_reduce", "--ranks", "4"}, "--gemm");
  fails_naming(with(kA800, {"--search", "psychic"}), "--search");
  fails_naming({"tune", "--hardware", "a800-8x-nvlink", "--gemm", "8192x8192x4096", "--primitive", "all_gather", "--ranks", "4"}, "--primitive");
  fails_naming({"tune", "--hardware", "a800-8x-nvlink", "--gemm", "8192x8192x4096", "--primitive", "all_reduce", "--ranks", "16"}, "--ranks");
  fails_naming({"tune", "--hardware", "warp-9", "--gemm", "8192x8192x4096", "--primitive", "all_reduce", "--ranks", "4"}, "warp-9");
  fails_naming({"tune", "--hardware", "a800-8x-nvlink", "--gemm", "8190x8192x4096", "--primitive", "reduce_scatter", "--ranks", "4"}, "divisible");
  fails_naming({"tune", "--gemm", "8192x8192x4096"}, "--hardware");
  fails_naming(with(kA800, {"--set", "gpu.sm_count=-1"}), "sm_count");
  fails_naming(with(kA800, {"--swizzle", "3"}), "--swizzle");
  fails_naming({"tune", "flashoverlap-a800-allreduce", "--export-flashoverlap", "x.json"}, "--export-flashoverlap");
  fails_naming({"tune", "flashoverlap-a800-allreduce", "--export", "flashoverlap", "x.json"}, "--export flashoverlap");
  fails_naming(with(kA800, {"--export", "te-userbuffers", "ub.yaml"}), "--export te-userbuffers");
  fails_naming(with(kA800, {"--export", "flashoverlap", "a.json", "--export-flashoverlap", "b.json"}), "give one");
  fails_naming({"tune", "flashoverlap-a800-allreduce", "--sm-margin"}, "sm_margin: true");
}

TEST_CASE("tune --sm-margin: every engine run is FlashOverlap with sm_margin, as run gives it", "[cli][tune]") {
  // The RTX 4090 reproduction's operator (README "Reproducing the sources" runs it with sm_margin).
  const std::vector<std::string> rtx = {"tune", "--hardware", "rtx4090-4x-pcie", "--gemm", "4096x8192x16384", "--dtype",
                                        "fp16", "--primitive", "all_reduce", "--ranks", "4", "--format", "json",
                                        "--budget", "12"};
  const CliResult plain = cli(rtx);
  const CliResult margin = cli(with(rtx, {"--sm-margin"}));
  INFO(plain.err << margin.err);
  REQUIRE(plain.rc == 0);
  REQUIRE(margin.rc == 0);
  const auto p = nlohmann::json::parse(plain.out), m = nlohmann::json::parse(margin.out);
  CHECK(p["sm_margin"] == false);
  CHECK(m["sm_margin"] == true);
  CHECK(m["no_overlap_us"] == p["no_overlap_us"]);  // the baseline has no margin to keep
  // The chosen partition's engine latency is what `run` reports for the scheme with those groups and
  // sm_margin, on the same operator (no RMSNorm after it).
  const nlohmann::json scheme = {{"name", "flashoverlap"}, {"params", {{"groups", m["groups_waves"]}, {"sm_margin", true}}}};
  const CliResult run = cli_unchecked({"flashoverlap-rtx4090-allreduce", "--set", "workload.k=16384", "--set",
                             "workload.rmsnorm_after=false", "--set", "schemes=[" + scheme.dump() + "]", "--format", "json"});
  INFO(run.err);
  REQUIRE(run.rc == 0);
  const auto r = nlohmann::json::parse(run.out);
  REQUIRE(r["results"].size() == 1);
  CHECK(r["results"][0]["latency_us"].get<double>() == Approx(m["simulated_us"].get<double>()).epsilon(1e-12));
  // On this PCIe box keeping NCCL's SMs free is worth having: the margin's best beats the plain one's.
  CHECK(m["simulated_us"].get<double>() < p["simulated_us"].get<double>());
}

TEST_CASE("tune --export flashoverlap writes FlashOverlap's configuration", "[cli][tune][export]") {
  TempFile cfg("fo.json");
  const CliResult r = cli(with(kA800, {"--search", "flashoverlap", "--format", "json", "--export", "flashoverlap",
                                       cfg.path, "--algo", "3"}));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const auto tuned = nlohmann::json::parse(r.out);
  const auto j = nlohmann::json::parse(read_text(cfg.path));
  for (const char* key : {"BM", "BN", "dur", "Algo", "hint", "cSeg", "rLDN"}) CHECK(j.contains(key));
  CHECK(j["Algo"] == 3);
  CHECK(j["cSeg"] == tuned["groups_tiles"]);
  CHECK(j["hint"].size() == tuned["tiles"].get<std::size_t>());
  CHECK_THAT(r.err, !Catch::Contains("older form"));
  // The older flag writes the same file and says which flag is the one to use.
  TempFile old("fo-old.json");
  const CliResult o = cli(with(kA800, {"--search", "flashoverlap", "--format", "json", "--export-flashoverlap",
                                       old.path, "--algo", "3"}));
  REQUIRE(o.rc == 0);
  CHECK_THAT(o.err, Catch::Contains("--export-flashoverlap FILE is the older form of --export flashoverlap FILE"));
  CHECK(read_text(old.path) == read_text(cfg.path));
}

TEST_CASE("tune --export flashoverlap DIR/: FlashOverlap's own name, Algo always, the dtype recorded",
          "[cli][tune][export]") {
  TempDir dir("fo-export");
  const std::string configs = dir.file("configs");
  fs::create_directory(configs);
  // The form the README and --help give: a directory with a trailing slash.
  const CliResult r = cli(with(kA800, {"--search", "flashoverlap", "--format", "json", "--export", "flashoverlap", configs + "/"}));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  // FlashOverlap's main branch reads configs/m{M}n{N}k{K}_{gpu}.json (tune/search.py load_json).
  const std::string file = configs + "/m8192n8192k4096_a800.json";
  REQUIRE(fs::exists(file));
  CHECK_THAT(r.err, Catch::Contains("wrote " + file));
  CHECK_THAT(r.err, !Catch::Contains("warning"));  // fp16, as FlashOverlap's kernels
  const auto j = nlohmann::json::parse(read_text(file));
  REQUIRE(j.contains("Algo"));
  CHECK(j["Algo"] == overlap::tools::flashoverlap_algo_for(j["BM"].get<int>(), j["BN"].get<int>(), 1).value());
  CHECK(j["overlap_sim"]["dtype"] == "fp16");
  CHECK(j["overlap_sim"]["primitive"] == "all_reduce");
  CHECK(j["overlap_sim"]["ranks"] == 4);

  // An existing directory without the slash: the same file. bf16: written with the dtype recorded
  // and a warning that FlashOverlap's kernels are fp16 only.
  std::vector<std::string> bf16 = kA800;
  bf16[6] = "bf16";
  const CliResult b = cli(with(bf16, {"--search", "flashoverlap", "--export-flashoverlap", configs}));
  INFO(b.err);
  REQUIRE(b.rc == 0);
  CHECK_THAT(b.err, Catch::Contains("fp16 only"));
  CHECK(nlohmann::json::parse(read_text(file))["overlap_sim"]["dtype"] == "bf16");

  // -o naming the file the directory form resolves to: refused before anything is tuned or written.
  write_text(file, "old");
  const CliResult clash = cli(with(kA800, {"--search", "flashoverlap", "-o", file, "--export", "flashoverlap", configs + "/"}));
  CHECK(clash.rc == 2);
  CHECK_THAT(clash.err, Catch::Contains("name the same file"));
  CHECK(read_text(file) == "old");
  // An empty path names nothing.
  const CliResult empty = cli(with(kA800, {"--export-flashoverlap", ""}));
  CHECK(empty.rc == 2);
  CHECK_THAT(empty.err, Catch::Contains("--export-flashoverlap"));
  const CliResult empty_export = cli(with(kA800, {"--export", "flashoverlap", ""}));
  CHECK(empty_export.rc == 2);
  CHECK_THAT(empty_export.err, Catch::Contains("--export flashoverlap: ''"));
}

TEST_CASE("flashoverlap_algo_for: FlashOverlap's kernel instance in its generator's order", "[tune][export]") {
  using overlap::tools::flashoverlap_algo_for;
  // tool/generate_instances.py enumerates tile M, N, K, warp K, stages, swizzle (1 2 3 4 6 8) with the
  // last fastest; the committed src/inc/gemm_instances.inc lists 128x128 at lines 0-53, 128x256 at
  // 54-77 and 256x128 at 78-101, each tile's K 32 / warp K 32 / 3 stages first: so the index of that
  // instance is exact.
  CHECK(flashoverlap_algo_for(128, 128, 1) == 0);
  CHECK(flashoverlap_algo_for(128, 128, 8) == 5);
  CHECK(flashoverlap_algo_for(128, 128, 3) == 2);
  CHECK(flashoverlap_algo_for(128, 256, 1) == 54);
  CHECK(flashoverlap_algo_for(256, 128, 4) == 81);
  CHECK(flashoverlap_algo_for(256, 128, 8) == 83);
  CHECK_FALSE(flashoverlap_algo_for(64, 128, 1).has_value());
  CHECK_FALSE(flashoverlap_algo_for(256, 256, 1).has_value());  // excluded by the generator
  CHECK_FALSE(flashoverlap_algo_for(128, 128, 5).has_value());
}

TEST_CASE("tune SCENARIO prints every scheme's best configuration and the overall best", "[cli][tune]") {
  const CliResult r = cli({"tune", "flashoverlap-a800-allreduce", "--set", "workload.m=4096", "--top", "4"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("best: "));
  for (const char* s : {"no_overlap", "data_slicing", "flashoverlap"}) CHECK_THAT(r.out, Catch::Contains(s));
  CHECK_THAT(r.out, Catch::Contains("top 4 configurations"));
  const CliResult j = cli({"tune", "flashoverlap-a800-allreduce", "--set", "workload.m=4096", "--format", "json"});
  REQUIRE(j.rc == 0);
  const auto doc = nlohmann::json::parse(j.out);
  CHECK(doc["schemes"].size() == 3);
  CHECK(doc["best"]["latency_us"].get<double>() <= doc["baseline_us"].get<double>());
}

TEST_CASE("run --param sets a scheme's knobs without YAML", "[cli][param]") {
  const CliResult r = cli_unchecked({"flashoverlap-a800-allreduce", "--scheme", "data_slicing", "--param", "chunks=8",
                           "--format", "json"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["results"].size() == 1);
  CHECK(j["results"][0]["params"]["chunks"] == 8);
  // A list value, read as YAML like a scenario's.
  const CliResult list = cli_unchecked({"flashoverlap-a800-allreduce", "--scheme", "flashoverlap", "--param",
                              "groups=[4, 4, 4, 4, 4]", "--format", "json"});
  INFO(list.err);
  REQUIRE(list.rc == 0);
  CHECK(nlohmann::json::parse(list.out)["results"][0]["params"]["groups"] == nlohmann::json({4, 4, 4, 4, 4}));

  const CliResult unknown = cli_unchecked({"--scheme", "data_slicing", "--param", "chunkz=8"});
  CHECK(unknown.rc == 2);
  CHECK_THAT(unknown.err, Catch::Contains("--param chunkz") && Catch::Contains("chunks"));
  const CliResult type = cli_unchecked({"--scheme", "data_slicing", "--param", "chunks=many"});
  CHECK(type.rc == 2);
  CHECK_THAT(type.err, Catch::Contains("--param chunks"));
  const CliResult value = cli_unchecked({"--scheme", "data_slicing", "--param", "chunks=0"});
  CHECK(value.rc == 2);
  CHECK_THAT(value.err, Catch::Contains("chunks"));
  const CliResult no_scheme = cli_unchecked({"--param", "chunks=8"});
  CHECK(no_scheme.rc == 2);
  CHECK_THAT(no_scheme.err, Catch::Contains("--scheme"));
}

// Every shipped scenario's table is checked against the same width by the golden test
// (tests/golden/shipped_outputs.py), which runs each of them in the release pass anyway.
TEST_CASE("the results table fits 120 columns, and --wide shows every column", "[cli][table]") {
  const CliResult wide = cli_unchecked({"--wide"});
  REQUIRE(wide.rc == 0);
  for (const char* col : {"compute-only (us)", "bound (us)", "SMs lost to comm", "reason", "speedup vs no_overlap"})
    CHECK_THAT(wide.out, Catch::Contains(col));
  // The default run, its placeholder lines included.
  const CliResult narrow = cli({"run"});
  REQUIRE(narrow.rc == 0);
  std::istringstream lines(narrow.out);
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    CHECK(line.size() <= overlap::sim::kTableWidth);
  }
  CHECK(narrow.out.find("compute-only (us)") == std::string::npos);
  // Every scheme's reason is still there, after the table.
  CHECK_THAT(narrow.out, Catch::Contains("sequential: every collective waits for its GEMM"));
}

TEST_CASE("profile list, --version, unknown commands, and examples in every --help", "[cli]") {
  const CliResult list = cli({"profile", "list"});
  REQUIRE(list.rc == 0);
  for (const std::string& name : overlap::builtin_profile_names()) CHECK_THAT(list.out, Catch::Contains(name));
  const CliResult json = cli({"profile", "list", "--format", "json"});
  REQUIRE(json.rc == 0);
  CHECK(nlohmann::json::parse(json.out)["profiles"].size() == overlap::builtin_profile_names().size());

  const CliResult version = cli({"--version"});
  CHECK(version.rc == 0);
  CHECK_THAT(version.out, Catch::Contains("overlap-sim 0."));

  const CliResult unknown = cli({"frobnicate", "--fast"});
  CHECK(unknown.rc == 2);
  CHECK_THAT(unknown.err, Catch::Contains("unknown command 'frobnicate'") && Catch::Contains("run, tune, sweep"));
  const CliResult unknown_profile = cli({"profile", "lst"});
  CHECK(unknown_profile.rc == 2);
  CHECK_THAT(unknown_profile.err, Catch::Contains("unknown command 'profile lst'"));

  for (const std::vector<std::string>& help :
       std::vector<std::vector<std::string>>{{"--help"}, {"run", "--help"}, {"tune", "--help"}, {"sweep", "--help"},
                                             {"schemes", "--help"}, {"profile", "--help"}, {"profile", "list", "--help"},
                                             {"profile", "show", "--help"}}) {
    INFO(help.front());
    const CliResult r = cli(help);
    CHECK(r.rc == 0);
    CHECK_THAT(r.out, Catch::Contains("Examples:") && Catch::Contains("overlap-sim "));
  }
}

TEST_CASE("schemes shows the production names of the knobs and what tune tries", "[cli]") {
  const CliResult r = cli({"schemes"});
  REQUIRE(r.rc == 0);
  for (const char* name : {"num_splits", "ub_overlap_rs", "num_sm", "NCCL_NCHANNELS", "set_sm_margin", "tune tries"})
    CHECK_THAT(r.out, Catch::Contains(name));
  const auto j = nlohmann::json::parse(cli({"schemes", "--format", "json"}).out);
  bool found = false;
  for (const auto& s : j["schemes"])
    for (const auto& p : s["params"])
      if (p["name"] == "chunks") found = p["tune_values"].size() == 5 && !p["equivalent"].get<std::string>().empty();
  CHECK(found);
}
