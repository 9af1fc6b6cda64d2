// `overlap-sim plan` on the command line: its JSON report, and bad input refused naming the flag (exit 2).
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"

namespace {

using overlap::test::cli;
using overlap::test::CliResult;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A 4-layer Llama 3 8B step at 1024 tokens: every candidate runs in milliseconds.
const std::string kTinyBase =
    "hardware: h100-sxm-8x-nvswitch\n"
    "workload:\n"
    "  {kind: transformer, tp: 1, model: llama3-8b, layers: 4, batch: 1, seq: 1024, dtype: bf16, pass: step}\n"
    "schemes: [no_overlap]\n";

}  // namespace

TEST_CASE("plan --format json: the best configurations ranked, ties named, losers counted", "[plan][cli]") {
  const overlap::test::TempDir dir("plan-cli");
  const std::string file = dir.write("tiny.yaml", kTinyBase);
  const std::string out = dir.file("plan.json");
  const CliResult r = cli({"plan", file, "--gpus", "4", "--global-batch", "4", "--tp", "1,2", "--cp", "1",
                           "--recompute", "none", "--fsdp", "none,zero1,zero2", "--format", "json", "-o", out, "-j", "2"});
  REQUIRE(r.rc == 0);
  const nlohmann::json j = nlohmann::json::parse(overlap::test::read_text(out));
  const nlohmann::json& c = j.at("counts");
  CHECK(c.at("candidates").get<int>() == c.at("ranked").get<int>() + c.at("out_of_memory").get<int>() +
                                              c.at("invalid").get<int>() + c.at("failed").get<int>());
  REQUIRE(j.at("best").size() == 5);
  for (std::size_t k = 1; k < j.at("best").size(); ++k)
    CHECK(j["best"][k]["step_us"].get<double>() >= j["best"][k - 1]["step_us"].get<double>());
  // zero1 and zero2 move the same bytes (they differ in memory only): whenever one ranks, its twin ties.
  bool tie = false;
  for (const auto& b : j.at("best")) tie = tie || !b.at("tie_with").is_null();
  CHECK(tie);
}

TEST_CASE("plan --help shows its defaults and examples, as every command's", "[plan][cli]") {
  const CliResult r = cli({"plan", "--help"});
  CHECK(r.rc == 0);
  CHECK(contains(r.out, "Examples:\n  overlap-sim plan "));
  CHECK(contains(r.out, "--top INT:INT in [1 - 1000]=5"));
  CHECK_FALSE(contains(r.out, "=[]"));
}

TEST_CASE("plan refuses bad input naming the flag, exit 2", "[plan][cli]") {
  const overlap::test::TempDir dir("plan-cli");
  const std::string file = dir.write("tiny.yaml", kTinyBase);
  SECTION("an unknown model") {
    const CliResult r = cli({"plan", "--model", "llama9-1t", "--hardware", "h100-sxm-8x-nvswitch", "--gpus", "8",
                             "--global-batch", "8", "--seq", "1024"});
    CHECK(r.rc == 2);
    CHECK(contains(r.err, "--model llama9-1t"));
  }
  SECTION("a GPU count the search cannot factor") {
    const CliResult r = cli({"plan", file, "--gpus", "6", "--global-batch", "6", "--tp", "4", "--cp", "1"});
    CHECK(r.rc == 2);
    CHECK(contains(r.err, "--gpus 6: no tp x cp x pp x dp"));
  }
  SECTION("more GPUs than the profile has") {
    const CliResult r = cli({"plan", file, "--gpus", "16", "--global-batch", "16"});
    CHECK(r.rc == 2);
    CHECK(contains(r.err, "--gpus 16: the profile h100-sxm-8x-nvswitch has 8 GPUs"));
  }
  SECTION("a token batch that is no whole number of sequences") {
    const CliResult r = cli({"plan", file, "--gpus", "4", "--global-batch-tokens", "5000"});
    CHECK(r.rc == 2);
    CHECK(contains(r.err, "--global-batch-tokens 5000 is not a whole number of 1024-token sequences"));
  }
  SECTION("a global batch no dp x micro-batch divides") {
    const CliResult r = cli({"plan", file, "--gpus", "4", "--global-batch", "3", "--tp", "1", "--cp", "1", "--pp", "1"});
    CHECK(r.rc == 2);
    CHECK(contains(r.err, "--global-batch 3: no data-parallel degree x micro-batch size"));
  }
  SECTION("a search where nothing fits says the smallest memory against HBM") {
    const CliResult r = cli({"plan", file, "--gpus", "4", "--global-batch", "4", "--set", "hardware.gpu.hbm_bytes=1073741824",
                             "--tp", "1,2", "--cp", "1", "--recompute", "none"});
    CHECK(r.rc == 2);
    CHECK(contains(r.err, "no configuration fits"));
    CHECK(contains(r.err, "the smallest peak is"));
    CHECK(contains(r.err, "1.00 GiB of HBM"));
  }
  SECTION("an axis value that is not a number") {
    const CliResult r = cli({"plan", file, "--gpus", "4", "--global-batch", "4", "--tp", "2,x"});
    CHECK(r.rc == 2);
    CHECK(contains(r.err, "--tp 2,x: 'x'"));
  }
}
