// The profile's `comm:` section (NCCL's model: algorithm / protocol overrides, tuner constants, NVLS)
// and calibrated curves per protocol, including an nccl-tests import forced to one protocol.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cost_model/collective_model.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/nccl_tests_import.hpp"
#include "cost_model/profile_json.hpp"
#include "cost_model/profile_loader.hpp"
#include "tests/support/profile_fixtures.hpp"

using namespace overlap;
using A = NcclAlgorithm;
using P = NcclProtocol;

namespace {

using test::inline_profile_error;
using test::load_inline_profile;

const std::string kHardwareDir = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";

const std::string kBase =
    "gpu: {sm_count: 100, peak_tflops: {bf16: 500}}\n"                  // 1
    "fabric: {num_gpus: 8, links: {nvlink: {bandwidth_gbps: 300}}}\n";  // 2

}  // namespace

TEST_CASE("comm: NCCL_ALGO / NCCL_PROTO-like settings, generation and NVLS", "[profile][nccl]") {
  const HardwareProfile d = load_inline_profile(kBase);
  CHECK_FALSE(d.comm.algorithm);
  CHECK_FALSE(d.comm.protocol);
  CHECK(d.comm.arch == NcclArch::hopper);
  CHECK_FALSE(d.comm.nvlink_sharp);
  CHECK(d.comm.nvls_channels == 16);
  CHECK(d.comm.tuner.at(A::Ring, P::LL).base_us == 6.6);
  const HardwareProfile p = load_inline_profile(kBase +
                                        "comm:\n"
                                        "  algorithm: nvlstree\n"  // NCCL compares names case-insensitively
                                        "  protocol: LL128\n"
                                        "  arch: ampere\n"
                                        "  nvlink_sharp: true\n"
                                        "  nvls_channels: 8\n"
                                        "  ll_max_bw_gbps: 50\n"
                                        "  link_kinds: {nvlink: pci}\n"
                                        "  latency_us: {Ring: {Simple: {base: 1.5, nvlink: 0.25}}, Tree: {LL: {net: 9}}}\n");
  CHECK(p.comm.algorithm == A::NVLSTree);
  CHECK(p.comm.protocol == P::LL128);
  CHECK(p.comm.arch == NcclArch::ampere);
  CHECK(p.comm.nvlink_sharp);
  CHECK(p.comm.nvls_channels == 8);
  CHECK(p.comm.tuner.ll_max_bw_gbps[0] == 50);
  CHECK(p.comm.tuner.ll_max_bw_gbps[2] == 50);
  CHECK(p.comm.tuner.tree_channel_gbps[0] == 24.0);  // Ampere's, untouched
  CHECK(p.comm.link_kinds.at("nvlink") == NcclHw::pci);
  CHECK(p.comm.tuner.at(A::Ring, P::Simple).base_us == 1.5);
  CHECK(p.comm.tuner.at(A::Ring, P::Simple).hw_us[0] == 0.25);
  CHECK(p.comm.tuner.at(A::Ring, P::Simple).hw_us[1] == 5.7);  // the rest stay NCCL's
  CHECK(p.comm.tuner.at(A::Tree, P::LL).hw_us[2] == 9);
  // Written back as JSON, the section reads again as the same settings.
  const auto j = profile_to_json(p);
  CHECK(j["comm"]["algorithm"] == "NVLSTree");
  CHECK(j["comm"]["protocol"] == "LL128");
  CHECK(j["comm"]["latency_us"]["Ring"]["Simple"]["base"] == 1.5);
  CHECK(j["comm"]["ll_max_bw_gbps"] == 50);
}

TEST_CASE("comm: the profile's NCCL_PROTO reaches the model through --set", "[profile][nccl]") {
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", kHardwareDir, {"hardware.comm.protocol=LL"});
  CHECK(hw.comm.protocol == P::LL);
  CHECK(plan_collective(hw, CollectivePrimitive::all_reduce, Bytes{1} << 30, 8, "nvlink").protocol == P::LL);
  const HardwareProfile ring = load_profile("h100-sxm-8x-nvswitch", kHardwareDir, {"comm.algorithm=Ring"});
  CHECK(plan_collective(ring, CollectivePrimitive::all_reduce, Bytes{1} << 30, 8, "nvlink").algorithm == A::Ring);
}

TEST_CASE("comm: legacy Ring/Simple latency keys still set NCCL's Ring/Simple latency", "[profile][nccl]") {
  const HardwareProfile p = load_inline_profile(kBase + "comm: {base_latency_us: 2.0, step_latency_us: 0.5}\n");
  CHECK(p.comm.tuner.at(A::Ring, P::Simple).base_us == 2.0);
  for (double v : p.comm.tuner.at(A::Ring, P::Simple).hw_us) CHECK(v == 0.5);
}

TEST_CASE("comm: bad settings name the line and key", "[profile][nccl]") {
  CHECK_THAT(inline_profile_error(kBase + "comm: {algorithm: Butterfly}\n"),
             Catch::Contains("scenarios/x.yaml:3: hardware.comm.algorithm") && Catch::Contains("NCCL's names"));
  CHECK_THAT(inline_profile_error(kBase + "comm: {protocol: LL64}\n"), Catch::Contains("hardware.comm.protocol: unknown protocol"));
  CHECK_THAT(inline_profile_error(kBase + "comm: {arch: kepler}\n"), Catch::Contains("hardware.comm.arch"));
  CHECK_THAT(inline_profile_error(kBase + "comm: {protocol_efficiency: 0.5}\n"),
             Catch::Contains("hardware.comm.protocol_efficiency") && Catch::Contains("comm.protocol"));
  CHECK_THAT(inline_profile_error(kBase + "comm: {latency_us: {Ring: {LL64: {base: 1}}}}\n"),
             Catch::Contains("hardware.comm.latency_us.Ring.LL64"));
  CHECK_THAT(inline_profile_error(kBase + "comm: {latency_us: {Ring: {LL: {bass: 1}}}}\n"), Catch::Contains("bass"));
  CHECK_THAT(inline_profile_error(kBase + "comm: {link_kinds: {nvlink: ethernet}}\n"), Catch::Contains("hardware.comm.link_kinds.nvlink"));
  CHECK_THAT(inline_profile_error(kBase + "comm: {nvls_channels: 200}\n"), Catch::Contains("hardware.comm.nvls_channels"));
  CHECK_THAT(inline_profile_error(kBase + "comm: {nvlink_sharp: maybe}\n"), Catch::Contains("hardware.comm.nvlink_sharp"));
}

TEST_CASE("curves per protocol: profile keys and nccl-tests runs forced with NCCL_PROTO", "[profile][nccl][curves]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("overlap-nccl-profile-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream f(dir / "ll128.txt");
    f << "# NCCL_PROTO=LL128 ./build/all_reduce_perf -b 1M -e 4M -f 2 -g 8\n"
         "# Collective test starting: all_reduce_perf\n"
         "     1048576        262144     float     sum      -1    20.00   52.43   91.75      0    20.00   52.43   91.75      0\n"
         "     4194304       1048576     float     sum      -1    40.00  104.86  183.50      0    40.00  104.86  183.50      0\n";
  }
  const HardwareProfile p = load_inline_profile(kBase + "curves:\n  all_reduce.n8: {nccl_tests: ll128.txt}\n  all_gather.Simple: {alpha_us: 3, beta_gbps: 100}\n",
                                        dir.string());
  CHECK(p.curves.count("all_reduce.n8.LL128") == 1);  // the import said which protocol it measured
  CHECK(p.curves.count("all_reduce.n8") == 0);
  CHECK(p.curves.count("all_gather.Simple") == 1);
  CHECK_THAT(inline_profile_error(kBase + "curves: {all_reduce.LL256: {alpha_us: 1, beta_gbps: 1}}\n"), Catch::Contains("unknown curve"));
  CHECK_THAT(inline_profile_error(kBase + "curves: {all_reduce.n8.ll: {alpha_us: 1, beta_gbps: 1}}\n"), Catch::Contains("unknown curve"));
  CHECK_THAT(inline_profile_error(kBase + "curves: {all_reduce.Simple.n8: {alpha_us: 1, beta_gbps: 1}}\n"), Catch::Contains("unknown curve"));
  try {
    load_inline_profile(kBase + "curves:\n  all_reduce.LL: {nccl_tests: ll128.txt}\n", dir.string());
    FAIL("a curve key naming another protocol than its nccl-tests file must be refused");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("NCCL_PROTO=LL128"));
  }
  fs::remove_all(dir);
}

TEST_CASE("nccl-tests output says which protocol and algorithm a run was forced to", "[nccl_tests][nccl]") {
  auto parse = [](const std::string& text) {
    std::istringstream in(text);
    return parse_nccl_tests_text(in, "t");
  };
  const std::string row = "  1024  256  float  sum  -1  10.0  0.10  0.18  0  10.0  0.10  0.18  0\n";
  CHECK(parse("hgx:1:1 [0] NCCL INFO NCCL_PROTO set by environment to LL128\n" + row).protocol == P::LL128);
  CHECK(parse("hgx:1:1 [0] NCCL INFO NCCL_ALGO set by environment to Ring\n" + row).algorithm == A::Ring);
  CHECK(parse("# NCCL_ALGO=NVLS NCCL_PROTO=Simple all_reduce_perf\n" + row).protocol == P::Simple);
  CHECK(parse("# NCCL_ALGO=NVLS NCCL_PROTO=Simple all_reduce_perf\n" + row).algorithm == A::NVLS);
  CHECK_FALSE(parse("# NCCL_PROTO=LL,LL128\n" + row).protocol);  // a list forces no single protocol
  CHECK_FALSE(parse("# NCCL_PROTO=^LL128\n" + row).protocol);
  CHECK_FALSE(parse(row).protocol);
  const auto j = nlohmann::json::parse(
      R"({"config": {"env": {"NCCL_PROTO": "LL"}}, "results": [{"size": 1024, "out_of_place": {"time": 10, "alg_bw": 0.1, "bus_bw": 0.18}}]})");
  CHECK(parse_nccl_tests_json(j, "j").protocol == P::LL);
}
