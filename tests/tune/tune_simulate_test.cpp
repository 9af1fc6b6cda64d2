// The engine-backed wave-group search and the operator-level tuner (sim/tune_wave_groups.hpp).
#include <catch2/catch.hpp>

#include <numeric>
#include <set>

#include "cost_model/profile_loader.hpp"
#include "sim/tune_wave_groups.hpp"
#include "sim/workload_shapes.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

const std::string kHardwareDir = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";

Workload gemm(int tp, Primitive p, std::int64_t m, std::int64_t n, std::int64_t k, DType dt) {
  Workload w;
  w.kind = WorkloadKind::gemm_collective;
  w.tp = tp;
  w.shape = GemmCollective{m, n, k, dt, p, false};
  return w;
}

struct Case {
  const char* hardware;
  Workload w;
};

std::vector<Case> cases() {
  return {
      // flashoverlap-paper Sec. 4.1.2's example shape (8 waves on an RTX 4090), reduce-scatter over PCIe.
      {"rtx4090-4x-pcie", gemm(4, Primitive::reduce_scatter, 4096, 8192, 7168, DType::fp16)},
      // The A800 AllReduce scenario's shape (20 waves).
      {"a800-8x-nvlink", gemm(4, Primitive::all_reduce, 8192, 8192, 4096, DType::fp16)},
      // All-to-all on H100, a short GEMM so communication dominates.
      {"h100-sxm-8x-nvswitch", gemm(8, Primitive::all_to_all, 8192, 4096, 1024, DType::bf16)},
  };
}

}  // namespace

TEST_CASE("simulate never returns a partition the engine rates worse than flashoverlap's or optimal's", "[tune][simulate]") {
  for (const Case& c : cases()) {
    INFO(c.hardware);
    const HardwareProfile hw = load_profile(c.hardware, kHardwareDir);
    WaveGroupTuneOptions o;
    o.search = WaveGroupSearch::simulate;
    o.simulate_budget = 24;
    const WaveGroupTuneResult sim = tune_wave_groups(c.w, hw, Fidelity::curve, o);
    o.search = WaveGroupSearch::flashoverlap;
    const WaveGroupTuneResult fo = tune_wave_groups(c.w, hw, Fidelity::curve, o);
    o.search = WaveGroupSearch::optimal;
    const WaveGroupTuneResult opt = tune_wave_groups(c.w, hw, Fidelity::curve, o);
    // The engine's latency of each returned partition, measured independently of the tuner.
    const Ps sim_ps = simulate_wave_groups_ps(c.w, hw, Fidelity::curve, sim.groups_waves);
    const Ps fo_ps = simulate_wave_groups_ps(c.w, hw, Fidelity::curve, fo.groups_waves);
    const Ps opt_ps = simulate_wave_groups_ps(c.w, hw, Fidelity::curve, opt.groups_waves);
    CHECK(sim.simulated_ps == sim_ps);
    CHECK(fo.simulated_ps == fo_ps);
    CHECK(sim_ps <= fo_ps);
    CHECK(sim_ps <= opt_ps);
    // The predictor agrees with itself: optimal is never predicted worse than the published search.
    CHECK(opt.predicted_ps <= fo.predicted_ps);
    // Within the budget, every candidate simulated, the chosen one the fastest of them.
    CHECK(sim.engine_runs <= 24);
    CHECK(static_cast<int>(sim.candidates.size()) == sim.engine_runs);
    for (const auto& cand : sim.candidates) {
      CHECK(cand.simulated_ps >= sim.simulated_ps);
      CHECK(std::accumulate(cand.groups_waves.begin(), cand.groups_waves.end(), 0) == sim.waves);
    }
    // Groups in tiles cover the GEMM exactly.
    CHECK(std::accumulate(sim.groups_tiles.begin(), sim.groups_tiles.end(), std::int64_t{0}) == sim.plan.tiles);
    CHECK(sim.no_overlap_ps > 0);
    CHECK(sim.speedup_vs_no_overlap == Approx(static_cast<double>(sim.no_overlap_ps) / static_cast<double>(sim.simulated_ps)));
  }
}

TEST_CASE("simulate gives the same answer on one thread and on two", "[tune][simulate]") {
  const Case c = cases()[1];
  const HardwareProfile hw = load_profile(c.hardware, kHardwareDir);
  WaveGroupTuneOptions o;
  o.simulate_budget = 16;
  o.jobs = 1;
  const WaveGroupTuneResult one = tune_wave_groups(c.w, hw, Fidelity::curve, o);
  o.jobs = 2;
  const WaveGroupTuneResult two = tune_wave_groups(c.w, hw, Fidelity::curve, o);
  CHECK(one.groups_waves == two.groups_waves);
  CHECK(one.simulated_ps == two.simulated_ps);
  REQUIRE(one.candidates.size() == two.candidates.size());
  for (std::size_t i = 0; i < one.candidates.size(); ++i) {
    CHECK(one.candidates[i].groups_waves == two.candidates[i].groups_waves);
    CHECK(one.candidates[i].simulated_ps == two.candidates[i].simulated_ps);
  }
}

TEST_CASE("the FlashOverlap export holds its tuner's keys, the tile order and the groups in tiles", "[tune][export]") {
  const Case c = cases()[1];
  const HardwareProfile hw = load_profile(c.hardware, kHardwareDir);
  WaveGroupTuneOptions o;
  o.search = WaveGroupSearch::flashoverlap;
  const WaveGroupTuneResult r = tune_wave_groups(c.w, hw, Fidelity::curve, o);
  const GemmCollective g = gemm_collective_shape(c.w);
  const auto j = flashoverlap_config(r, g, 1, std::nullopt);
  for (const char* key : {"BM", "BN", "dur", "hint", "cSeg", "rLDN"}) CHECK(j.contains(key));
  CHECK(!j.contains("Algo"));  // unknown unless given
  CHECK(flashoverlap_config(r, g, 1, 7)["Algo"] == 7);
  CHECK(j["BM"] == r.plan.tile_m);
  CHECK(j["BN"] == r.plan.tile_n);
  CHECK(j["rLDN"] == 1);
  CHECK(j["dur"].get<double>() == Approx(static_cast<double>(r.gemm_alone_ps) / 1e9));  // ms
  std::int64_t total = 0;
  for (const auto& t : j["cSeg"]) total += t.get<std::int64_t>();
  CHECK(total == r.plan.tiles);
  // Every group but the last is a whole number of waves of SMs - 2 tiles.
  for (std::size_t i = 0; i + 1 < j["cSeg"].size(); ++i) CHECK(j["cSeg"][i].get<std::int64_t>() % r.tiles_per_wave == 0);
  std::set<std::int64_t> hint;
  for (const auto& t : j["hint"]) hint.insert(t.get<std::int64_t>());
  CHECK(hint.size() == static_cast<std::size_t>(r.plan.tiles));
  CHECK(j["hint"].size() == static_cast<std::size_t>(r.plan.tiles));
}

TEST_CASE("tuning refuses what the scheme cannot run", "[tune]") {
  const HardwareProfile hw = load_profile("a800-8x-nvlink", kHardwareDir);
  CHECK_THROWS_AS(tune_wave_groups(gemm(4, Primitive::all_gather, 1024, 1024, 1024, DType::bf16), hw, Fidelity::curve),
                  InputError);
  WaveGroupTuneOptions o;
  o.search = WaveGroupSearch::exhaustive;
  // 65536 x 8192 with 256 x 128 tiles: 16384 tiles, 155 waves on 106 SMs.
  CHECK_THROWS_AS(tune_wave_groups(gemm(4, Primitive::all_reduce, 65536, 8192, 1024, DType::fp16), hw, Fidelity::curve, o),
                  std::length_error);
}
