// The replay's SM sharing (calibrate/traces/sm_share.hpp) and the comm.sms what-if, on
// tests/data/trace/sm_share.json (make_fixtures.py), in closed form.
#include <cmath>
#include <map>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "calibrate/traces/gemm_pricing.hpp"
#include "calibrate/traces/replay_what_if.hpp"
#include "cost_model/profile_loader.hpp"
#include "tests/support/cli_run.hpp"

using namespace overlap;
using namespace overlap::traces;

namespace {

const std::string kSmShareTrace = std::string(OVERLAP_SOURCE_DIR) + "/tests/data/trace/sm_share.json";

// The replay's JSON: busy time per kind of the predicted run, in microseconds, and its SM counts.
struct SmReplay {
  std::map<std::string, double> busy_us;
  nlohmann::json sm_share;
};

SmReplay sm_replay(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"trace", kSmShareTrace, "--replay", "--hardware", "h100-sxm-8x-nvswitch", "--format", "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = overlap::test::cli(args);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  SmReplay out;
  for (const auto& k : j["kinds"]) out.busy_us[k["kind"].get<std::string>()] = k["predicted_busy_us"].get<double>();
  out.sm_share = j["hardware"]["sm_share"];
  return out;
}

// The model's time for the fixture's aten::mm (4096^3 bf16) on H100, as the replay prices it (whole ns).
double gemm_priced_ns() {
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware");
  const GemmPrice p = price_gemm(hw, traces::GemmShape{1, 4096, 4096, 4096, "c10::BFloat16"},
                                 "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
                                 "segment_k_off_kernel__5x_cublas");
  REQUIRE(p.ns);
  return static_cast<double>(static_cast<std::int64_t>(*p.ns));
}

}  // namespace

TEST_CASE("SM sharing: a priced kernel beside communication runs on the SMs it leaves", "[trace][replay][sm_share]") {
  // H100: 132 SMs. The priced aten::mm ran wholly beside a NCCL kernel of grid 32: the model's
  // whole-GPU time x 132 / (132 - 32). The nvjet GEMM kept as measured already ran beside one:
  // unchanged (200 us). The elementwise kernel ran beside a NCCL kernel of unrecorded grid: left as it
  // was (100 us) and counted.
  const SmReplay r = sm_replay({});
  const double gemm = std::llround(gemm_priced_ns() * 132.0 / 100.0);
  CHECK(r.busy_us.at("gemm") == Approx((gemm + 200000.0) / 1000.0).margin(1e-3));
  CHECK(r.busy_us.at("memory_bound") == Approx(100.0).margin(1e-3));
  CHECK(r.sm_share["sm_count"] == 132);
  CHECK(r.sm_share["kernels_rescaled"] == 1);
  CHECK(r.sm_share["kernels_beside_unknown_grid"] == 1);
}

TEST_CASE("SM sharing: comm.sms=N re-times the compute kernels beside communication", "[trace][replay][sm_share]") {
  // Each NCCL kernel holds 4 SMs instead of 32. The priced GEMM: whole-GPU time x 132 / (132 - 4).
  // The measured nvjet GEMM [400, 600) ran on 100 SMs over [450, 550): 50 + 100 x 100 / 128 + 50 =
  // 178.125 us (each piece's time over the SMs it had, exact in binary).
  const SmReplay r = sm_replay({"--what-if", "comm.sms=4"});
  const double gemm = std::llround(gemm_priced_ns() * 132.0 / 128.0);
  CHECK(r.busy_us.at("gemm") == Approx((gemm + 178125.0) / 1000.0).margin(1e-3));
  CHECK(r.busy_us.at("memory_bound") == Approx(100.0).margin(1e-3));
  CHECK(r.sm_share["kernels_rescaled"] == 2);
  // The communication kernels keep their durations: 300 + 100 + 100 us.
  const SmReplay same = sm_replay({"--what-if", "comm.sms=32"});
  CHECK(same.busy_us.at("collective") == Approx(500.0).margin(1e-3));
  // comm.sms=32 is what the trace held: the measured nvjet GEMM unchanged, as without the what-if.
  CHECK(same.busy_us.at("gemm") == Approx(sm_replay({}).busy_us.at("gemm")).margin(1e-3));
}

TEST_CASE("SM sharing: comm.sms refused without a profile, past its SMs, or not whole", "[trace][replay][sm_share]") {
  using overlap::test::cli;
  CHECK(parse_what_if("comm.sms=16").comm_sms == 16);
  CHECK_THROWS_AS(parse_what_if("comm.sms=2.5"), std::invalid_argument);
  CHECK_THROWS_AS(parse_what_if("comm.sms=0"), std::invalid_argument);
  const auto no_hw = cli({"trace", kSmShareTrace, "--replay", "--what-if", "comm.sms=4"});
  CHECK(no_hw.rc == 2);
  CHECK(no_hw.err.find("--hardware") != std::string::npos);
  const auto too_many = cli({"trace", kSmShareTrace, "--replay", "--hardware", "h100-sxm-8x-nvswitch", "--what-if", "comm.sms=132"});
  CHECK(too_many.rc == 2);
  CHECK(too_many.err.find("132 SMs") != std::string::npos);
  CHECK(too_many.out.empty());
}
