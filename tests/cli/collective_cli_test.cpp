// `overlap-sim collective` (tools/cmd_collective.hpp), run in-process: nccl-tests' table format (read
// back by our nccl-tests importer), the model's choice per row, overrides from options and --set,
// nccl-tests' size syntax, JSON, and exit status 2 with a clear message on bad input.
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cost_model/collective_model.hpp"
#include "cost_model/nccl_tests_import.hpp"
#include "cost_model/profile_loader.hpp"
#include "tests/support/cli_run.hpp"
#include "tools/cli.hpp"
#include "tools/cmd_collective.hpp"

using namespace overlap;

namespace {

using overlap::test::cli;
using overlap::test::CliResult;

// Data rows of an nccl-tests table: the columns of each line that starts with a size.
std::vector<std::vector<std::string>> rows_of(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::vector<std::string> cols;
    std::string c;
    while (ls >> c) cols.push_back(c);
    if (!cols.empty() && std::isdigit(static_cast<unsigned char>(cols[0][0]))) rows.push_back(cols);
  }
  return rows;
}

HardwareProfile h100() {
  return load_profile("h100-sxm-8x-nvswitch", std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware");
}

}  // namespace

TEST_CASE("collective prints nccl-tests' table with NCCL's choice per size", "[cli][collective]") {
  const CliResult r = cli({"collective", "all_reduce", "--hardware", "h100-sxm-8x-nvswitch", "--ranks", "8", "-b", "8",
                           "-e", "8G", "-f", "2"});
  REQUIRE(r.rc == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Catch::Contains("# Collective test starting: all_reduce_perf"));
  CHECK_THAT(r.out, Catch::Contains("#       size         count      type   redop    root     time   algbw   busbw"));
  CHECK_THAT(r.out, Catch::Contains("# NVLS rows: busbw is nccl-tests' algbw x 2(n-1)/n"));
  const auto rows = rows_of(r.out);
  REQUIRE(rows.size() == 31);  // 8 B .. 8 GiB, x2
  const HardwareProfile hw = h100();
  Bytes s = 8;
  for (const auto& row : rows) {
    INFO(row[0]);
    REQUIRE(row.size() == 17);
    CHECK(std::stoll(row[0]) == s);
    CHECK(std::stoll(row[1]) == s / 4);  // float elements
    CHECK(row[2] == "float");
    CHECK(row[3] == "sum");
    CHECK(row[4] == "-1");
    const CollectivePlan plan = plan_collective(hw, CollectivePrimitive::all_reduce, s, 8, "nvlink");
    CHECK(std::stod(row[5]) == Approx(us_from_ps(plan.time_ps)).epsilon(0.01));
    // algbw = S / t, busbw = algbw x 2(n-1)/n (nccl-tests), both to the printed precision.
    const double algbw = static_cast<double>(s) / 1e3 / us_from_ps(plan.time_ps);
    CHECK(std::stod(row[6]) == Approx(algbw).margin(0.006));
    CHECK(std::stod(row[7]) == Approx(algbw * 1.75).margin(0.006));
    CHECK(row[8] == "N/A");
    CHECK(row[9] == row[5]);  // the model does not tell in-place from out-of-place
    CHECK(row[13] == nccl_algorithm_name(plan.algorithm));
    CHECK(row[14] == nccl_protocol_name(plan.protocol));
    CHECK(std::stoi(row[15]) == plan.channels);
    CHECK(row[16] == "model");
    s *= 2;
  }
  CHECK(rows.front()[13] == "Ring");
  CHECK(rows.front()[14] == "LL");
  CHECK(rows.back()[13] == "NVLS");
}

TEST_CASE("collective output reads back as an nccl-tests result", "[cli][collective]") {
  const CliResult r = cli({"collective", "reduce_scatter", "--ranks", "4", "-b", "1M", "-e", "64M"});
  REQUIRE(r.rc == 0);
  std::istringstream in(r.out);
  const NcclTestsResult back = parse_nccl_tests_text(in, "collective output");
  CHECK(back.primitive == CollectivePrimitive::reduce_scatter);
  CHECK(back.n_ranks == 4);
  REQUIRE(back.rows.size() == 7);
  CHECK(back.rows.front().size_bytes == 1 << 20);
  CHECK(back.observed_busbw_factor() == Approx(3.0 / 4).epsilon(0.01));
  // nccl-tests' per-rank count for reduce-scatter, aligned to 16 bytes.
  CHECK(back.rows.front().count == (1 << 20) / 4 / 4);
}

TEST_CASE("collective honours --algo, --proto and --set like NCCL_ALGO / NCCL_PROTO", "[cli][collective]") {
  const CliResult ring = cli({"collective", "all_reduce", "-b", "1G", "-e", "1G", "--algo", "Ring"});
  REQUIRE(ring.rc == 0);
  CHECK(rows_of(ring.out).at(0)[13] == "Ring");
  const CliResult ll = cli({"collective", "all_reduce", "-b", "1G", "-e", "1G", "--set", "hardware.comm.protocol=LL"});
  REQUIRE(ll.rc == 0);
  CHECK(rows_of(ll.out).at(0)[14] == "LL");
  const CliResult set_algo = cli({"collective", "all_reduce", "-b", "64M", "-e", "64M", "--set", "comm.algorithm=Tree",
                                  "--proto", "LL128"});
  REQUIRE(set_algo.rc == 0);
  CHECK(rows_of(set_algo.out).at(0)[13] == "Tree");
  CHECK(rows_of(set_algo.out).at(0)[14] == "LL128");
  // all-to-all runs as send/recv; broadcast has a root.
  const CliResult a2a = cli({"collective", "alltoall", "-b", "1M", "-e", "1M", "--ranks", "8"});
  REQUIRE(a2a.rc == 0);
  CHECK(rows_of(a2a.out).at(0)[3] == "none");
  CHECK(rows_of(a2a.out).at(0)[13] == "SendRecv");
  const CliResult bc = cli({"collective", "broadcast", "-b", "1M", "-e", "1M"});
  REQUIRE(bc.rc == 0);
  CHECK(rows_of(bc.out).at(0)[4] == "0");
}

TEST_CASE("collective --format json mirrors nccl-tests' JSON report", "[cli][collective]") {
  const CliResult r = cli({"collective", "all_gather", "--hardware", "a100-sxm-8x-nvswitch", "-b", "8K", "-e", "32K",
                           "-d", "half", "--format", "json"});
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["config"]["devices"].size() == 8);
  REQUIRE(j["results"].size() == 3);
  CHECK(j["results"][0]["size"] == 8192);
  CHECK(j["results"][0]["count"] == 8192 / 2 / 8);
  CHECK(j["results"][0]["type"] == "half");
  CHECK(j["results"][0]["algorithm"] == "Ring");
  const NcclTestsResult back = parse_nccl_tests_json(j, "json");
  CHECK(back.rows.size() == 3);
  CHECK(back.n_ranks == 8);
}

TEST_CASE("collective: bad input exits 2 with a message naming it", "[cli][collective]") {
  struct Bad {
    std::vector<std::string> args;
    std::string says;
  };
  const Bad bad[] = {
      {{"collective", "allreduce"}, "unknown collective 'allreduce'"},
      {{"collective", "all_reduce", "-b", "8X"}, "-b: not a size"},
      {{"collective", "all_reduce", "-e", "5Q"}, "-e: not a size"},
      {{"collective", "all_reduce", "-b", "1G", "-e", "1M"}, "larger than -e"},
      {{"collective", "all_reduce", "-f", "1"}, "-f: must be an integer of at least 2"},
      {{"collective", "all_reduce", "-i", "0"}, "-i: must be a positive size"},
      {{"collective", "all_reduce", "-d", "float128"}, "-d: unknown data type"},
      {{"collective", "all_reduce", "--ranks", "9"}, "--ranks: must be between 2 and the profile's 8 GPUs"},
      {{"collective", "all_reduce", "--algo", "Butterfly"}, "--algo: unknown algorithm 'Butterfly'"},
      {{"collective", "all_reduce", "--proto", "LL64"}, "--proto: unknown protocol 'LL64'"},
      {{"collective", "all_reduce", "--hardware", "a100-sxm-8x-nvswitch", "--algo", "NVLS"}, "NVLink SHARP"},
      {{"collective", "broadcast", "--algo", "Tree"}, "broadcast runs only as Ring"},
      {{"collective", "all_reduce", "--set", "hardware.comm.protocol=LL256"}, "comm.protocol"},
      {{"collective", "all_reduce", "--hardware", "nope"}, "unknown hardware profile 'nope'"},
  };
  for (const Bad& b : bad) {
    const CliResult r = cli(b.args);
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::Contains(b.says));
    CHECK(r.out.empty());
  }
}

TEST_CASE("nccl-tests' size syntax", "[cli][collective]") {
  using tools::parse_nccl_tests_size;
  CHECK(parse_nccl_tests_size("8") == 8);
  CHECK(parse_nccl_tests_size("1K") == 1024);
  CHECK(parse_nccl_tests_size("1k") == 1024);
  CHECK(parse_nccl_tests_size("8M") == 8LL << 20);
  CHECK(parse_nccl_tests_size("8G") == 8LL << 30);
  CHECK(parse_nccl_tests_size("1.5K") == 1536);
  CHECK_FALSE(parse_nccl_tests_size(""));
  CHECK_FALSE(parse_nccl_tests_size("K"));
  CHECK_FALSE(parse_nccl_tests_size("8KB"));
  CHECK_FALSE(parse_nccl_tests_size("8T"));
  CHECK_FALSE(parse_nccl_tests_size("-8"));
  CHECK_FALSE(parse_nccl_tests_size("1e3"));
}
