// The scenario-side refusals of the third hardening round: a --set flow map repeating a key, a YAML
// directive after the document's end, a sweep block `run` reads as `sweep` does, a --sweep axis given
// twice, key-value heads TP can neither split nor replicate, the MoE work budget, and a results
// directory whose schemes/ or measurements.json is malformed. Each is exit 2 naming file or flag and key.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "sim/scenario.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"

using overlap::test::cli;
namespace fs = std::filesystem;

namespace {

struct Scratch : overlap::test::TempDir {
  Scratch() : TempDir("hardening") {}
};

const std::string kMlp =
    "hardware: h100-sxm-8x-nvswitch\n"
    "workload:\n"
    "  kind: mlp_tpsp\n"
    "  tp: 8\n"
    "  tokens: 8192\n"
    "  d_model: 8192\n"
    "  d_ffn: 28672\n"
    "schemes: [no_overlap, {name: data_slicing, params: {chunks: 2}}]\n";

}  // namespace

TEST_CASE("set override: a flow map that repeats a key is refused naming the key", "[scenario][set][errors]") {
  const Scratch s;
  const std::string scen = s.write("mlp.yaml", kMlp);
  const auto r = cli({"run", scen, "--set", "schemes=[{name: data_slicing, params: {chunks: 2, chunks: 4}}]"});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("schemes.0.params.chunks") && Catch::Contains("key given twice"));
  const auto w = cli({"run", scen, "--set", "workload={kind: mlp_tpsp, tp: 8, tp: 4, tokens: 8192, d_model: 8192, d_ffn: 28672}"});
  CHECK(w.rc == 2);
  CHECK_THAT(w.err, Catch::Contains("workload.tp") && Catch::Contains("key given twice"));
  // The same maps without the repeat run.
  CHECK(cli({"run", scen, "--set", "schemes=[{name: data_slicing, params: {chunks: 4}}]"}).rc == 0);
}

TEST_CASE("a YAML directive after the document end marker is refused at its line", "[scenario][yaml][errors]") {
  const Scratch s;
  const std::string scen = s.write("end.yaml", kMlp + "...\n%YAML 1.2\n");
  const auto r = cli({"run", scen});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains(scen + ":10:") && Catch::Contains("after the document's end marker"));
  // "..." alone ends the document as YAML says; a comment after it is no directive.
  CHECK(cli({"run", s.write("end-ok.yaml", kMlp + "...\n# done\n")}).rc == 0);
}

TEST_CASE("run and sweep refuse the same bad sweep value; a --sweep axis given twice is refused", "[scenario][sweep][errors]") {
  const Scratch s;
  const std::string scen = s.write("swp.yaml", kMlp + "sweep:\n  workload.tp: [8, 3]\n");
  const auto run = cli({"run", scen});
  const auto sweep = cli({"sweep", scen});
  CHECK(run.rc == 2);
  CHECK(sweep.rc == 2);
  CHECK_THAT(run.err, Catch::Contains(scen + ":10:") && Catch::Contains("not divisible by tp = 3"));
  CHECK_THAT(sweep.err, Catch::Contains("not divisible by tp = 3"));
  const std::string ok = s.write("ok.yaml", kMlp);
  const auto twice = cli({"sweep", ok, "--sweep", "workload.tp=4,8", "--sweep", "workload.tp=2"});
  CHECK(twice.rc == 2);
  CHECK_THAT(twice.err, Catch::Contains("--sweep workload.tp=2") && Catch::Contains("already swept by --sweep workload.tp=4,8"));
}

TEST_CASE("key-value heads that TP can neither split nor replicate are refused", "[scenario][heads][errors]") {
  const Scratch s;
  const auto attention = [&](int heads, int kv, int tp) {
    return s.write("a.yaml", "hardware: h100-sxm-8x-nvswitch\nworkload:\n  kind: attention_tpsp\n  tp: " + std::to_string(tp) +
                                 "\n  batch: 1\n  seq: 4096\n  d_model: 6144\n  heads: " + std::to_string(heads) +
                                 "\n  kv_heads: " + std::to_string(kv) + "\nschemes: [no_overlap]\n");
  };
  // 24 heads, 6 kv heads on 4 ranks: 1.5 kv heads a rank, neither a split nor a replica.
  const auto r = cli({"run", attention(24, 6, 4)});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("kv_heads") && Catch::Contains("1.5 per rank"));
  CHECK(cli({"run", attention(24, 8, 4)}).rc == 0);  // split: 2 a rank
  CHECK(cli({"run", attention(24, 2, 4)}).rc == 0);  // replicated: each pair of ranks shares one
}

TEST_CASE("a MoE layer past the EP work budget is refused before any graph is built", "[scenario][moe][budget]") {
  const Scratch s;
  const auto moe = [&](int ep) {
    return s.write("moe.yaml", "hardware: h100-64node-ib400-rail\nworkload:\n  kind: moe\n  experts: 512\n  top_k: 8\n"
                               "  d_model: 7168\n  d_ffn_expert: 2048\n  tokens: 4096\n  ep: " + std::to_string(ep) +
                               "\nschemes: [no_overlap]\n");
  };
  // EP 512: 512^2 = 262,144 rank pairs, four times the 65,536 budget (EP 256).
  try {
    (void)overlap::sim::load_scenario_file(moe(512));
    FAIL("expected an InputError");
  } catch (const overlap::InputError& e) {
    CHECK(e.key_path() == "workload.ep");
    CHECK_THAT(e.message(), Catch::Contains("262144 rank pairs") && Catch::Contains("65536"));
  }
  const auto at_budget = overlap::sim::load_scenario_file(moe(256));
  CHECK_FALSE(overlap::sim::work_over_budget(at_budget.workload));
}

TEST_CASE("validate: schemes/ as a file and duplicate keys in measurements.json are refused", "[calibrate][validate][input]") {
  const Scratch s;
  const fs::path fixture = fs::path(OVERLAP_SOURCE_DIR) / "tests/data/calibrate/fixture-h100";
  const fs::path dir = s.path / "results";
  fs::create_directories(dir);
  for (const char* f : {"environment.json", "measurements.json", "profile.yaml"}) fs::copy_file(fixture / f, dir / f);
  s.write("results/schemes", "not a folder\n");
  const auto file = cli({"validate", dir.string()});
  CHECK(file.rc == 2);
  CHECK_THAT(file.err, Catch::Contains((dir / "schemes").string()) && Catch::Contains("must be a folder"));
  fs::remove(dir / "schemes");
  // measurements.json with "fixture" given twice at the top: the reader kept the last one silently.
  std::ifstream in(dir / "measurements.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  REQUIRE(text.find('{') != std::string::npos);
  text.insert(text.find('{') + 1, "\"fixture\": true, \"fixture\": false,");
  s.write("results/measurements.json", text);
  const auto dup = cli({"validate", dir.string()});
  CHECK(dup.rc == 2);
  CHECK_THAT(dup.err, Catch::Contains("measurements.json") && Catch::Contains("fixture") && Catch::Contains("duplicate key"));
}

TEST_CASE("trace --hardware: a GEMM of 2^40 a side is reported beyond the model, never predicted as 0 us", "[trace][errors]") {
  const Scratch s;
  // The sample trace with its aten::mm's Input Dims made 2^40 on every side: tiles, bytes and time
  // leave 64 bits (the wrapped product predicted 0.000 us, a -100 % error).
  std::ifstream in(fs::path(OVERLAP_SOURCE_DIR) / "tests/data/trace/rank0.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string dims = "\"Input Dims\": [[4096, 8192], [8192, 2048]]";
  REQUIRE(text.find(dims) != std::string::npos);
  text.replace(text.find(dims), dims.size(),
               "\"Input Dims\": [[1099511627776, 1099511627776], [1099511627776, 1099511627776]]");
  const auto r = cli({"trace", s.write("huge.json", text), "--hardware", "h100-sxm-8x-nvswitch"});
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("beyond what the model counts: GEMM 1099511627776 x 1099511627776 x 1099511627776"));
  CHECK_THAT(r.out, !Catch::Contains("-100.0"));
}

TEST_CASE("trace: a collective of 9e18 elements has no size, never a negative byte count", "[trace][errors]") {
  const Scratch s;
  std::ifstream in(fs::path(OVERLAP_SOURCE_DIR) / "tests/data/trace/rank0.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string count = "\"In msg nelems\": 1048576";
  REQUIRE(text.find(count) != std::string::npos);
  // 9e18 bf16 elements are 1.8e19 bytes: past int64, the product wrapped to a negative count.
  text.replace(text.find(count), count.size(), "\"In msg nelems\": 9000000000000000000");
  const auto r = cli({"trace", s.write("big.json", text), "--format", "json"});
  CHECK(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  int sized = 0;
  for (const auto& rank : j.at("ranks"))
    for (const auto& c : rank.at("comms")) {
      if (c.contains("bytes") && c.at("bytes").is_number()) {
        CHECK(c.at("bytes").get<std::int64_t>() >= 0);
        ++sized;
      }
      if (c.contains("nelems") && c.at("nelems") == 9000000000000000000LL) CHECK(c.at("bytes").is_null());
    }
  CHECK(sized >= 1);  // the other collective keeps its size
}
