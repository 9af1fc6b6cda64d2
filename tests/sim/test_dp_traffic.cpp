// The data-parallel traffic of a training step on the links and HBM (docs/guide/training.md "Data
// parallelism and FSDP"): only one TP group is simulated, so a DP collective is one op per rank whose
// fellow members are GPUs outside the graph. Its sends to them and its (mirrored) receives from them
// load the routes between the GPUs and the rank's own HBM, where they meet the TP group's traffic.
// Expected times are hand-computed from port rates; expected bytes from the ring all-reduce's
// 2 (n - 1) / n x S per member (NCCL's ring, as nccl-tests' busbw factor states it).
#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cost_model/profile_loader.hpp"
#include "node_fixtures.hpp"
#include "sim/node_builder.hpp"
#include "sim/schemes/scheme.hpp"

using namespace overlap;
using namespace overlap::sim;
using namespace overlap::sim::test;

namespace {

constexpr Ps kUs = 1'000'000;
constexpr Bytes kMB = 1'000'000;
const std::string kHardwareDir = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";

// A collective of one simulated member on `rank`, 1 MB to and from `peer` (a GPU outside the graph):
// 10 us on 100 GB/s ports.
Op outside_member(StreamId s, std::int64_t id, int peer, bool reduces) {
  Op op = comm_kernel("dp", s, 1, 10 * kUs);
  op.collective = id;
  op.members = 1;
  op.curve_reduces = reduces;
  op.outside_sends.push_back({peer, kMB});
  op.outside_recvs.push_back({peer, kMB});
  return op;
}

int link_named(const NodeConfig& node, const std::string& name) {
  const auto& links = node.fabric.links();
  for (std::size_t l = 0; l < links.size(); ++l)
    if (links[l].name.rfind(name, 0) == 0) return static_cast<int>(l);
  FAIL("no link named " << name);
  return -1;
}

Workload llama70b_step(int tp, int layers, DataParallel dp) {
  Workload w;
  w.kind = WorkloadKind::transformer;
  w.tp = tp;
  w.shape = Transformer{.model = "llama3-70b", .layers = layers, .batch = 1, .seq = 8192, .d_model = 8192,
                        .d_ffn = 28672, .heads = 64, .kv_heads = 8, .dtype = DType::bf16};
  w.training = Training{Pass::step, Recompute::none, dp};
  return w;
}

struct Run {
  BuiltScheme built;
  NodeConfig node;
  Timeline tl;
};

Run run_step(const std::string& scheme, const Workload& w, const HardwareProfile& hw) {
  static const nlohmann::json params = nlohmann::json::object();
  Run r{find_scheme(scheme)->build(BuildContext{w, hw, params, Fidelity::curve}), make_node(hw, w.tp), {}};
  r.tl = run(r.built.graph, r.node);
  return r;
}

}  // namespace

TEST_CASE("a collective member with its fellows outside the graph: curve time alone, its own HBM loaded",
          "[engine][collective][dp]") {
  for (const bool reduces : {false, true}) {
    INFO("reduces " << reduces);
    TaskGraph g(1);  // GPU 1 exists in the node but not in the graph
    const OpId dp = g.add(outside_member(g.add_stream(0, "dp"), 0, 1, reduces));
    const NodeConfig node = switch_node(2, 8, 1);
    const Timeline tl = run(g, node);
    CHECK(tl.ops[dp].end_ps == 10 * kUs);
    // Its HBM: the sent bytes read, the received bytes written, and reduced (two more reads) when
    // the collective reduces. The outside GPU's HBM is its own members' business: untouched.
    const double hbm0 = tl.link_bytes[static_cast<std::size_t>(node.fabric.hbm_link(0))];
    CHECK(hbm0 == Approx(static_cast<double>(kMB + (reduces ? 3 : 1) * kMB)));
    CHECK(tl.link_bytes[static_cast<std::size_t>(node.fabric.hbm_link(1))] == 0);
    // Both directions of the port to the switch carry 1 MB.
    CHECK(tl.link_bytes[static_cast<std::size_t>(link_named(node, "up0"))] == Approx(1e6));
  }
}

TEST_CASE("a DP member and a TP collective sharing a port each take twice as long", "[engine][collective][dp]") {
  // GPUs 0 and 1 are the simulated TP group; GPU 2 is rank 0's data-parallel peer. The TP collective
  // sends 1 MB 0 -> 1, the DP member 1 MB 0 -> 2 (and back): both cross GPU 0's port to the switch.
  TaskGraph g(2);
  std::vector<OpId> tp;
  for (int r = 0; r < 2; ++r) {
    Op op = comm_kernel("tp", g.add_stream(r, "tp"), 1, 10 * kUs);
    op.collective = 0;
    op.members = 2;
    op.bytes = kMB;
    if (r == 0) op.curve_sends.push_back({1, kMB});
    tp.push_back(g.add(op));
  }
  const OpId dp = g.add(outside_member(g.add_stream(0, "dp"), 1, 2, false));
  const Timeline tl = run(g, switch_node(3, 8, 1));
  CHECK(tl.ops[tp[0]].end_ps == 20 * kUs);
  CHECK(tl.ops[dp].end_ps == 20 * kUs);
  // Two DP members of one rank (an FSDP gather and a gradient reduce-scatter at once) share it too.
  TaskGraph two(1);
  const OpId a = two.add(outside_member(two.add_stream(0, "gather"), 0, 1, false));
  const OpId b = two.add(outside_member(two.add_stream(0, "reduce"), 1, 1, true));
  const Timeline t2 = run(two, switch_node(2, 8, 1));
  CHECK(t2.ops[a].end_ps == 20 * kUs);
  CHECK(t2.ops[b].end_ps == 20 * kUs);
}

TEST_CASE("DDP across two nodes: each rank's gradient all-reduces cross its own NIC with the ring's bytes",
          "[training][dp]") {
  // TP 8 fills node 0; rank r's data-parallel peer is GPU r + 8 on node 1. Ring all-reduce of S over
  // 2 members: each member sends 2 (2 - 1) / 2 x S = S and receives S.
  const HardwareProfile hw = load_profile("h100-2node-ib400", kHardwareDir);
  DataParallel par;
  par.dp = 2;
  par.fsdp = Sharding::none;
  par.bucket_mb = 100;
  const Run r = run_step("no_overlap", llama70b_step(8, 2, par), hw);
  Bytes calls_bytes = 0;
  for (const CollectiveCall& c : r.built.collectives)
    if (c.communicator == Communicator::dp) {
      REQUIRE(c.algorithm == "Ring");
      calls_bytes += c.bytes;
    }
  REQUIRE(calls_bytes > 0);
  for (int rank = 0; rank < 8; ++rank) {
    INFO("rank " << rank);
    const int up = link_named(r.node, "gpu" + std::to_string(rank) + "->nic" + std::to_string(rank) + " ");
    const int down = link_named(r.node, "nic" + std::to_string(rank) + "->gpu" + std::to_string(rank) + " ");
    Bytes sent = 0, received = 0;
    for (const TransferRecord& t : r.tl.transfers) {
      if (t.op == kNoOp || r.built.graph.op(t.op).communicator != Communicator::dp) continue;
      if (r.built.graph.rank_of(t.op) != rank) continue;
      const bool out = t.src_gpu == rank;
      CHECK((out ? t.dst_gpu : t.src_gpu) == rank + 8);
      CHECK(std::count(t.links.begin(), t.links.end(), out ? up : down) == 1);
      (out ? sent : received) += t.bytes;
    }
    CHECK(sent == calls_bytes);
    CHECK(received == calls_bytes);
    // Nothing else crosses the NIC: TP stays on the NVSwitch.
    CHECK(r.tl.link_bytes[static_cast<std::size_t>(up)] == Approx(static_cast<double>(calls_bytes)));
  }
}

TEST_CASE("TP spanning nodes: DP and TP traffic share the NIC and the DP collectives slow down", "[training][dp]") {
  // TP 16 over two nodes of a rail-optimised cluster (its collectives cross every rank's NIC) with DP 2
  // (rank r's peer GPU r + 16). The ZeRO-3 gathers and reduce-scatters meet the TP collectives on
  // the NIC: some DP collective on rank 0 takes longer than its curve time, while a TP transfer
  // crosses rank 0's NIC at the same time.
  const HardwareProfile hw = load_profile("h100-64node-ib400-rail", kHardwareDir);
  DataParallel par;
  par.dp = 2;
  par.fsdp = Sharding::zero3;
  par.prefetch = 1;
  const Run r = run_step("no_overlap", llama70b_step(16, 2, par), hw);
  // NCCL's ring over two nodes of 8 crosses the network between ranks 7 -> 8 and 15 -> 0: rank 0's
  // TP traffic comes in through its NIC, where its DP receives arrive too.
  const int up = link_named(r.node, "gpu0->nic0 "), down = link_named(r.node, "nic0->gpu0 ");
  auto on_nic = [&](const TransferRecord& t) {
    return std::count(t.links.begin(), t.links.end(), up) + std::count(t.links.begin(), t.links.end(), down) > 0;
  };
  int slowed = 0;
  for (OpId id = 0; id < static_cast<OpId>(r.built.graph.ops().size()); ++id) {
    const Op& op = r.built.graph.op(id);
    if (op.communicator != Communicator::dp || r.built.graph.rank_of(id) != 0) continue;
    const OpRecord& rec = r.tl.ops[static_cast<std::size_t>(id)];
    if (rec.end_ps - rec.start_ps <= op.duration_ps) continue;
    bool shared = false;
    for (const TransferRecord& t : r.tl.transfers)
      if (t.op != kNoOp && r.built.graph.op(t.op).communicator == Communicator::tp && on_nic(t) &&
          t.start_ps < rec.end_ps && t.end_ps > rec.start_ps)
        shared = true;
    if (shared) ++slowed;
  }
  CHECK(slowed > 0);
}
