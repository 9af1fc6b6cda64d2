// A scheme knob out of its table's range, through the whole CLI (tools/cli.hpp run_cli): exit 2 and
// a message naming the scenario file, the knob's line and its key; --param reports the same check.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/cli_run.hpp"
#include "tools/cli.hpp"

namespace fs = std::filesystem;

namespace {

using overlap::test::cli;
using overlap::test::CliResult;

// Line 8 holds the knob.
const char* kScenario =
    "hardware: h100-sxm-8x-nvswitch\n"
    "workload: {kind: gemm_collective, tp: 8, m: 8192, n: 8192, k: 8192, primitive: all_reduce}\n"
    "schemes:\n"
    "  - no_overlap\n"
    "  - name: flashoverlap\n"
    "    params:\n"
    "      groups: auto\n"
    "      wave_sms: {}\n";

std::string write_scenario(const std::string& wave_sms) {
  const fs::path path = fs::temp_directory_path() / ("params-cli-" + wave_sms + ".yaml");
  std::string text = kScenario;
  text.replace(text.find("{}"), 2, wave_sms);
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace

TEST_CASE("an out-of-range scheme knob names file, line and key and exits 2", "[params][cli]") {
  const std::string path = write_scenario("140");  // the H100 profile has 132 SMs
  const CliResult r = cli({"run", path});
  CHECK(r.rc == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "overlap-sim: error: " + path + ":8: schemes.1.params.wave_sms: must be an integer in [1, 132] (got 140)\n");
  fs::remove(path);

  const std::string ok = write_scenario("130");
  const CliResult bad_param = cli({"run", ok, "--scheme", "flashoverlap", "--param", "wave_sms=0"});
  CHECK(bad_param.rc == 2);
  CHECK(bad_param.err == "overlap-sim: error: <input>: --param wave_sms: must be an integer in [1, 132] (got 0)\n");
  fs::remove(ok);
}
