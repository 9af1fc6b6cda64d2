// The collective model as NCCL runs it (cost_model/collective_model.hpp, nccl_tuning.hpp): NCCL's
// closed forms per (algorithm, protocol) with its published constants, the choice by minimum time and
// its overrides, channels by size, the steps of every algorithm taking the plan's time on an idle
// fabric, NVLS's traffic through the switch, byte accounting, and calibrated curves winning.
#include <catch2/catch.hpp>

#include <cmath>

#include "cost_model/collective_model.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/nccl_tuning.hpp"
#include "cost_model/profile_loader.hpp"

using namespace overlap;
using A = NcclAlgorithm;
using P = NcclProtocol;

namespace {

// One NVSwitch node of Hopper GPUs: 500 GB/s ports, NCCL's graph bandwidth = the line rate (efficiency
// 1), 16 channels, NVLink SHARP. NCCL's default Hopper tuner constants.
HardwareProfile switch_profile(int gpus, double gbps = 500) {
  HardwareProfile p;
  p.name = "test-switch";
  p.gpu.sm_count = 132;
  p.gpu.peak_tflops["bf16"] = 1000;
  p.fabric.topology = "nvswitch";
  p.fabric.num_gpus = gpus;
  p.fabric.links["nvlink"] = LinkClass{"nvlink", gbps, 0};
  expand_topology(p.fabric);
  p.comm.bandwidth_efficiency = 1.0;
  p.comm.channels = 16;
  p.comm.nvls_channels = 16;
  p.comm.nvlink_sharp = true;
  return p;
}

// `nodes` nodes of `per_node` GPUs joined by a 50 GB/s network (one NIC per GPU).
HardwareProfile multi_node_profile(int nodes, int per_node) {
  HardwareProfile p = switch_profile(nodes * per_node);
  p.fabric.topology = "multi_node";
  p.fabric.gpus_per_node = per_node;
  p.fabric.links["network"] = LinkClass{"network", 50, 0};
  p.fabric.nodes.clear();
  p.fabric.edges.clear();
  expand_topology(p.fabric);
  return p;
}

// t = latency + S / bandwidth, to the picosecond (the model rounds the same way; one ps of slack for
// the order of the floating-point products).
Ps closed_form(double latency_us, double algbw_gbps, Bytes s) { return ps_from_us(latency_us) + transfer_ps(s, algbw_gbps); }

CollectivePlan forced(const HardwareProfile& hw, CollectivePrimitive p, Bytes s, int n, A a, P proto,
                      const std::string& link = "nvlink") {
  return plan_collective(hw, p, s, n, link, CollectiveOverrides{a, proto});
}

constexpr Bytes kGiB = Bytes{1} << 30;

}  // namespace

TEST_CASE("NCCL's closed forms per algorithm and protocol: all-reduce on one NVSwitch node", "[collective][nccl]") {
  const HardwareProfile hw = switch_profile(8);
  const int n = 8;
  // 1 GiB: log2(S/64) = 24, past NCCL's tree correction table.
  const Bytes s = kGiB;
  const double ring = 8.0 / 14.0;  // nRanks / nsteps, 2(n-1) steps
  struct Case {
    A a;
    P p;
    double latency_us;
    double algbw_gbps;
  };
  // NCCL tuning.cc with its Hopper defaults: latency = base + steps x NVLink step latency; bandwidth
  // = the graph's 500 GB/s refined per protocol, then x nRanks/nsteps (ring, NVLS) or x 1/2 (tree).
  const Case cases[] = {
      {A::Ring, P::LL, 6.6 + 14 * 0.6, std::min(141.0, 500 * 0.5) * ring},
      {A::Ring, P::LL128, 14.0 + 14 * 1.9, std::min(500 * 0.92, 16 * 36.7) * ring},
      {A::Ring, P::Simple, 8.4 + 14 * 3.4, 500 * ring},
      {A::Tree, P::LL, 6.8 + 2 * 7 * 0.6, std::min(500 * 0.92 / 3.8, 141.0) * 0.5},
      {A::Tree, P::LL128, 14.0 + 2 * 7 * 1.25, std::min(500 * 0.92 * 7.0 / 9.0, 16 * 36.7) * 0.5},
      {A::Tree, P::Simple, 8.4 + 2 * 7 * 4.0, 500 * 0.92 * 0.5},
      // NVLS: 16 channels of 500/16 GB/s, x 0.85 x 15/16, x 2 (all-reduce pipelines its halves), no
      // faster than (n+1)/n x S through a 500 GB/s port allows (binds here: 455 > 444 GB/s).
      {A::NVLS, P::Simple, 25.0, std::min(500 * 0.85 * 15.0 / 16.0 * 2 * ring, 500 * 8.0 / 9.0)},
  };
  for (const Case& c : cases) {
    INFO(nccl_algorithm_name(c.a) << "/" << nccl_protocol_name(c.p));
    const CollectivePlan plan = forced(hw, CollectivePrimitive::all_reduce, s, n, c.a, c.p);
    CHECK(plan.algorithm == c.a);
    CHECK(plan.protocol == c.p);
    CHECK_FALSE(plan.from_curve);
    CHECK(std::llabs(plan.time_ps - closed_form(c.latency_us, c.algbw_gbps, s)) <= 1);
    CHECK(plan.latency_ps == ps_from_us(c.latency_us));
    CHECK(plan.algbw_gbps == Approx(c.algbw_gbps).epsilon(1e-9));
  }
  // NCCL's tree correction: 64 KiB is log2(S/64) = 10, where LL runs at 0.6 of its model bandwidth.
  const Bytes mid = 64 << 10;
  const CollectivePlan tree = forced(hw, CollectivePrimitive::all_reduce, mid, n, A::Tree, P::LL);
  CHECK(std::llabs(tree.time_ps - closed_form(6.8 + 2 * 7 * 0.6, 500 * 0.92 / 3.8 * 0.5 * 0.6, mid)) <= 1);
}

TEST_CASE("NCCL's closed forms: reduce-scatter, all-gather, broadcast, all-to-all", "[collective][nccl]") {
  const HardwareProfile hw = switch_profile(8);
  const int n = 8;
  const Bytes s = kGiB;
  // Ring: n-1 steps, bandwidth x n/(n-1).
  CHECK(std::llabs(forced(hw, CollectivePrimitive::reduce_scatter, s, n, A::Ring, P::Simple).time_ps -
                   closed_form(8.4 + 7 * 3.4, 500 * 8.0 / 7, s)) <= 1);
  CHECK(std::llabs(forced(hw, CollectivePrimitive::all_gather, s, n, A::Ring, P::LL).time_ps -
                   closed_form(6.6 + 7 * 0.6, 141.0 * 8.0 / 7, s)) <= 1);
  // NVLS all-gather / reduce-scatter: (ppn-1)/ppn instead of x2, and NCCL leaves the bandwidth as is.
  CHECK(std::llabs(forced(hw, CollectivePrimitive::all_gather, s, n, A::NVLS, P::Simple).time_ps -
                   closed_form(25.0, 500 * 0.85 * 15.0 / 16.0 * 7.0 / 8.0, s)) <= 1);
  // Broadcast: a pipelined ring, one step of latency, bandwidth x n/n.
  CHECK(std::llabs(forced(hw, CollectivePrimitive::broadcast, s, n, A::Ring, P::Simple).time_ps -
                   closed_form(8.4 + 3.4, 500, s)) <= 1);
  // All-to-all: send/recv, the ring's constants over n-1 rounds, each port carrying (n-1)/n of S.
  const CollectivePlan a2a = plan_collective(hw, CollectivePrimitive::all_to_all, s, n, "nvlink");
  CHECK(a2a.algorithm == A::SendRecv);
  CHECK(a2a.protocol == P::Simple);  // 128 MiB per peer is far past the LL threshold
  CHECK(std::llabs(a2a.time_ps - closed_form(8.4 + 7 * 3.4, 500 * 8.0 / 7, s)) <= 1);
  const CollectivePlan small = plan_collective(hw, CollectivePrimitive::all_to_all, 8 * 1024, n, "nvlink");
  CHECK(small.protocol == P::LL);
  CHECK(std::llabs(small.time_ps - closed_form(6.6 + 7 * 0.6, 141.0 * 8 / 7, 8 * 1024)) <= 1);
}

TEST_CASE("all-to-all across nodes: the NIC carries only the blocks for other nodes, NVLink the rest at once",
          "[collective][nccl]") {
  // Two nodes of 8 (16 ranks), one 50 GB/s NIC per GPU, 500 GB/s NVLink, efficiency 1. Each rank sends
  // S/16 to each of its 15 peers: 8 blocks (S/2) through its NIC, 7 (7S/16) over NVLink, at once.
  HardwareProfile hw = multi_node_profile(2, 8);
  const Bytes s = kGiB;
  const CollectivePlan nic_bound = plan_collective(hw, CollectivePrimitive::all_to_all, s, 16, "network");
  CHECK(nic_bound.algorithm == A::SendRecv);
  CHECK(std::llabs(nic_bound.time_ps - nic_bound.latency_ps - transfer_ps(s / 2, 50)) <= 1);
  // A network faster than NVLink: the 7 blocks on NVLink set the time.
  hw.fabric.links["network"].bandwidth_gbps = 5000;
  const CollectivePlan nvlink_bound = plan_collective(hw, CollectivePrimitive::all_to_all, s, 16, "network");
  CHECK(std::llabs(nvlink_bound.time_ps - nvlink_bound.latency_ps - transfer_ps(s * 7 / 16, 500)) <= 1);
  // The steps run it as one step of every block, its NIC bytes moving at the NIC's rate.
  const CollectiveSchedule steps = collective_steps(multi_node_profile(2, 8), nic_bound, s, 16, "network");
  CHECK(steps.ranks_per_node == 8);
  CHECK(steps.ranks[0][0].sends.size() == 15);
  CHECK(steps.port_bytes(0, 0) == s / 2);
  CHECK(steps.bandwidth_gbps == Approx(50).epsilon(1e-9));
}

TEST_CASE("NCCL's choice: the minimum predicted time, NCCL's order on ties", "[collective][nccl]") {
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware");
  for (auto prim : {CollectivePrimitive::all_reduce, CollectivePrimitive::reduce_scatter, CollectivePrimitive::all_gather}) {
    for (Bytes s = 8; s <= 8 * kGiB; s *= 4) {
      INFO(collective_primitive_name(prim) << " S=" << s);
      const CollectivePlan plan = plan_collective(hw, prim, s, 8, "nvlink");
      Ps best = std::numeric_limits<Ps>::max();
      for (const CollectiveCandidate& c : collective_candidates(hw, prim, s, 8, "nvlink"))
        if (c.enabled_by_default) best = std::min(best, c.time_ps);
      CHECK(plan.time_ps == best);
    }
  }
  // On 8xH100: LL for small all-reduces (6.6 + 14 x 0.6 = 15 us beats the tree's 15.2), NVLS for large.
  const CollectivePlan tiny = plan_collective(hw, CollectivePrimitive::all_reduce, 8, 8, "nvlink");
  CHECK(tiny.algorithm == A::Ring);
  CHECK(tiny.protocol == P::LL);
  CHECK(std::llabs(tiny.time_ps - closed_form(15.0, 141.0 * 8 / 14, 8)) <= 1);
  const CollectivePlan big = plan_collective(hw, CollectivePrimitive::all_reduce, kGiB, 8, "nvlink");
  CHECK(big.algorithm == A::NVLS);
  // An 8 KiB all-reduce is far under the Simple ring's 8.4 + 14 x 3.4 = 56 us: the choice weighs
  // the low-latency protocols too.
  CHECK(us_from_ps(plan_collective(hw, CollectivePrimitive::all_reduce, 8 << 10, 8, "nvlink").time_ps) < 16.0);
}

TEST_CASE("NCCL_ALGO / NCCL_PROTO-like overrides", "[collective][nccl]") {
  HardwareProfile hw = switch_profile(8);
  const Bytes s = kGiB;
  // Per call beats the profile beats auto.
  hw.comm.algorithm = A::Ring;
  CHECK(plan_collective(hw, CollectivePrimitive::all_reduce, s, 8, "nvlink").algorithm == A::Ring);
  CHECK(plan_collective(hw, CollectivePrimitive::all_reduce, s, 8, "nvlink", CollectiveOverrides{A::Tree, {}}).algorithm ==
        A::Tree);
  hw.comm.protocol = P::LL128;
  const CollectivePlan rl = plan_collective(hw, CollectivePrimitive::all_reduce, s, 8, "nvlink");
  CHECK(rl.algorithm == A::Ring);
  CHECK(rl.protocol == P::LL128);
  // A forced choice NCCL cannot run is an input error naming the key.
  hw.comm.algorithm = A::NVLS;
  hw.comm.protocol = P::LL;
  CHECK_THROWS_AS(plan_collective(hw, CollectivePrimitive::all_reduce, s, 8, "nvlink"), InputError);
  hw.comm.protocol.reset();
  CHECK_THROWS_WITH(plan_collective(hw, CollectivePrimitive::broadcast, s, 8, "nvlink"), Catch::Contains("comm.algorithm"));
  hw.comm.nvlink_sharp = false;
  CHECK_THROWS_WITH(plan_collective(hw, CollectivePrimitive::all_reduce, s, 8, "nvlink"), Catch::Contains("NVLink SHARP"));
  hw.comm.algorithm = A::PAT;
  CHECK_THROWS_AS(plan_collective(hw, CollectivePrimitive::all_reduce, s, 8, "nvlink"), InputError);
  // PAT: all-gather / reduce-scatter with one GPU per node only.
  CHECK_THROWS_WITH(plan_collective(hw, CollectivePrimitive::all_gather, s, 8, "nvlink"), Catch::Contains("one GPU per node"));
  const HardwareProfile one_per_node = multi_node_profile(8, 1);
  CHECK(plan_collective(one_per_node, CollectivePrimitive::all_gather, s, 8, "network", CollectiveOverrides{A::PAT, {}})
            .algorithm == A::PAT);
  // all-to-all ignores the profile's NCCL_ALGO (send/recv), but a per-call non-SendRecv is an error.
  hw.comm.algorithm = A::Ring;
  CHECK(plan_collective(hw, CollectivePrimitive::all_to_all, s, 8, "nvlink").algorithm == A::SendRecv);
  CHECK_THROWS_AS(plan_collective(hw, CollectivePrimitive::all_to_all, s, 8, "nvlink", CollectiveOverrides{A::Ring, {}}),
                  InputError);
}

TEST_CASE("LL128 runs over PCIe only when forced, NVLS only with NVLink SHARP", "[collective][nccl]") {
  const std::string dir = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";
  const HardwareProfile pcie = load_profile("rtx4090-4x-pcie", dir);
  for (Bytes s = 8; s <= kGiB; s *= 8) {
    const CollectivePlan plan = plan_collective(pcie, CollectivePrimitive::all_reduce, s, 2, "pcie");
    CHECK(plan.protocol != P::LL128);
  }
  CHECK(plan_collective(pcie, CollectivePrimitive::all_reduce, kGiB, 2, "pcie", CollectiveOverrides{{}, P::LL128}).protocol ==
        P::LL128);
  const HardwareProfile a800 = load_profile("a800-8x-nvlink", dir);
  for (Bytes s = 8; s <= 8 * kGiB; s *= 8)
    CHECK(plan_collective(a800, CollectivePrimitive::all_reduce, s, 8, "nvlink").algorithm != A::NVLS);
}

TEST_CASE("channels follow the size: fewer CTAs (SMs) for small messages", "[collective][nccl]") {
  const HardwareProfile hw = switch_profile(8);
  const NcclCommunicator comm = nccl_communicator(hw, 8, "nvlink");
  // Ring Simple: a channel per 512 threads x 64 bytes = 32 KiB (NCCL's thread threshold).
  CHECK(nccl_channels(hw, comm, A::Ring, P::Simple, 8) == 1);
  CHECK(nccl_channels(hw, comm, A::Ring, P::Simple, 3 * 32768) == 3);
  CHECK(nccl_channels(hw, comm, A::Ring, P::Simple, 3 * 32768 - 1) == 2);
  CHECK(nccl_channels(hw, comm, A::Ring, P::Simple, kGiB) == 16);
  // Ring LL: 8 bytes x nRanks per thread -> 512 x 64 = 32 KiB as well; LL128: 640 x 8 = 5 KiB.
  CHECK(nccl_channels(hw, comm, A::Ring, P::LL, 5 * 32768) == 5);
  CHECK(nccl_channels(hw, comm, A::Ring, P::LL128, 4 * 5120) == 4);
  // NVLS always takes its channels.
  CHECK(nccl_channels(hw, comm, A::NVLS, P::Simple, 8) == 16);
  int prev = 0;
  for (Bytes s = 8; s <= kGiB; s *= 2) {
    const CollectivePlan plan = plan_collective(hw, CollectivePrimitive::reduce_scatter, s, 8, "nvlink");
    CHECK(plan.channels >= 1);
    CHECK(plan.channels <= hw.comm.channels);
    CHECK(plan.channels >= prev);  // the ring is chosen throughout; its channels only grow
    prev = plan.channels;
  }
  CHECK(prev == 16);
}

TEST_CASE("steps take the plan's time on an idle fabric, for every algorithm and protocol", "[collective][steps]") {
  const HardwareProfile single = switch_profile(8);
  const HardwareProfile nodes4x2 = multi_node_profile(4, 2);
  const HardwareProfile nodes8x1 = multi_node_profile(8, 1);
  struct Where {
    const HardwareProfile* hw;
    int n;
    std::string link;
  };
  const Where wheres[] = {{&single, 8, "nvlink"}, {&single, 5, "nvlink"}, {&single, 2, "nvlink"},
                          {&nodes4x2, 8, "network"}, {&nodes8x1, 8, "network"}};
  int checked = 0;
  for (const Where& w : wheres) {
    for (auto prim : {CollectivePrimitive::all_reduce, CollectivePrimitive::reduce_scatter, CollectivePrimitive::all_gather,
                      CollectivePrimitive::all_to_all, CollectivePrimitive::broadcast, CollectivePrimitive::reduce}) {
      for (Bytes s : {Bytes{1000}, Bytes{12'345'679}, Bytes{3} << 28}) {
        for (const CollectiveCandidate& c : collective_candidates(*w.hw, prim, s, w.n, w.link)) {
          if (c.algorithm == A::NVLSTree || c.algorithm == A::CollnetDirect || c.algorithm == A::CollnetChain) continue;
          INFO(w.hw->name << " n=" << w.n << " " << collective_primitive_name(prim) << " S=" << s << " "
                          << nccl_algorithm_name(c.algorithm) << "/" << nccl_protocol_name(c.protocol));
          const CollectivePlan plan = forced(*w.hw, prim, s, w.n, c.algorithm, c.protocol, w.link);
          const CollectiveSchedule steps = collective_steps(*w.hw, plan, s, w.n, w.link);
          CHECK(steps.algorithm == plan.algorithm);
          CHECK(std::llabs(steps.idle_time_ps() - plan.time_ps) <= static_cast<Ps>(steps.num_steps()));
          // The steps never ask more of a port than its line rate (up to the uneven chunks' rounding:
          // the largest of n unequal chunks is one byte over S/n).
          CHECK(steps.bandwidth_gbps <= collective_port_gbps(*w.hw, w.link, w.n) * (1 + 1e-6));
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 100);
}

TEST_CASE("NVLS: every rank's traffic through its NVSwitch link", "[collective][steps]") {
  const HardwareProfile hw = switch_profile(8);
  const int n = 8;
  const Bytes s = 8 * 1'000'003;  // chunks of unequal size
  const CollectiveSchedule ar =
      collective_steps(hw, forced(hw, CollectivePrimitive::all_reduce, s, n, A::NVLS, P::Simple), s, n, "nvlink");
  CHECK(ar.uses_switch());
  for (int r = 0; r < n; ++r) {
    // The switch reads every chunk of the rank's buffer and gets its reduced chunk to multicast: S +
    // S/n up; it returns the reduced chunk and multicasts every other: S/n + S down. (n+1)/n x S each
    // way, as NCCL's maintainers put it (facts.md).
    CHECK(ar.bytes_to_switch(r) == s + chunk_bytes(s, n, r));
    CHECK(ar.bytes_from_switch(r) == s + chunk_bytes(s, n, r));
    CHECK(ar.bytes_sent(r) == ar.bytes_to_switch(r));  // no rank-to-rank traffic
  }
  const CollectiveSchedule rs =
      collective_steps(hw, forced(hw, CollectivePrimitive::reduce_scatter, s, n, A::NVLS, P::Simple), s, n, "nvlink");
  const CollectiveSchedule ag =
      collective_steps(hw, forced(hw, CollectivePrimitive::all_gather, s, n, A::NVLS, P::Simple), s, n, "nvlink");
  for (int r = 0; r < n; ++r) {
    CHECK(rs.bytes_to_switch(r) == s);
    CHECK(rs.bytes_from_switch(r) == chunk_bytes(s, n, r));
    CHECK(ag.bytes_to_switch(r) == chunk_bytes(s, n, r));
    CHECK(ag.bytes_from_switch(r) == s);
  }
  // One step of NVLS's 25 us, no base.
  CHECK(ar.num_steps() == 1);
  CHECK(ar.base_latency_ps == 0);
  CHECK(ar.ranks[0][0].latency_ps == ps_from_us(25));
}

TEST_CASE("byte accounting: each rank sends and receives what the collective requires", "[collective][steps]") {
  const HardwareProfile hw = switch_profile(8);
  const int n = 8;
  const Bytes s = 64 << 20;
  auto steps = [&](CollectivePrimitive p, A a, P proto) {
    return collective_steps(hw, forced(hw, p, s, n, a, proto), s, n, "nvlink");
  };
  for (P proto : {P::LL, P::LL128, P::Simple}) {
    INFO(nccl_protocol_name(proto));
    const auto rs = steps(CollectivePrimitive::reduce_scatter, A::Ring, proto);
    const auto ag = steps(CollectivePrimitive::all_gather, A::Ring, proto);
    const auto ar = steps(CollectivePrimitive::all_reduce, A::Ring, proto);
    for (int r = 0; r < n; ++r) {
      CHECK(rs.bytes_sent(r) == s * (n - 1) / n);
      CHECK(rs.bytes_received(r) == s * (n - 1) / n);
      CHECK(ag.bytes_sent(r) == s * (n - 1) / n);
      CHECK(ar.bytes_sent(r) == 2 * s * (n - 1) / n);
      CHECK(ar.bytes_received(r) == 2 * s * (n - 1) / n);
    }
    Bytes reduced = 0;
    for (const auto& st : rs.ranks[0]) reduced += st.reduce_bytes;
    CHECK(reduced == s * (n - 1) / n);
    for (const auto& st : ag.ranks[0]) CHECK(st.reduce_bytes == 0);
  }
  const auto a2a = steps(CollectivePrimitive::all_to_all, A::SendRecv, P::Simple);
  const auto pat_free = steps(CollectivePrimitive::all_reduce, A::Tree, P::Simple);
  for (int r = 0; r < n; ++r) {
    CHECK(a2a.bytes_sent(r) == s * (n - 1) / n);
    // The tree's intra-node chain: the ends send S once, the middle ranks S up and S down.
    CHECK(pat_free.bytes_sent(r) == (r == 0 || r == n - 1 ? s : 2 * s));
  }
  // PAT's Bruck exchanges move (n-1)/n of S per rank, also for n not a power of two.
  const HardwareProfile one_per_node = multi_node_profile(6, 1);
  for (auto prim : {CollectivePrimitive::all_gather, CollectivePrimitive::reduce_scatter}) {
    const Bytes s6 = 6 * 1000;
    const CollectiveSchedule pat = collective_steps(
        one_per_node, plan_collective(one_per_node, prim, s6, 6, "network", CollectiveOverrides{A::PAT, {}}), s6, 6, "network");
    CHECK(pat.num_steps() == 3);
    for (int r = 0; r < 6; ++r) {
      CHECK(pat.bytes_sent(r) == 5000);
      CHECK(pat.bytes_received(r) == 5000);
    }
  }
}

TEST_CASE("a full mesh runs the ring's bytes over every link at once", "[collective][steps]") {
  HardwareProfile hw = switch_profile(8, 700);
  hw.fabric.topology = "full_mesh";
  hw.fabric.nodes.clear();
  hw.fabric.edges.clear();
  expand_topology(hw.fabric);
  const Bytes s = 8 << 20;
  const CollectiveSchedule ar =
      collective_steps(hw, forced(hw, CollectivePrimitive::all_reduce, s, 8, A::Ring, P::Simple, "nvlink"), s, 8, "nvlink");
  CHECK(ar.num_steps() == 14);  // the ring's 2(n-1) latency steps
  CHECK(ar.ranks[0][0].sends.size() == 7);  // step 0: to every peer
  CHECK(ar.ranks[0][7].sends.size() == 7);  // step n-1: the all-gather half
  CHECK(ar.ranks[0][1].sends.empty());
  CHECK(ar.bytes_sent(0) == 2 * s * 7 / 8);
}

TEST_CASE("calibrated curves take precedence", "[collective][curves]") {
  HardwareProfile hw = switch_profile(8);
  const Bytes s = 1'000'000;
  // A primitive's curve replaces the model's time; the model still says what NCCL runs.
  const CollectivePlan model = plan_collective(hw, CollectivePrimitive::all_reduce, s, 8, "nvlink");
  hw.curves["all_reduce"] = BandwidthCurve::from_alpha_beta(1.0, 500);
  const CollectivePlan curve = plan_collective(hw, CollectivePrimitive::all_reduce, s, 8, "nvlink");
  CHECK(curve.from_curve);
  CHECK(curve.time_ps == ps_from_us(1.0) + 2'000'000);
  CHECK(curve.algorithm == model.algorithm);
  CHECK(curve.protocol == model.protocol);
  CHECK(curve.channels == model.channels);
  hw.curves["all_reduce.n4"] = BandwidthCurve::from_alpha_beta(2.0, 500);
  CHECK(collective_time_ps(hw, CollectivePrimitive::all_reduce, s, 4, "nvlink") == ps_from_us(2.0) + 2'000'000);
  CHECK(collective_model_time_ps(hw, CollectivePrimitive::all_reduce, s, 4, "nvlink") ==
        collective_time_ps(switch_profile(8), CollectivePrimitive::all_reduce, s, 4, "nvlink"));
  // A protocol's curve replaces that protocol's model: a fast measured LL128 wins the choice...
  HardwareProfile proto = switch_profile(8);
  proto.curves["all_reduce.LL128"] = BandwidthCurve::from_alpha_beta(0.5, 5000);
  const CollectivePlan fast = plan_collective(proto, CollectivePrimitive::all_reduce, s, 8, "nvlink");
  CHECK(fast.protocol == P::LL128);
  CHECK(fast.from_curve);
  CHECK(fast.time_ps == ps_from_us(0.5) + 200'000);
  // ... a slow one loses it and the model's choice stands.
  proto.curves["all_reduce.LL128"] = BandwidthCurve::from_alpha_beta(500, 1);
  const CollectivePlan slow = plan_collective(proto, CollectivePrimitive::all_reduce, s, 8, "nvlink");
  CHECK(slow.protocol != P::LL128);
  CHECK_FALSE(slow.from_curve);
  CHECK(slow.time_ps == model.time_ps);
  // Steps of a curve plan take the curve's time.
  const CollectiveSchedule st = collective_steps(hw, curve, s, 8, "nvlink");
  CHECK(std::llabs(st.idle_time_ps() - curve.time_ps) <= static_cast<Ps>(st.num_steps()));
}

TEST_CASE("shorthands and edge cases", "[collective]") {
  const HardwareProfile hw = switch_profile(8);
  CHECK(collective_time_ps(hw, CollectivePrimitive::all_reduce, 1 << 20, 1, "nvlink") == 0);
  CHECK(collective_time_ps(hw, CollectivePrimitive::all_reduce, 0, 8, "nvlink") == 0);
  CHECK(plan_collective(hw, CollectivePrimitive::all_reduce, 0, 8, "nvlink").channels == 0);
  CHECK_THROWS_AS(collective_time_ps(hw, CollectivePrimitive::all_reduce, 1 << 20, 8, "pcie"), std::invalid_argument);
  CHECK(collective_time_ps(hw, CollectivePrimitive::all_gather, 1 << 20, 8, "nvlink", A::Ring) ==
        plan_collective(hw, CollectivePrimitive::all_gather, 1 << 20, 8, "nvlink", CollectiveOverrides{A::Ring, {}}).time_ps);
  CHECK(collective_steps(hw, CollectivePrimitive::all_reduce, 1 << 20, 1, "nvlink").num_steps() == 0);
  CHECK(collective_bandwidth_gbps(hw, "nvlink") == 500);
  CHECK(nccl_log2i(1) == 0);
  CHECK(nccl_log2i(1023) == 9);
  CHECK(nccl_log2i(0) == -1);
  // NCCL's names, case-insensitive as NCCL_ALGO / NCCL_PROTO; SendRecv is not an NCCL_ALGO value.
  CHECK(parse_nccl_algorithm("nvlstree") == A::NVLSTree);
  CHECK(parse_nccl_algorithm("CollnetDirect") == A::CollnetDirect);
  CHECK_FALSE(parse_nccl_algorithm("SendRecv"));
  CHECK(parse_nccl_protocol("ll128") == P::LL128);
  CHECK_FALSE(parse_nccl_protocol("LL64"));
}
