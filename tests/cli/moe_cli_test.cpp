// The moe workload's bad inputs through the command line: each refused with exit 2 and a message
// naming the scenario file, the line and the key (docs/guide/moe.md "Keys").
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "tests/support/cli_run.hpp"

namespace fs = std::filesystem;
using overlap::test::cli;
using overlap::test::CliResult;

namespace {

struct MoeDir {
  fs::path path;
  MoeDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("overlap-moe-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~MoeDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = (path / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
};

// The first four lines every scenario here shares: its name, the 8-GPU node, and the workload's kind.
std::string scenario_head(const std::string& name, const std::string& kind) {
  std::string s = "name: " + name + "\n";                  // line 1
  s += "hardware: h100-sxm-8x-nvswitch\n";                 // line 2
  s += "workload:\n";                                      // line 3
  s += "  kind: " + kind + "\n";                           // line 4
  return s;
}

// A valid moe scenario (experts, top_k and ep on lines 5, 6 and 7) with `extra` lines appended to the
// workload from line 11 on.
std::string scenario(const std::string& experts = "8", const std::string& top_k = "2", const std::string& ep = "4",
                     const std::string& extra = "") {
  std::string s = scenario_head("moe-bad", "moe");
  s += "  experts: " + experts + "\n";                     // line 5
  s += "  top_k: " + top_k + "\n";                         // line 6
  s += "  ep: " + ep + "\n";                               // line 7
  s += "  d_model: 1024\n  d_ffn_expert: 512\n";          // lines 8, 9
  s += "  tokens: 512\n";                                  // line 10
  return s + extra;                                        // line 11 onwards
}

void refused(const MoeDir& dir, const std::string& text, const std::string& key, int line) {
  const std::string file = dir.write("s.yaml", text);
  const CliResult r = cli({"run", file});
  INFO(r.err);
  CHECK(r.rc == 2);
  CHECK(r.err.find("s.yaml") != std::string::npos);
  CHECK(r.err.find(":" + std::to_string(line)) != std::string::npos);
  CHECK(r.err.find(key) != std::string::npos);
}

}  // namespace

TEST_CASE("moe: a valid scenario runs its three schemes", "[moe][cli]") {
  MoeDir dir;
  const CliResult r = cli({"run", dir.write("s.yaml", scenario())});
  INFO(r.err);
  CHECK(r.rc == 0);
  CHECK(r.out.find("moe_pipeline") != std::string::npos);
  CHECK(r.out.find("moe_flashoverlap") != std::string::npos);
}

TEST_CASE("moe: bad inputs exit 2 naming file, line and key", "[moe][cli]") {
  MoeDir dir;
  refused(dir, scenario("8", "9"), "workload.top_k", 6);      // top_k > experts
  refused(dir, scenario("8", "2", "3"), "workload.ep", 7);    // ep does not divide experts
  // The message names what is divided: the experts, not ep's own value.
  const CliResult ep = cli({"run", dir.write("s.yaml", scenario("8", "2", "3"))});
  CHECK(ep.err.find("experts = 8 is not divisible by ep = 3") != std::string::npos);
  const CliResult etp = cli({"run", dir.write("s.yaml", scenario("8", "2", "2", "  expert_tp: 3\n"))});
  CHECK(etp.err.find("d_ffn_expert = 512 is not divisible by expert_tp = 3") != std::string::npos);
  refused(dir, scenario("16", "2", "16"), "workload.ep", 7);  // more EP ranks than GPUs (8)
  refused(dir, scenario("8", "2", "4", "  capacity_factor: 0\n"), "workload.capacity_factor", 11);
  refused(dir, scenario("8", "2", "4", "  capacity_factor: -1\n"), "workload.capacity_factor", 11);
  refused(dir, scenario("8", "2", "4", "  tp: 2\n"), "workload.tp", 11);  // TP inside experts is expert_tp
  refused(dir, scenario("8", "2", "4", "  routing: \"zipf: -1\"\n"), "workload.routing", 11);
  // A training step runs (moe_backward.cpp), but without recomputation or data parallelism.
  refused(dir, scenario("8", "2", "4", "  pass: step\n  recompute: full\n"), "workload.recompute", 12);
  refused(dir, scenario("8", "2", "4", "  pass: backward\n  parallel:\n    dp: 2\n"), "workload.parallel", 13);
}

TEST_CASE("moe step: no_overlap, moe_pipeline and moe_flashoverlap run a training step with per-pass figures",
          "[moe][cli]") {
  MoeDir dir;
  const std::string text =
      scenario("8", "2", "4", "  pass: step\nschemes: [no_overlap, moe_pipeline, moe_flashoverlap]\n");
  const CliResult r = cli({"run", dir.write("s.yaml", text), "--format", "json"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const auto doc = nlohmann::json::parse(r.out);
  REQUIRE(doc["results"].size() == 3);
  for (const auto& res : doc["results"]) {
    INFO(res.dump());
    const auto& step = res["step"];
    CHECK(step["pass"] == "step");
    CHECK(step["forward"]["latency_ps"].get<double>() > 0);
    CHECK(step["backward"]["latency_ps"].get<double>() > step["forward"]["latency_ps"].get<double>());
    CHECK(step["mfu"].get<double>() > 0);
    CHECK(step["tokens_per_s"].get<double>() > 0);
  }
}

TEST_CASE("moe step: the schemes without a backward form are refused by name; expert TP runs", "[moe][cli]") {
  MoeDir dir;
  for (const std::string scheme : {"moe_tile_fused"}) {
    const std::string text = scenario("8", "2", "4", "  pass: step\nschemes: [" + scheme + "]\n");
    const CliResult s = cli({"run", dir.write("s.yaml", text)});
    INFO(s.err);
    CHECK(s.rc == 2);
    CHECK(s.err.find("s.yaml:12") != std::string::npos);
    CHECK(s.err.find("no backward form") != std::string::npos);
    CHECK(s.err.find(scheme) != std::string::npos);
  }
  // With expert TP moe_tile_fused is refused for a step as without (no backward form); moe_flashoverlap,
  // no_overlap and moe_pipeline run it.
  const std::string etp = scenario("8", "2", "4", "  pass: step\n  expert_tp: 2\nschemes: [moe_tile_fused]\n");
  const CliResult e = cli({"run", dir.write("s.yaml", etp)});
  CHECK(e.rc == 2);
  CHECK(e.err.find("no backward form") != std::string::npos);
  const CliResult ok = cli({"run", dir.write("s.yaml", scenario("8", "2", "4", "  pass: step\n  expert_tp: 2\n"))});
  INFO(ok.err);
  CHECK(ok.rc == 0);
  CHECK(ok.out.find("moe_pipeline") != std::string::npos);
  CHECK(ok.out.find("moe_flashoverlap") != std::string::npos);
  // `overlap-sim schemes` says which moe schemes have a backward form.
  const CliResult list = cli({"schemes"});
  REQUIRE(list.rc == 0);
  CHECK(list.out.find("mirror of the forward's pipeline") != std::string::npos);
  CHECK(list.out.find("on the gate+up dgrad") != std::string::npos);
}

TEST_CASE("moe: a histogram is read from the scenario's folder and checked", "[moe][cli]") {
  MoeDir dir;
  // 4 source ranks x 8 experts, each row 512 tokens x top 2 = 1024 slots, every count <= 512.
  std::string good;
  for (int r = 0; r < 4; ++r) good += "128,128,128,128,128,128,128,128\n";
  dir.write("good.csv", good);
  const CliResult ok =
      cli({"run", dir.write("s.yaml", scenario("8", "2", "4", "  routing: \"histogram: good.csv\"\n"))});
  INFO(ok.err);
  CHECK(ok.rc == 0);
  // Three rows for four ranks: refused, naming the histogram.
  dir.write("short.csv", "128,128,128,128,128,128,128,128\n128,128,128,128,128,128,128,128\n");
  const CliResult bad =
      cli({"run", dir.write("s.yaml", scenario("8", "2", "4", "  routing: \"histogram: short.csv\"\n"))});
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("short.csv") != std::string::npos);
  // A negative count.
  std::string negative = good;
  negative.replace(0, 3, "-12");
  dir.write("neg.csv", negative);
  const CliResult neg =
      cli({"run", dir.write("s.yaml", scenario("8", "2", "4", "  routing: \"histogram: neg.csv\"\n"))});
  CHECK(neg.rc == 2);
  CHECK(neg.err.find("neg.csv") != std::string::npos);
}

namespace {

// A Mixtral-8x7B transformer (8 experts, top 2) of two layers over tp ranks, with `extra` lines
// appended to the workload from line 10 on.
std::string transformer(const std::string& model = "mixtral-8x7b", const std::string& tp = "4",
                        const std::string& extra = "") {
  std::string s = scenario_head("moe-transformer", "transformer");
  s += "  model: " + model + "\n";                         // line 5
  s += "  tp: " + tp + "\n";                               // line 6
  s += "  layers: 2\n";                                    // line 7
  s += "  batch: 1\n  seq: 2048\n";                        // lines 8, 9
  return s + extra;                                        // line 10 onwards
}

}  // namespace

TEST_CASE("moe transformer: a MoE model's transformer runs no_overlap and the moe schemes only", "[moe][cli]") {
  MoeDir dir;
  const CliResult r = cli({"run", dir.write("t.yaml", transformer("mixtral-8x7b", "4", "  routing: \"zipf: 1.0\"\n"))});
  INFO(r.err);
  CHECK(r.rc == 0);
  CHECK(r.out.find("moe_pipeline") != std::string::npos);
  CHECK(r.out.find("moe_flashoverlap") != std::string::npos);
  CHECK(r.out.find("moe_tile_fused") != std::string::npos);
  CHECK(r.out.find("2 layers (2 MoE, 8 experts top 2 over EP 4)") != std::string::npos);
  // The workload line names the MoE block; JSON carries its fields.
  CHECK(r.out.find("experts=8 top_k=2 d_ffn_expert=14336 routing=zipf: 1") != std::string::npos);
  const CliResult j = cli({"run", dir.write("t.yaml", transformer()), "--format", "json"});
  REQUIRE(j.rc == 0);
  const auto doc = nlohmann::json::parse(j.out);
  CHECK(doc["workload"]["experts"] == 8);
  CHECK(doc["workload"]["top_k"] == 2);
  // With no scheme list, the dense-TP schemes are listed as not applying, with the reason.
  const CliResult all = cli({"run", dir.write("t.yaml", transformer())});
  REQUIRE(all.rc == 0);
  CHECK(all.out.find("dense FFN") != std::string::npos);
  CHECK(all.out.find("no MoE form") != std::string::npos);
  // A dense-TP scheme asked for by name is refused, not run with a dense MLP.
  const CliResult refused_scheme = cli({"run", dir.write("t.yaml", transformer()), "--set", "schemes=[async_tp]"});
  CHECK(refused_scheme.rc == 2);
  CHECK(refused_scheme.err.find("async_tp") != std::string::npos);
}

TEST_CASE("moe transformer: bad inputs exit 2 naming file, line and key", "[moe][cli]") {
  MoeDir dir;
  refused(dir, transformer("llama3-8b", "4", "  routing: uniform\n"), "workload.routing", 10);  // a dense model
  refused(dir, transformer("mixtral-8x7b", "4", "  experts: 6\n"), "workload.experts", 10);    // tp does not divide
  refused(dir, transformer("mixtral-8x7b", "4", "  top_k: 9\n"), "workload.top_k", 10);
  refused(dir, transformer("mixtral-8x7b", "4", "  dense_layers: 3\n"), "workload.dense_layers", 10);
  // A training step runs (tests/schemes/test_moe_transformer_step.cpp); its data parallelism is refused,
  // and so is a scheme without a MoE backward (the moe workload's rule: the scheme named, its pass given).
  refused(dir, transformer("mixtral-8x7b", "4", "  pass: step\n  parallel:\n    dp: 2\n"), "workload.parallel", 12);
  refused(dir, transformer("mixtral-8x7b", "4", "  pass: step\nschemes: [moe_tile_fused]\n"), "pass step", 11);
  refused(dir, transformer("mixtral-8x7b", "4", "  capacity_factor: 0\n"), "workload.capacity_factor", 10);
}

TEST_CASE("moe expert_tp: the old tp key points to expert_tp", "[moe][cli]") {
  MoeDir dir;
  const CliResult r = cli({"run", dir.write("s.yaml", scenario("8", "2", "4", "  tp: 2\n"))});
  CHECK(r.rc == 2);
  CHECK(r.err.find("expert_tp") != std::string::npos);
}

TEST_CASE("moe expert_tp: expert_tp 1 gives the output of the scenario without it, byte for byte", "[moe][cli]") {
  MoeDir dir;
  for (const std::string& extra : {std::string(), std::string("  routing: \"zipf: 1.2\"\n  shared_experts: 1\n")}) {
    const CliResult without = cli({"run", dir.write("a.yaml", scenario("8", "2", "4", extra)), "--format", "json"});
    const CliResult with =
        cli({"run", dir.write("a.yaml", scenario("8", "2", "4", extra + "  expert_tp: 1\n")), "--format", "json"});
    INFO(with.err);
    REQUIRE(without.rc == 0);
    REQUIRE(with.rc == 0);
    CHECK(with.out == without.out);
  }
}

TEST_CASE("moe expert_tp: EP 4 x ETP 2 runs every moe scheme on 8 GPUs", "[moe][cli]") {
  MoeDir dir;
  const CliResult r = cli({"run", dir.write("s.yaml", scenario("8", "2", "4", "  expert_tp: 2\n")), "--format", "json"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["workload"]["tp"] == 8);
  CHECK(doc["workload"]["ep"] == 4);
  CHECK(doc["workload"]["expert_tp"] == 2);
  const CliResult text = cli({"run", dir.write("s.yaml", scenario("8", "2", "4", "  expert_tp: 2\n"))});
  REQUIRE(text.rc == 0);
  CHECK(text.out.find("moe ep=4 expert_tp=2") != std::string::npos);
  for (const std::string scheme : {"no_overlap", "moe_pipeline", "moe_flashoverlap", "moe_tile_fused"})
    CHECK(text.out.find(scheme) != std::string::npos);
}

TEST_CASE("moe expert_tp: bad inputs exit 2 naming file, line and key", "[moe][cli]") {
  MoeDir dir;
  // d_ffn_expert = 512 is not divisible by 3.
  refused(dir, scenario("8", "2", "2", "  expert_tp: 3\n"), "workload.expert_tp", 11);
  // 8 EP ranks x 2 = 16 GPUs on an 8-GPU node: the numbers are named.
  const std::string many = dir.write("s.yaml", scenario("8", "2", "8", "  expert_tp: 2\n"));
  const CliResult r = cli({"run", many});
  CHECK(r.rc == 2);
  CHECK(r.err.find("s.yaml:11") != std::string::npos);
  CHECK(r.err.find("workload.expert_tp") != std::string::npos);
  CHECK(r.err.find("8 x 2 = 16 GPUs") != std::string::npos);
  // Every moe scheme has an expert-TP form: named, each runs (docs/guide/moe.md "Expert tensor parallelism").
  for (const std::string scheme : {"moe_flashoverlap", "moe_tile_fused"}) {
    const std::string text = scenario("8", "2", "4", "  expert_tp: 2\nschemes: [" + scheme + "]\n");
    const CliResult s = cli({"run", dir.write("s.yaml", text)});
    INFO(s.err);
    CHECK(s.rc == 0);
    CHECK(s.out.find(scheme) != std::string::npos);
  }
}

TEST_CASE("moe expert_tp: tune searches moe_flashoverlap's wave groups and moe_tile_fused's knobs", "[moe][cli]") {
  MoeDir dir;
  const std::string text = scenario("8", "2", "4", "  expert_tp: 2\n");
  const CliResult r = cli({"tune", dir.write("s.yaml", text), "--format", "json"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const auto doc = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> best;
  for (const auto& s : doc["schemes"]) best[s["best"]["scheme"].get<std::string>()] = s["best"];
  REQUIRE(best.count("moe_flashoverlap") == 1);
  REQUIRE(best.count("moe_tile_fused") == 1);
  // The best configuration is one of the grid's: group_waves 0 (the predictor), 1, 2 or 4.
  const nlohmann::json& params = best["moe_flashoverlap"]["params"];
  if (params.contains("group_waves")) {
    const int g = params["group_waves"].get<int>();
    CHECK((g == 0 || g == 1 || g == 2 || g == 4));
  }
  CHECK(best["moe_flashoverlap"]["latency_us"].get<double>() > 0);
}
