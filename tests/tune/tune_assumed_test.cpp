// tune's operator form says what it took as given: the dtype its GEMM timings are for, the hardware
// and its GPU, and that FlashOverlap's kernels (which run what it tunes) are fp16 only
// (tools/cmd_tune.cpp assumed_of), in the table, the JSON and the --export-flashoverlap file.
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"

using namespace overlap::test;  // cli, CliResult, TempDir, read_text

namespace {

// The table wraps its lines at 120 columns with a two-space indent: read them joined.
bool contains(std::string s, const std::string& part) {
  for (std::size_t at; (at = s.find("\n  ")) != std::string::npos;) s.replace(at, 3, " ");
  return s.find(part) != std::string::npos;
}

const std::vector<std::string> kOperator = {"tune", "--hardware", "a800-8x-nvlink", "--gemm", "2048x4096x2048",
                                            "--primitive", "all_reduce", "--ranks", "4", "--search", "flashoverlap"};

CliResult tune(std::vector<std::string> extra) {
  std::vector<std::string> args = kOperator;
  args.insert(args.end(), extra.begin(), extra.end());
  return cli(args);
}

}  // namespace

TEST_CASE("tune states the dtype and hardware it assumed, and FlashOverlap's fp16-only kernels", "[tune][cli][export]") {
  const CliResult bf16 = tune({});
  INFO(bf16.err);
  REQUIRE(bf16.rc == 0);
  CHECK(contains(bf16.out, "assumed: dtype bf16 (--dtype, default bf16), hardware a800-8x-nvlink (A800"));
  CHECK(contains(bf16.out, "FlashOverlap's kernels are fp16 only"));
  CHECK(contains(bf16.out, "these are bf16 GEMM timings; tune with --dtype fp16"));

  const CliResult fp16 = tune({"--dtype", "fp16"});
  REQUIRE(fp16.rc == 0);
  CHECK(contains(fp16.out, "assumed: dtype fp16"));
  CHECK(contains(fp16.out, "fp16 only (cutlass::half_t GEMMs), as tuned here"));
  CHECK_FALSE(contains(fp16.out, "tune with --dtype fp16"));

  const CliResult json = tune({"--format", "json"});
  REQUIRE(json.rc == 0);
  const nlohmann::json j = nlohmann::json::parse(json.out);
  CHECK(j.at("assumed").at("dtype") == "bf16");
  CHECK(j.at("assumed").at("hardware") == "a800-8x-nvlink");
  CHECK(contains(j.at("assumed").at("flashoverlap_kernels").get<std::string>(), "fp16 only"));

  TempDir dir("tune-assumed");
  const CliResult exported = tune({"--export-flashoverlap", dir.path.string() + "/"});
  INFO(exported.err);
  REQUIRE(exported.rc == 0);
  REQUIRE(dir.entries().size() == 1);
  const nlohmann::json config = nlohmann::json::parse(read_text(dir.file(dir.entries().front())));
  const nlohmann::json& meta = config.at("overlap_sim");
  CHECK(meta.at("dtype") == "bf16");
  CHECK(meta.at("kernel_dtype") == "fp16");
  CHECK(meta.at("hardware") == "a800-8x-nvlink");
  CHECK(contains(meta.at("gpu").get<std::string>(), "A800"));
  CHECK(contains(exported.err, "fp16 only"));  // the warning for a non-fp16 tuning
}
