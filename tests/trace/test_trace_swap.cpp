// The replay's scheme swap (tools/trace_swap.hpp): `--what-if swap.all_gather=async_tp` on
// tests/data/trace/swap.json (make_fixtures.py).
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "calibrate/traces/replay_what_if.hpp"
#include "cost_model/profile_loader.hpp"
#include "sim/metrics.hpp"
#include "sim/workload.hpp"
#include "tests/support/cli_run.hpp"

using namespace overlap;

namespace {

const std::string kSwapTrace = std::string(OVERLAP_SOURCE_DIR) + "/tests/data/trace/swap.json";

nlohmann::json swap_replay(const std::string& scheme) {
  const auto r = overlap::test::cli({"trace", kSwapTrace, "--replay", "--hardware", "h100-sxm-8x-nvswitch", "--what-if",
                                     "swap.all_gather=" + scheme, "--format", "json"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("scheme swap: an all-gather and the GEMM reading it replaced by async_tp's time, exact matches only",
          "[trace][replay][swap]") {
  const nlohmann::json j = swap_replay("async_tp");
  const auto& swap = j["swap"];
  CHECK(swap["scheme"] == "async_tp");
  // Two all-gathers of 33554432 elements: the first is followed by a GEMM of M x K = 8192 x 4096 =
  // 33554432 (matched), the second by one of 4096 x 4096 (another size: not matched).
  CHECK(swap["all_gathers"] == 2);
  REQUIRE(swap["pairs"].size() == 1);
  const auto& p = swap["pairs"][0];
  CHECK(p["m"] == 8192);
  CHECK(p["n"] == 2048);
  CHECK(p["k"] == 4096);
  CHECK(p["group"] == 2);
  CHECK(p["dtype"] == "bf16");
  // The pair's time is the simulator's for the workload gemm_collective {8192, 2048, 4096, bf16,
  // all_gather} on a TP group of 2, async_tp at its defaults.
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware");
  sim::Workload w;
  w.kind = sim::WorkloadKind::gemm_collective;
  w.tp = 2;
  w.shape = sim::GemmCollective{8192, 2048, 4096, DType::bf16, sim::Primitive::all_gather, false};
  const auto results = sim::evaluate_all({sim::SchemeRequest{"async_tp", nlohmann::json::object()}}, w, hw, sim::Fidelity::steps);
  REQUIRE(results.size() == 1);
  const double scheme_us = static_cast<double>(results.front().latency_ps / 1000) / 1000.0;
  CHECK(p["scheme_us"].get<double>() == Approx(scheme_us).margin(1e-3));
  // The matched all-gather runs for 0 in the replay: of the two all-gathers (the same message, priced
  // the same) one is left, so the collectives' busy time is half the replay's without the swap.
  const auto collective_busy = [](const nlohmann::json& x) {
    for (const auto& k : x["kinds"])
      if (k["kind"] == "collective") return k["predicted_busy_us"].get<double>();
    FAIL("no collective row");
    return 0.0;
  };
  const auto plain = overlap::test::cli({"trace", kSwapTrace, "--replay", "--hardware", "h100-sxm-8x-nvswitch", "--format", "json"});
  REQUIRE(plain.rc == 0);
  CHECK(collective_busy(j) == Approx(collective_busy(nlohmann::json::parse(plain.out)) / 2).margin(1e-3));
  // The table names the pair.
  const auto t = overlap::test::cli({"trace", kSwapTrace, "--replay", "--hardware", "h100-sxm-8x-nvswitch", "--what-if",
                                     "swap.all_gather=async_tp"});
  REQUIRE(t.rc == 0);
  CHECK(t.out.find("swap.all_gather=async_tp: 1 of 2 all-gather(s) matched") != std::string::npos);
  CHECK(t.out.find("GEMM 8192x2048x4096 bf16") != std::string::npos);
}

TEST_CASE("scheme swap: refused without a profile, for a name that is no scheme, or a scheme that does not gather",
          "[trace][replay][swap]") {
  using overlap::test::cli;
  CHECK(traces::parse_what_if("swap.all_gather=async_tp").swap_all_gather == "async_tp");
  CHECK_THROWS_AS(traces::parse_what_if("swap.all_gather="), std::invalid_argument);
  CHECK_THROWS_AS(traces::parse_what_if("swap.all_gather=Async TP"), std::invalid_argument);
  const auto no_hw = cli({"trace", kSwapTrace, "--replay", "--what-if", "swap.all_gather=async_tp"});
  CHECK(no_hw.rc == 2);
  CHECK(no_hw.err.find("--hardware") != std::string::npos);
  for (const char* scheme : {"no_such_scheme", "dtp"}) {
    INFO(scheme);
    const auto r = cli({"trace", kSwapTrace, "--replay", "--hardware", "h100-sxm-8x-nvswitch", "--what-if",
                        std::string("swap.all_gather=") + scheme});
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("swap.all_gather") != std::string::npos);
  }
}
