// Collective cost: curve (alpha-beta) and steps fidelities agree on an idle fabric; byte accounting.
#include <catch2/catch.hpp>

#include "cost_model/collective_model.hpp"
#include "cost_model/profile_loader.hpp"

using namespace overlap;

namespace {
// 500 GB/s = 0.5 B/ps exactly, efficiencies 1: per-step transfer times are whole picoseconds.
HardwareProfile exact_profile() {
  HardwareProfile p;
  p.fabric.links["nvlink"] = LinkClass{"nvlink", 500, 1.0};
  p.comm.bandwidth_efficiency = 1.0;
  p.comm.protocol_efficiency = 1.0;
  return p;
}
constexpr CollectivePrimitive kPrims[] = {CollectivePrimitive::all_reduce, CollectivePrimitive::reduce_scatter,
                                          CollectivePrimitive::all_gather, CollectivePrimitive::all_to_all};
constexpr CollectiveAlgorithm kAlgos[] = {CollectiveAlgorithm::ring, CollectiveAlgorithm::pairwise,
                                          CollectiveAlgorithm::direct};
}  // namespace

TEST_CASE("NCCL alpha-beta model (facts.md)", "[collective]") {
  const HardwareProfile p = exact_profile();
  const Bytes s = 64 << 20;
  // ring all-reduce, 8 ranks: 8.4 + 14 * 3.4 us + S * 2 * 7/8 / 0.5 B/ps.
  CHECK(collective_time_ps(p, CollectivePrimitive::all_reduce, s, 8, "nvlink") ==
        ps_from_us(8.4) + 14 * ps_from_us(3.4) + s * 7 / 4 * 2);
  CHECK(collective_time_ps(p, CollectivePrimitive::reduce_scatter, s, 8, "nvlink") ==
        ps_from_us(8.4) + 7 * ps_from_us(3.4) + s * 7 / 8 * 2);
  CHECK(collective_time_ps(p, CollectivePrimitive::all_reduce, s, 1, "nvlink") == 0);
  CHECK_THROWS_AS(collective_time_ps(p, CollectivePrimitive::all_reduce, s, 8, "pcie"), std::invalid_argument);
}

TEST_CASE("calibrated curves take precedence", "[collective]") {
  HardwareProfile p = exact_profile();
  p.curves["all_reduce"] = BandwidthCurve::from_alpha_beta(1.0, 500);
  CHECK(collective_time_ps(p, CollectivePrimitive::all_reduce, 1'000'000, 8, "nvlink") == ps_from_us(1.0) + 2'000'000);
  p.curves["all_reduce.n4"] = BandwidthCurve::from_alpha_beta(2.0, 500);
  CHECK(collective_time_ps(p, CollectivePrimitive::all_reduce, 1'000'000, 4, "nvlink") == ps_from_us(2.0) + 2'000'000);
}

TEST_CASE("steps on an idle fabric take exactly the curve time", "[collective]") {
  const HardwareProfile p = exact_profile();
  for (int n : {2, 4, 8}) {
    const Bytes s = Bytes{n} * n * 1'000'000;  // divisible by n (and n^2 for all-to-all)
    for (auto prim : kPrims) {
      for (auto algo : kAlgos) {
        INFO(collective_primitive_name(prim) << " " << collective_algorithm_name(algo) << " n=" << n);
        const auto sched = collective_steps(p, prim, s, n, "nvlink", algo);
        CHECK(sched.idle_time_ps() == collective_model_time_ps(p, prim, s, n, "nvlink", algo));
      }
    }
  }
}

TEST_CASE("steps agree with the curve within rounding on the default profile", "[collective]") {
  const HardwareProfile p = load_profile("h100-sxm-8x-nvswitch", std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware");
  const Bytes s = 8 * 12'345'678;
  const auto sched = collective_steps(p, CollectivePrimitive::all_reduce, s, 8, "nvlink");
  const Ps curve = collective_time_ps(p, CollectivePrimitive::all_reduce, s, 8, "nvlink");
  CHECK(std::llabs(sched.idle_time_ps() - curve) <= static_cast<Ps>(sched.num_steps()));
}

TEST_CASE("byte accounting: each rank sends and receives what the collective requires", "[collective]") {
  const HardwareProfile p = exact_profile();
  const int n = 8;
  const Bytes s = 64 << 20;
  for (auto algo : kAlgos) {
    INFO(collective_algorithm_name(algo));
    const auto rs = collective_steps(p, CollectivePrimitive::reduce_scatter, s, n, "nvlink", algo);
    const auto ag = collective_steps(p, CollectivePrimitive::all_gather, s, n, "nvlink", algo);
    const auto ar = collective_steps(p, CollectivePrimitive::all_reduce, s, n, "nvlink", algo);
    const auto a2a = collective_steps(p, CollectivePrimitive::all_to_all, s, n, "nvlink", algo);
    for (int r = 0; r < n; ++r) {
      CHECK(rs.bytes_sent(r) == s * (n - 1) / n);
      CHECK(rs.bytes_received(r) == s * (n - 1) / n);
      CHECK(ag.bytes_sent(r) == s * (n - 1) / n);
      CHECK(ar.bytes_sent(r) == 2 * s * (n - 1) / n);
      CHECK(ar.bytes_received(r) == 2 * s * (n - 1) / n);
      CHECK(a2a.bytes_sent(r) == s * (n - 1) / n);
    }
    // Reduce-scatter reduces every received byte; all-gather only copies.
    Bytes reduced = 0;
    for (const auto& st : rs.ranks[0]) reduced += st.reduce_bytes;
    CHECK(reduced == s * (n - 1) / n);
    for (const auto& st : ag.ranks[0]) CHECK(st.reduce_bytes == 0);
  }
}

TEST_CASE("double binary tree all-reduce", "[collective]") {
  const HardwareProfile p = exact_profile();
  for (int n : {2, 3, 8, 13}) {
    const Bytes s = 1 << 20;
    const auto t = collective_steps(p, CollectivePrimitive::all_reduce, s, n, "nvlink", CollectiveAlgorithm::tree);
    Bytes sent = 0, recv = 0;
    for (int r = 0; r < n; ++r) {
      sent += t.bytes_sent(r);
      recv += t.bytes_received(r);
    }
    CHECK(sent == recv);
    CHECK(sent == 2 * (n - 1) * s);  // each tree: n-1 edges up and down, S/2 each, two trees
    CHECK(collective_time_ps(p, CollectivePrimitive::all_reduce, s, n, "nvlink", CollectiveAlgorithm::tree) ==
          t.idle_time_ps());
  }
  CHECK_THROWS_AS(collective_steps(p, CollectivePrimitive::all_gather, 1024, 4, "nvlink", CollectiveAlgorithm::tree),
                  std::invalid_argument);
}
