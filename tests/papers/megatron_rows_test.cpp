// Narayanan et al. (SC'21) Table 1 in `validate --papers` (tools/papers_training.cpp): a pipeline row's
// predicted throughput is Eq. 3's FLOPs over the job step `overlap-sim run` prints for its file, and the
// 18.4B row runs unfused attention, composed from a few layers.
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/cli_run.hpp"
#include "tools/input_paths.hpp"

namespace {

using overlap::test::cli;
using overlap::test::CliResult;

std::string megatron_file(const std::string& name) {
  return (std::filesystem::path(overlap::tools::source_dir()) / "scenarios" / "papers" / (name + ".yaml")).string();
}

const nlohmann::json& row_named(const nlohmann::json& rep, const std::string& figure) {
  for (const auto& r : rep["rows"])
    if (r["figure"] == figure) return r;
  FAIL("no row " << figure);
  return rep;
}

}  // namespace

TEST_CASE("Megatron Table 1: a pipeline row is Eq. 3 over the job step `run` prints", "[papers][megatron][slow]") {
  const CliResult run = cli({"run", megatron_file("megatron-sc21-gpt-39.1b-tp8-pp2-dp32"), "--format", "json"});
  REQUIRE(run.rc == 0);
  const double step_s = nlohmann::json::parse(run.out)["job"]["results"][0]["step_us"].get<double>() * 1e-6;
  REQUIRE(step_s > 0);
  // Eq. 3 for Table 1's 39.1B row: 96 B s l h^2 (1 + s / 6h + V / 16 l h), B 1536, s 2048, l 48,
  // h 8192, V 51200, over 512 GPUs.
  const double B = 1536, s = 2048, l = 48, h = 8192, V = 51200;
  const double flops = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  const CliResult papers = cli({"validate", "--papers", "--source", "megatron", "--format", "json"});
  REQUIRE(papers.rc <= 1);  // rows off the target exit 1
  const auto rep = nlohmann::json::parse(papers.out);
  const auto& row = row_named(rep, "GPT 39.1B throughput per GPU (TP 8, PP 2)");
  CHECK(row["published"].get<double>() == 138);
  CHECK(row["predicted"].get<double>() == Approx(flops / (step_s * 512) / 1e12).epsilon(1e-9));
  // The ratio row divides it by the 18.4B row's (TP 8, PP 1) prediction.
  const auto& flat = row_named(rep, "GPT 18.4B throughput per GPU (TP 8, PP 1)");
  const auto& ratio = row_named(rep, "throughput per GPU, GPT 39.1B at TP 8 x PP 2 over GPT 18.4B at TP 8 x PP 1 (weak scaling)");
  CHECK(ratio["predicted"].get<double>() ==
        Approx(row["predicted"].get<double>() / flat["predicted"].get<double>()).epsilon(1e-12));
  // The 18.4B row runs unfused attention as Megatron-LM of 2021 did (composed past the tile budget).
  CHECK_THAT(flat["cause"].get<std::string>(), Catch::Matchers::Contains("attention runs unfused"));
}
