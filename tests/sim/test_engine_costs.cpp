// Costs the engine applies while work runs: GEMM/communication interference, HBM shared by
// GEMM operand traffic and copies, persistent grids, SM priority with several CTAs per SM, curve
// collectives on links, the host launch queue, virtual ranks. Every expected time is hand-computed.
#include <catch2/catch.hpp>

#include "cost_model/profile_loader.hpp"
#include "node_fixtures.hpp"
#include "sim/node_builder.hpp"
#include "sim/schemes/decode_stack.hpp"
#include "sim/workload_shapes.hpp"

using namespace overlap;
using namespace overlap::sim;
using namespace overlap::sim::test;

namespace {

constexpr Ps kUs = 1'000'000;
constexpr Bytes kMB = 1'000'000;

// A memory-bound kernel of `bytes` (no SMs held).
Op memory_op(StreamId stream, Bytes bytes) {
  Op m;
  m.kind = OpKind::memory;
  m.bytes = bytes;
  m.stream = stream;
  return m;
}

// A comm kernel on a stream of its own, launched before anything else: it takes its SMs at t = 0.
OpId hold_sms(TaskGraph& g, int rank, int sms, Ps duration) {
  return g.add(comm_kernel("nccl", g.add_stream(rank, "comm", 1), sms, duration));
}

}  // namespace

TEST_CASE("interference: a GEMM beside a comm kernel takes (1 + c * comm SMs / SMs) longer", "[engine][interference]") {
  // 100 tiles of 10 us on 132 SMs, 32 of them held by a comm kernel for the whole GEMM: one wave.
  for (double c : {0.0, 0.5, 3.0}) {
    INFO("interference " << c);
    TaskGraph g(1);
    hold_sms(g, 0, 32, 1000 * kUs);
    const OpId gemm = g.add(tiled("gemm", g.add_stream(0, "compute"), 100, 10 * kUs));
    NodeConfig node = switch_node(1, 132, 1);
    node.gpus[0].comm_interference = c;
    const Timeline tl = run(g, node);
    const double expected = 10e6 * (1.0 + c * 32.0 / 132.0);
    CHECK(std::llabs(tl.ops[gemm].end_ps - static_cast<Ps>(std::ceil(expected))) <= 1);
  }
}

TEST_CASE("interference is progress-based: a tile slowed while comm runs speeds up when it ends", "[engine][interference]") {
  // interference 1.0, comm holds 33 of 132 SMs for 5 us: rate 1 / 1.25 = 0.8 -> 4 us of the 10 us
  // tile done by t = 5, the remaining 6 us at full speed: the tile ends at 11 us.
  TaskGraph g(1);
  hold_sms(g, 0, 33, 5 * kUs);
  const OpId gemm = g.add(tiled("gemm", g.add_stream(0, "compute"), 99, 10 * kUs));
  NodeConfig node = switch_node(1, 132, 1);
  node.gpus[0].comm_interference = 1.0;
  const Timeline tl = run(g, node);
  CHECK(tl.ops[gemm].end_ps == 11 * kUs);
}

TEST_CASE("a copy-engine stream slows a memory-bound GEMM sharing its HBM", "[engine][hbm]") {
  // HBM 1000 GB/s = 1 B/ps. 100 CTAs of 1 us each needing 10 kB: the GEMM alone wants exactly all of
  // HBM. A concurrent 1 MB local copy (read + write: two units of HBM per byte, cap 0.5 B/ps) splits
  // HBM max-min three ways: the GEMM gets 1/3 of its demand and the copy 1/3 B/ps, so both take 3 us.
  auto graph = [](bool with_copy, OpId& gemm_id) {
    TaskGraph g(1);
    Op gemm = tiled("gemv", g.add_stream(0, "compute"), 100, kUs);
    gemm.hbm_bytes_per_cta = 10'000;
    gemm_id = g.add(gemm);
    if (with_copy) g.add(copy("d2d", g.add_stream(0, "copy"), 0, 0, kMB));
    return g;
  };
  OpId alone_id = kNoOp, shared_id = kNoOp;
  const Timeline alone = run(graph(false, alone_id), switch_node(1, 132, 1));
  const Timeline shared = run(graph(true, shared_id), switch_node(1, 132, 1));
  CHECK(alone.ops[alone_id].end_ps == kUs);
  CHECK(shared.ops[shared_id].end_ps == 3 * kUs);
  CHECK(shared.ops[1].end_ps == 3 * kUs);
}

TEST_CASE("a compute-bound GEMM whose HBM traffic fits is not slowed by a copy", "[engine][hbm]") {
  TaskGraph g(1);
  Op gemm = tiled("gemm", g.add_stream(0, "compute"), 100, kUs);
  gemm.hbm_bytes_per_cta = 2'000;  // 0.2 B/ps for the whole wave, the copy takes at most 0.5 x 2
  const OpId id = g.add(gemm);
  g.add(copy("d2d", g.add_stream(0, "copy"), 0, 0, kMB));
  const Timeline tl = run(g, switch_node(1, 132, 1));
  CHECK(tl.ops[id].end_ps == kUs);
  // The copy gets what the GEMM leaves, 0.8 B/ps of HBM (0.4 MB of copy in the first us), then its
  // own cap of 0.5 B/ps for the remaining 0.6 MB: 1 + 1.2 = 2.2 us.
  CHECK(tl.ops[1].end_ps == 2'200'000);
}

TEST_CASE("a persistent GEMM launched behind busy SMs fills them when they free", "[engine][persistent]") {
  // 8 SMs, 6 held by comm for 3 us; the grid is 8 CTAs (one per SM) over 16 tiles of 1 us, CTA c on
  // tiles c and c + 8. CTAs 0-1 run [0, 2], CTAs 2-3 take their SMs [2, 4], CTAs 4-7 start on the SMs
  // the comm kernel frees at 3 us and end at 5 us. (A grid frozen at the 2 SMs free at launch would
  // have looped 8 tiles on each and ended at 8 us.)
  TaskGraph g(1);
  hold_sms(g, 0, 6, 3 * kUs);
  Op p = tiled("persistent_gemm", g.add_stream(0, "compute"), 16, kUs);
  p.kind = OpKind::persistent;
  const OpId id = g.add(p);
  EngineOptions opt;
  opt.record_ctas = true;
  const Timeline tl = run(g, switch_node(1, 8, 1), opt);
  CHECK(tl.ops[id].end_ps == 5 * kUs);
  CHECK(tl.ops[id].sms_held == 6);
  int late = 0;  // first tiles of CTAs 4-7
  for (const CtaRecord& c : tl.ctas)
    if (c.op == id && c.tile >= 4 && c.tile < 8) {
      CHECK(c.start_ps == 3 * kUs);
      ++late;
    }
  CHECK(late == 4);
}

TEST_CASE("an SM hosting several CTAs drains for a higher-priority kernel", "[engine][priority]") {
  // One SM, two CTAs per SM, a low-priority GEMM of 3 tiles; a high-priority comm kernel becomes
  // ready at 0.5 us. At 1 us both resident CTAs end: the slot is not refilled while the comm kernel
  // waits, so the comm kernel gets the SM at 1 us and the third tile runs after it.
  TaskGraph g(1);
  Op gemm = tiled("gemm", g.add_stream(0, "compute"), 3, kUs);
  gemm.ctas_per_sm = 2;
  const OpId gid = g.add(gemm);
  const StreamId comm = g.add_stream(0, "comm", 1);
  g.add(delay("host", comm, kUs / 2));
  const OpId nccl = g.add(comm_kernel("nccl", comm, 1, 2 * kUs));
  const Timeline tl = run(g, switch_node(1, 1, 1));
  CHECK(tl.ops[nccl].start_ps == kUs);
  CHECK(tl.ops[gid].end_ps == 4 * kUs);
}

TEST_CASE("two concurrent curve-fidelity collectives on one link take twice as long", "[engine][collective]") {
  // Each collective sends 1 MB from GPU 0 to GPU 1 (100 GB/s ports): 10 us alone, no latency.
  auto collective = [](TaskGraph& g, std::int64_t id, StreamId s0, StreamId s1) {
    std::vector<OpId> out;
    for (int r = 0; r < 2; ++r) {
      Op op = comm_kernel("ar", r == 0 ? s0 : s1, 1, 10 * kUs);
      op.collective = id;
      op.members = 2;
      op.bytes = kMB;
      if (r == 0) op.curve_sends.push_back({1, kMB});
      out.push_back(g.add(op));
    }
    return out;
  };
  TaskGraph one(2);
  const auto a = collective(one, 0, one.add_stream(0, "c"), one.add_stream(1, "c"));
  CHECK(run(one, switch_node(2, 8, 1)).ops[a[0]].end_ps == 10 * kUs);

  TaskGraph two(2);
  const auto x = collective(two, 0, two.add_stream(0, "c0"), two.add_stream(1, "c0"));
  const auto y = collective(two, 1, two.add_stream(0, "c1"), two.add_stream(1, "c1"));
  const Timeline tl = run(two, switch_node(2, 8, 1));
  CHECK(tl.ops[x[0]].end_ps == 20 * kUs);
  CHECK(tl.ops[y[1]].end_ps == 20 * kUs);
  // Their bytes crossed the links and show in the byte accounting.
  REQUIRE(bytes_by_pair(tl).size() == 1);
  CHECK(bytes_by_pair(tl)[0].bytes == 2 * kMB);
}

TEST_CASE("a curve collective's latency part does not stretch under contention", "[engine][collective]") {
  // 4 us of latency + 10 us of bytes; a 1 MB copy on the same link shares it while the bytes move.
  TaskGraph g(2);
  std::vector<OpId> ar;
  for (int r = 0; r < 2; ++r) {
    Op op = comm_kernel("ar", g.add_stream(r, "c"), 1, 14 * kUs);
    op.collective = 0;
    op.members = 2;
    op.curve_latency_ps = 4 * kUs;
    if (r == 0) op.curve_sends.push_back({1, kMB});
    ar.push_back(g.add(op));
  }
  const OpId c = g.add(copy("c", g.add_stream(0, "copy"), 0, 1, kMB));
  const Timeline tl = run(g, switch_node(2, 8, 1));
  // Both at 50 GB/s: 20 us of bytes, then the collective's 4 us of latency.
  CHECK(tl.ops[c].end_ps == 20 * kUs);
  CHECK(tl.ops[ar[0]].end_ps == 24 * kUs);
}

TEST_CASE("launch: the host issues ahead, hiding its cost but not the device gap", "[engine][launch]") {
  // Host 4 us per launch, device gap 1 us. Long kernels (10 us): only the first launch's host cost
  // shows; every dependent kernel pays the gap. Short kernels (1 us): the host is the bottleneck.
  auto chain = [](Ps kernel_ps) {
    TaskGraph g(1);
    const StreamId s = g.add_stream(0, "compute");
    for (int i = 0; i < 3; ++i) g.add(tiled("k" + std::to_string(i), s, 1, kernel_ps));
    NodeConfig node = switch_node(1, 8, 1);
    node.launch_host_ps = 4 * kUs;
    node.launch_gap_ps = kUs;
    return run(g, node);
  };
  const Timeline slow = chain(10 * kUs);
  CHECK(slow.ops[0].start_ps == 4 * kUs);
  CHECK(slow.ops[1].start_ps == 15 * kUs);
  CHECK(slow.ops[2].start_ps == 26 * kUs);
  const Timeline fast = chain(kUs);
  CHECK(fast.ops[0].start_ps == 4 * kUs);
  CHECK(fast.ops[1].start_ps == 8 * kUs);
  CHECK(fast.ops[2].start_ps == 12 * kUs);
}

TEST_CASE("launch: CUDA graphs replace the per-launch host cost and shrink the gap", "[engine][launch]") {
  LaunchSpec l;
  l.host_us = 4;
  l.gap_us = 0.9;
  l.graph_gap_us = 0.5;
  CHECK(l.host_ps() == 4 * kUs);
  CHECK(l.gap_ps() == 900'000);
  l.cuda_graphs = true;
  CHECK(l.host_ps() == 0);
  CHECK(l.gap_ps() == 500'000);
}

TEST_CASE("launch: one host thread for the virtual ranks of a GPU, and a collective's enqueue cost", "[engine][launch]") {
  // Two ranks, one short kernel each, then a 1 us collective member each (host_ps 10 us extra).
  // Host 4 us per launch.
  auto build = [](bool shared, int physical_of_1) {
    TaskGraph g(2);
    std::vector<StreamId> s = {g.add_stream(0, "compute"), g.add_stream(1, "compute")};
    for (int r = 0; r < 2; ++r) g.add(tiled("k" + std::to_string(r), s[static_cast<std::size_t>(r)], 1, kUs));
    for (int r = 0; r < 2; ++r) {
      Op c = comm_kernel("ar", s[static_cast<std::size_t>(r)], 1, kUs);
      c.collective = 7;
      c.members = 2;
      c.comm = true;
      c.host_ps = 10 * kUs;
      g.add(c);
    }
    NodeConfig node = switch_node(2, 8, 1);
    node.launch_host_ps = 4 * kUs;
    node.shared_host = shared;
    if (physical_of_1 == 0) node.gpus[1].physical = 0;  // rank 1 is a virtual rank of GPU 0
    return run(g, node);
  };
  // One host per rank: each issues its kernel at 4 us and its collective part at 4 + 14 = 18 us.
  const Timeline own = build(false, 0);
  CHECK(own.ops[0].start_ps == 4 * kUs);
  CHECK(own.ops[1].start_ps == 4 * kUs);
  CHECK(own.ops[2].start_ps == 18 * kUs);
  CHECK(own.ops[3].start_ps == 18 * kUs);
  CHECK(own.ops[3].end_ps == 19 * kUs);
  // One host for both (virtual ranks of one GPU): program order k0, k1, ar0, ar1 issued at 4, 8,
  // 22, 36 us; ar0's kernel waits for its peer (as an NCCL kernel spins), so both end at 37 us.
  const Timeline one = build(true, 0);
  CHECK(one.ops[0].start_ps == 4 * kUs);
  CHECK(one.ops[1].start_ps == 8 * kUs);
  CHECK(one.ops[2].start_ps == 22 * kUs);
  CHECK(one.ops[3].start_ps == 36 * kUs);
  CHECK(one.ops[2].end_ps == 37 * kUs);
  CHECK(one.ops[3].end_ps == 37 * kUs);
  // shared_host on two physical GPUs changes nothing: each GPU keeps its host.
  const Timeline two = build(true, 1);
  CHECK(two.ops[3].start_ps == 18 * kUs);
  CHECK(two.ops[3].end_ps == 19 * kUs);
}

TEST_CASE("launch: a dependency between streams costs the host an event record and wait", "[engine][launch]") {
  // Host 4 us per launch, 5 us per cross-stream dependency. a (stream 1) -> b (stream 2): b is
  // issued at 4 + 4 + 5 = 13 us; c follows b on its own stream (no charge): 17 us. A collective
  // member depending on another stream pays only its own host_ps (here 0).
  TaskGraph g(1);
  const StreamId s1 = g.add_stream(0, "compute"), s2 = g.add_stream(0, "comm");
  const OpId a = g.add(tiled("a", s1, 1, kUs));
  Op b = tiled("b", s2, 1, kUs);
  b.deps = {a};
  const OpId bid = g.add(b);
  const OpId c = g.add(tiled("c", s2, 1, kUs));
  Op m = comm_kernel("member", s1, 1, kUs);
  m.collective = 3;
  m.members = 1;
  m.deps = {c};
  const OpId mid = g.add(m);
  NodeConfig node = switch_node(1, 8, 1);
  node.launch_host_ps = 4 * kUs;
  node.sync_host_ps = 5 * kUs;
  const Timeline tl = run(g, node);
  CHECK(tl.ops[a].start_ps == 4 * kUs);
  CHECK(tl.ops[bid].start_ps == 13 * kUs);
  CHECK(tl.ops[c].start_ps == 17 * kUs);
  CHECK(tl.ops[mid].start_ps == 21 * kUs);
  // Without the charge: 4, 8, 12, 16 (b and c wait for their issue, not for a).
  node.sync_host_ps = 0;
  const Timeline free = run(g, node);
  CHECK(free.ops[bid].start_ps == 8 * kUs);
  CHECK(free.ops[mid].start_ps == 16 * kUs);
}

TEST_CASE("virtual ranks share their physical GPU's HBM and copy engines", "[engine][virtual]") {
  // Two ranks on one physical GPU with one copy engine and 1000 GB/s of HBM.
  NodeConfig node;
  for (int r = 0; r < 2; ++r) node.gpus.push_back(GpuConfig{8, 1, 0, 0});
  for (int r = 0; r < 2; ++r) node.fabric.add_node("gpu" + std::to_string(r), r);
  const int hub = node.fabric.add_node("memory");
  for (int r = 0; r < 2; ++r) {
    node.fabric.add_link(r, hub, 2000.0, 0, "up", "d2d");
    node.fabric.add_link(hub, r, 2000.0, 0, "down", "d2d");
  }
  node.fabric.set_hbm(0, 1000.0);
  node.fabric.share_hbm(1, 0);
  SECTION("memory kernels on two ranks split the one HBM") {
    TaskGraph g(2);
    Op m;
    m.kind = OpKind::memory;
    m.bytes = kMB;
    m.name = "a";
    m.stream = g.add_stream(0, "s");
    g.add(m);
    m.name = "b";
    m.stream = g.add_stream(1, "s");
    g.add(m);
    const Timeline tl = run(g, node);
    CHECK(tl.ops[0].end_ps == 2 * kUs);
    CHECK(tl.ops[1].end_ps == 2 * kUs);
  }
  SECTION("a memory kernel's ramp (hbm_latency_ps) takes no HBM: two ranks' ramps overlap, then they split it") {
    for (GpuConfig& gpu : node.gpus) gpu.hbm_latency_ps = 3 * kUs;
    TaskGraph g(2);
    const StreamId s0 = g.add_stream(0, "s"), s1 = g.add_stream(1, "s");
    const OpId a = g.add(memory_op(s0, kMB));
    const OpId b = g.add(memory_op(s1, kMB));
    // A second kernel on rank 0 after the first: its ramp runs while rank 1 streams alone.
    const OpId a2 = g.add(memory_op(s0, kMB));
    const Timeline tl = run(g, node);
    // 3 us ramp each, then 1 MB each at half of 1000 GB/s: both end at 3 + 2 = 5 us.
    CHECK(tl.ops[a].end_ps == 5 * kUs);
    CHECK(tl.ops[b].end_ps == 5 * kUs);
    // Rank 0's second kernel: ramp 5..8 us, then 1 MB alone at 1000 GB/s: 9 us.
    CHECK(tl.ops[a2].end_ps == 9 * kUs);
  }
  SECTION("a rank's memory kernel streams at most its SMs x hbm_sm rate: the ramp does not hide it") {
    // 8 SMs x 25 GB/s = 200 GB/s per rank, well under the shared 1000 GB/s.
    for (GpuConfig& gpu : node.gpus) {
      gpu.hbm_latency_ps = 3 * kUs;
      gpu.hbm_sm_bytes_per_ps = 25e-3;
    }
    TaskGraph g(2);
    const StreamId s0 = g.add_stream(0, "s"), s1 = g.add_stream(1, "s");
    const OpId a = g.add(memory_op(s0, kMB));
    const OpId a2 = g.add(memory_op(s0, kMB));
    const OpId b = g.add(memory_op(s1, kMB));
    // A kernel holding 4 SMs (MemoryKernel::sms) streams at 100 GB/s.
    Op four = memory_op(s1, kMB);
    four.channels = 4;
    const OpId b2 = g.add(four);
    const Timeline tl = run(g, node);
    CHECK(tl.ops[a].end_ps == 8 * kUs);    // 3 us ramp + 1 MB at 200 GB/s
    CHECK(tl.ops[a2].end_ps == 16 * kUs);  // its ramp is not hidden: rank 1 cannot take rank 0's share
    CHECK(tl.ops[b].end_ps == 8 * kUs);
    CHECK(tl.ops[b2].end_ps == 8 * kUs + 3 * kUs + 10 * kUs);
  }
  SECTION("copies issued by two ranks queue for the one copy engine") {
    TaskGraph g(2);
    // Rank to rank: read and write the same HBM, so 0.5 B/ps: 2 us each, one after the other.
    const OpId a = g.add(copy("a", g.add_stream(0, "s"), 0, 1, kMB));
    const OpId b = g.add(copy("b", g.add_stream(1, "s"), 1, 0, kMB));
    const Timeline tl = run(g, node);
    CHECK(tl.ops[a].end_ps == 2 * kUs);
    CHECK(tl.ops[b].start_ps == 2 * kUs);
    CHECK(tl.ops[b].end_ps == 4 * kUs);
  }
}

TEST_CASE("a reducing step reads the receiver's HBM twice more per byte", "[engine][collective]") {
  TaskGraph g(2);
  std::vector<OpId> ops;
  for (int r = 0; r < 2; ++r) {
    Op op = comm_kernel("rs", g.add_stream(r, "c"), 1, 0);
    op.collective = 0;
    op.members = 2;
    Phase ph;
    if (r == 0) ph.sends.push_back({1, kMB});
    else ph.recvs.push_back({0, kMB});
    ph.reduce = true;
    op.phases.push_back(ph);
    ops.push_back(g.add(op));
  }
  const NodeConfig node = switch_node(2, 8, 1);
  const Timeline tl = run(g, node);
  CHECK(tl.link_bytes[static_cast<std::size_t>(node.fabric.hbm_link(0))] == 1.0 * kMB);
  CHECK(tl.link_bytes[static_cast<std::size_t>(node.fabric.hbm_link(1))] == 3.0 * kMB);
  // On an idle node HBM (1000 GB/s) is not the limit: the 100 GB/s port is.
  CHECK(tl.ops[ops[1]].end_ps == 10 * kUs);
}

TEST_CASE("NVLS legs to and from the switch cross only the GPU's own switch links", "[engine][collective]") {
  NodeConfig node;
  for (int r = 0; r < 2; ++r) node.gpus.push_back(GpuConfig{8, 1});
  for (int r = 0; r < 2; ++r) node.fabric.add_node("gpu" + std::to_string(r), r);
  const int sw = node.fabric.add_node("nvswitch", -1, true);
  for (int r = 0; r < 2; ++r) {
    node.fabric.add_link(r, sw, 100.0, 0, "up", "nvlink");
    node.fabric.add_link(sw, r, 100.0, 0, "down", "nvlink");
  }
  TaskGraph g(2);
  Op op = comm_kernel("nvls", g.add_stream(0, "c"), 1, 0);
  op.collective = 0;
  op.members = 1;
  Phase ph;
  ph.sends.push_back({kSwitchPeer, kMB});
  ph.recvs.push_back({kSwitchPeer, kMB / 2});
  op.phases.push_back(ph);
  const OpId id = g.add(op);
  const Timeline tl = run(g, node);
  CHECK(tl.ops[id].end_ps == 10 * kUs);  // up and down legs in parallel, the up one is longer
  CHECK(bytes_by_pair(tl).empty());      // switch legs are not traffic between ranks
}

TEST_CASE("full-rate SMs: GEMM tiles slow when more SMs of the physical GPU run them", "[engine][saturation]") {
  // Two virtual ranks of 8 SMs on one physical GPU; CTA times measured with 8 SMs busy.
  NodeConfig node;
  for (int r = 0; r < 2; ++r) node.gpus.push_back(GpuConfig{8, 1, 0, 0, 8});
  for (int r = 0; r < 2; ++r) node.fabric.add_node("gpu" + std::to_string(r), r);
  auto gemm = [](TaskGraph& g, int rank, std::int64_t tiles) {
    Op op = tiled("gemm" + std::to_string(rank), g.add_stream(rank, "s"), tiles);
    op.reference_sms = 8;
    return g.add(op);
  };
  SECTION("alone, a rank's GEMM runs at its calibrated rate") {
    TaskGraph g(2);
    const OpId a = gemm(g, 0, 16);
    CHECK(run(g, node).ops[a].end_ps == 2 * kTile);
  }
  SECTION("both ranks at once: 16 SMs busy against a limit of 8, every tile twice as long") {
    TaskGraph g(2);
    const OpId a = gemm(g, 0, 16), b = gemm(g, 1, 16);
    const Timeline tl = run(g, node);
    CHECK(tl.ops[a].end_ps == 4 * kTile);
    CHECK(tl.ops[b].end_ps == 4 * kTile);
    // Not modelled: they overlap for free.
    for (auto& gpu : node.gpus) gpu.full_rate_sms = 0;
    const Timeline free = run(g, node);
    CHECK(free.ops[a].end_ps == 2 * kTile);
    CHECK(free.ops[b].end_ps == 2 * kTile);
  }
  SECTION("a rank's tiles speed up when the other's GEMM ends") {
    TaskGraph g(2);
    const OpId a = gemm(g, 0, 8), b = gemm(g, 1, 24);
    const Timeline tl = run(g, node);
    // Together for a's one wave (2 us at half rate), then b's remaining 2 waves alone (1 us each).
    CHECK(tl.ops[a].end_ps == 2 * kTile);
    CHECK(tl.ops[b].end_ps == 4 * kTile);
  }
  SECTION("a last wave on fewer SMs than the reference runs faster (limit 6 of 8)") {
    for (auto& gpu : node.gpus) gpu.full_rate_sms = 6;
    TaskGraph g(2);
    // 20 tiles on 8 SMs: two full waves (8 busy: factor 8/8) and a last of 4 (factor 6/8).
    const OpId a = gemm(g, 0, 20);
    CHECK(run(g, node).ops[a].end_ps == 2 * kTile + 750'000);
  }
  SECTION("tiles without a reference (not a calibrated GEMM) neither count nor slow") {
    TaskGraph g(2);
    const OpId a = gemm(g, 0, 16);
    const OpId b = g.add(tiled("other", g.add_stream(1, "s"), 16));
    const Timeline tl = run(g, node);
    CHECK(tl.ops[a].end_ps == 2 * kTile);
    CHECK(tl.ops[b].end_ps == 2 * kTile);
  }
}

TEST_CASE("full-rate SMs: a GEMM running faster than calibrated asks HBM for more", "[engine][saturation][hbm]") {
  // 4 SMs of a GPU whose CTA times were measured with 8 busy; limit 4: tiles run twice as fast
  // (max(4, 8) / max(4, 4)) unless HBM holds them back. 4 tiles of 1 MB each per microsecond at
  // rate 1 ask 4000 GB/s; at rate 2, 8000 GB/s of the 6000 there is: rate 2 x 6000 / 8000 = 1.5.
  NodeConfig node;
  node.gpus.push_back(GpuConfig{4, 1, -1, 0, 4});
  node.fabric.add_node("gpu0", 0);
  node.fabric.set_hbm(0, 6000.0);
  TaskGraph g(1);
  Op op = tiled("gemm", g.add_stream(0, "s"), 4);
  op.reference_sms = 8;
  op.hbm_bytes_per_cta = 1'000'000;
  const OpId a = g.add(op);
  const Timeline tl = run(g, node);
  CHECK(std::llabs(tl.ops[a].end_ps - 666'667) <= 2);
  // With HBM to spare the speed-up is whole: half the CTA time.
  node.fabric.set_hbm(0, 9000.0);
  CHECK(run(g, node).ops[a].end_ps == kTile / 2);
}

TEST_CASE("a memory kernel alone takes hbm_latency_us + bytes / rate, in the engine and in closed form",
          "[engine][hbm]") {
  HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch");
  const Bytes bytes = 64LL << 20;
  const double gbps = hw.gpu.hbm_bandwidth_gbps * hw.gpu.hbm_efficiency;
  REQUIRE(gbps > 0);
  REQUIRE(hw.gpu.hbm_latency_us == 0);  // the datasheet profiles model no ramp
  CHECK(streaming_kernel_ps(hw, bytes) == transfer_ps(bytes, gbps));
  hw.gpu.hbm_latency_us = 8.1;  // the H100 calibration's alpha-beta fit
  const Ps expected = ps_from_us(8.1) + transfer_ps(bytes, gbps);
  CHECK(streaming_kernel_ps(hw, bytes) == expected);
  TaskGraph g(1);
  const OpId id = g.add(memory_op(g.add_stream(0, "s"), bytes));
  const Timeline tl = run(g, make_node(hw, 1));
  CHECK(tl.ops[id].end_ps - tl.ops[id].start_ps == expected);
  // Decode streaming times (delayed-tp-blog tau_w) carry the same ramp, as the engine runs them.
  DecodeStack dec;
  dec.layers = 1;
  dec.d_model = 4096;
  dec.d_ffn = 14336;
  dec.heads = 32;
  dec.kv_heads = 8;
  dec.dtype = DType::bf16;
  const DecodeShapes sh = decode_shapes(dec, 4);
  const DecodeTimes t = decode_times(dec, 4, hw);
  CHECK(t.tau_att_ps == ps_from_us(8.1) + transfer_ps(sh.attention_weight_bytes, gbps));
  CHECK(t.tau_mlp_ps == ps_from_us(8.1) + transfer_ps(sh.mlp_weight_bytes, gbps));
  // A per-SM streaming rate caps a kernel on few SMs, not one on the whole GPU (132 x 30 GB/s).
  hw.gpu.hbm_sm_gbps = 30;
  CHECK(streaming_kernel_gbps(hw, 16) == Approx(480.0));
  CHECK(streaming_kernel_ps(hw, bytes, 16) == ps_from_us(8.1) + transfer_ps(bytes, 480.0));
  CHECK(streaming_kernel_ps(hw, bytes) == expected);
  hw.gpu.sm_count = 16;  // a virtual rank's partition: the profile's own SMs
  CHECK(streaming_kernel_ps(hw, bytes) == ps_from_us(8.1) + transfer_ps(bytes, 480.0));
  const Timeline capped = run(g, make_node(hw, 1));
  CHECK(capped.ops[id].end_ps - capped.ops[id].start_ps == streaming_kernel_ps(hw, bytes));
  // Without a memory model there is no ramp either: memory kernels take no time.
  hw.gpu.hbm_bandwidth_gbps = 0;
  CHECK(streaming_kernel_ps(hw, bytes) == 0);
  CHECK(make_node(hw, 1).gpus[0].hbm_latency_ps == 0);
}
