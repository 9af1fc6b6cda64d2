// Transports costed once: whichever scheme sends bytes over a path by a given
// mechanism, the engine takes what GraphBuilder::transfer_ps (the fabric's one answer) says, and the
// reason strings quote that same figure.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "cost_model/profile_loader.hpp"
#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "sim/node_builder.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/workload_shapes.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

const std::string kHardwareDir = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";

Workload mlp(int tp) {
  Workload w;
  w.kind = WorkloadKind::mlp_tpsp;
  w.tp = tp;
  w.shape = MlpTpSp{4096, 4096, 14336, true, DType::bf16};
  return w;
}

}  // namespace

TEST_CASE("the same bytes on the same path cost what transfer_ps says, for every transport", "[transports]") {
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", kHardwareDir);
  const Workload w = mlp(8);
  const nlohmann::json none = nlohmann::json::object();
  const BuildContext ctx{w, hw, none, Fidelity::curve};
  for (const Bytes bytes : {Bytes{4096}, Bytes{1} << 20, Bytes{64} << 20}) {
    for (Transport t : kAllTransports) {
      INFO(transport_name(t) << " " << bytes << " bytes");
      GraphBuilder b(ctx);
      const StreamId s0 = b.add_stream(0, "x"), s1 = b.add_stream(1, "x");
      OpId id;
      const int ctas = 16;
      if (t == Transport::copy_engine) {
        id = b.add_copy(1, s1, 0, 1, bytes, "pull", {}, false);
      } else {
        P2pSpec x;
        x.transport = t;
        x.channels = ctas;
        x.collective = b.new_collective_id();
        x.sends.push_back({1, bytes});
        id = b.add_p2p(0, s0, x);
        P2pSpec y = x;
        y.sends.clear();
        y.recvs.push_back({0, bytes});
        b.add_p2p(1, s1, y);
      }
      const Ps expected = b.transfer_ps(0, 1, bytes, t, t == Transport::sm_copy ? ctas : 0);
      const BuiltScheme built = b.finish("");
      const Timeline tl = run(built.graph, make_node(hw, 8));
      const OpRecord& r = tl.ops[static_cast<std::size_t>(id)];
      CHECK(r.end_ps - r.start_ps == expected);
    }
  }
}

TEST_CASE("an SM copy kernel with few CTAs is held to their bandwidth", "[transports]") {
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", kHardwareDir);
  const Workload w = mlp(8);
  const nlohmann::json none = nlohmann::json::object();
  const BuildContext ctx{w, hw, none, Fidelity::curve};  // GraphBuilder keeps a reference to it
  GraphBuilder b(ctx);
  const Bytes s = Bytes{256} << 20;
  // 2 CTAs at cta_gbps each move far less than the NVLink port; 32 CTAs are limited by the link.
  const Ps two = b.transfer_ps(0, 1, s, Transport::sm_copy, 2);
  const Ps many = b.transfer_ps(0, 1, s, Transport::sm_copy, 32);
  const double cta = hw.transports.sm_copy.cta_gbps;
  CHECK(two > many);
  CHECK(std::llabs(two - (ps_from_us(hw.transports.sm_copy.latency_us + hw.fabric.links.at("nvlink").latency_us) +
                          transfer_ps(s, 2 * cta))) <= 2);
}

TEST_CASE("CommFuse's reason quotes the per-step transfer time the engine simulates", "[transports][commfuse]") {
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", kHardwareDir);
  const Workload w = mlp(8);
  const nlohmann::json none = nlohmann::json::object();
  const BuildContext ctx{w, hw, none, Fidelity::curve};
  const BuiltScheme built = find_scheme("commfuse")->build(ctx);
  // One FuseRS step moves one slice of the row-parallel output (tokens / T rows of d_model).
  const MlpShapes s = mlp_shapes(std::get<MlpTpSp>(w.shape), 8);
  const Bytes unit = s.row.m / 8 * s.row.n * dtype_bytes(s.row.dtype);
  GraphBuilder b(ctx);
  const Ps p = b.transfer_ps(0, 1, unit, Transport::nccl_p2p);
  INFO(built.reason << " / p = " << us_from_ps(p));
  CHECK(built.reason.find(fmt::format("({:.1f} ", us_from_ps(p))) != std::string::npos);
  // The simulated exchanges of the row-parallel FuseRS take at least that long each (they share the
  // ports with the all-gather's; on an idle link exactly that).
  const Timeline tl = run(built.graph, make_node(hw, 8));
  Ps shortest = -1;
  for (OpId id = 0; id < static_cast<OpId>(built.graph.ops().size()); ++id) {
    const Op& op = built.graph.op(id);
    if (op.name.rfind("fc2.rs.", 0) != 0 || op.phases.empty() || op.phases[0].sends.empty()) continue;
    const OpRecord& r = tl.ops[static_cast<std::size_t>(id)];
    if (op.phases[0].sends[0].bytes != unit) continue;
    shortest = shortest < 0 ? r.end_ps - r.start_ps : std::min(shortest, r.end_ps - r.start_ps);
  }
  REQUIRE(shortest > 0);
  CHECK(shortest >= p);
}

TEST_CASE("the async-TP barrier inside one node pays NVLink's latency, not the network's", "[transports][async_tp]") {
  const HardwareProfile hw = load_profile("h100-2node-ib400", kHardwareDir);
  const nlohmann::json none = nlohmann::json::object();
  for (int tp : {8, 16}) {
    const Workload w = mlp(tp);
    const BuiltScheme built = find_scheme("async_tp")->build(BuildContext{w, hw, none, Fidelity::curve});
    const std::string cls = tp <= 8 ? "nvlink" : "network";
    const Ps expected = ps_from_us(hw.transports.one_sided.latency_us + hw.fabric.links.at(cls).latency_us);
    int barriers = 0;
    for (const Op& op : built.graph.ops())
      if (op.name.find("barrier") != std::string::npos) {
        CHECK(op.duration_ps == expected);
        ++barriers;
      }
    CHECK(barriers > 0);
  }
}

TEST_CASE("async TP's matmul-reduce-scatter passes accumulators around the ring", "[async_tp]") {
  // async-tp-illustrated, "Decomposing matmul reduce-scatters": T-1 transfers per rank, each from the
  // previous rank, no barrier, and the partial of shard d = r-1-s computed at step s.
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", kHardwareDir);
  const nlohmann::json none = nlohmann::json::object();
  Workload w;
  w.kind = WorkloadKind::gemm_collective;
  w.tp = 4;
  w.shape = GemmCollective{4096, 4096, 4096, DType::bf16, Primitive::reduce_scatter, false};
  const BuiltScheme built = find_scheme("async_tp")->build(BuildContext{w, hw, none, Fidelity::curve});
  std::vector<int> transfers(4, 0);
  for (OpId id = 0; id < static_cast<OpId>(built.graph.ops().size()); ++id) {
    const Op& op = built.graph.op(id);
    CHECK(op.name.find("barrier") == std::string::npos);
    if (op.kind != OpKind::copy) continue;
    const int r = built.graph.rank_of(id);
    CHECK(op.dst_gpu == r);
    CHECK(op.src_gpu == (r + 3) % 4);
    ++transfers[static_cast<std::size_t>(r)];
  }
  CHECK(transfers == std::vector<int>{3, 3, 3, 3});
  // Rank r receives every shard but the one rank r-1 computed first... i.e. all but shard r-2's
  // first partial: T-1 chunks of M/T rows.
  const Bytes chunk = 4096 / 4 * 4096 * 2;
  for (int r = 0; r < 4; ++r) CHECK(built.required_bytes[static_cast<std::size_t>((r + 3) % 4)][static_cast<std::size_t>(r)] == 3 * chunk);
}
