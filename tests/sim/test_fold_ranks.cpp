// EngineOptions::fold_like_ranks (the compute-only re-run): ranks whose ops are rank 0's and that share
// no resource (dependencies across ranks allowed when every rank is alike) are not simulated, their
// records copied from rank 0. The shortcut must give exactly
// what the full simulation gives: every op record, rank end, busy time and the makespan. And the SM
// a wave's tail frees goes to the kernel waiting beside it as dispatch would give it (closed forms).
#include <string>

#include <catch2/catch.hpp>

#include "cost_model/profile_loader.hpp"
#include "node_fixtures.hpp"
#include "sim/node_builder.hpp"
#include "sim/schemes/scheme.hpp"

using namespace overlap;
using namespace overlap::sim;
using namespace overlap::sim::test;

namespace {

const std::string kHardwareDir = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";

Workload two_layer_step() {
  Workload w;
  w.kind = WorkloadKind::transformer;
  w.tp = 8;
  w.shape = Transformer{.model = "llama3-70b", .layers = 2, .batch = 1, .seq = 8192, .d_model = 8192,
                        .d_ffn = 28672, .heads = 64, .kv_heads = 8, .dtype = DType::bf16};
  w.training = Training{Pass::step, Recompute::selective, DataParallel{}};
  return w;
}

// Everything the folded run promises to give as the full one does.
void check_same(const Timeline& folded, const Timeline& full) {
  REQUIRE(folded.ops.size() == full.ops.size());
  for (std::size_t i = 0; i < full.ops.size(); ++i) {
    INFO("op " << i);
    CHECK(folded.ops[i].op == full.ops[i].op);
    CHECK(folded.ops[i].ready_ps == full.ops[i].ready_ps);
    CHECK(folded.ops[i].start_ps == full.ops[i].start_ps);
    CHECK(folded.ops[i].end_ps == full.ops[i].end_ps);
    CHECK(folded.ops[i].sms_held == full.ops[i].sms_held);
    CHECK(folded.ops[i].sms == full.ops[i].sms);
    CHECK(folded.ops[i].copy_engine == full.ops[i].copy_engine);
  }
  CHECK(folded.makespan_ps == full.makespan_ps);
  CHECK(folded.rank_end_ps == full.rank_end_ps);
  CHECK(folded.sm_busy_ps == full.sm_busy_ps);
  CHECK(folded.copy_engine_busy_ps == full.copy_engine_busy_ps);
}

Timeline compute_only(const TaskGraph& g, const NodeConfig& node, bool fold) {
  EngineOptions o;
  o.zero_comm = true;
  o.fold_like_ranks = fold;
  return run(g, node, o);
}

}  // namespace

TEST_CASE("folding like ranks in the compute-only run gives the full run's records, every scheme of a step",
          "[engine][fold][training]") {
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", kHardwareDir);
  const Workload w = two_layer_step();
  const NodeConfig node = make_node(hw, w.tp);
  const nlohmann::json params = nlohmann::json::object();
  int folded_schemes = 0;
  for (const SchemeInfo& s : scheme_registry()) {
    if (s.applies && !s.applies(w)) continue;
    INFO("scheme " << s.name);
    const BuiltScheme built = s.build(BuildContext{w, hw, params, Fidelity::curve, &node});
    const Timeline full = compute_only(built.graph, node, false);
    const Timeline folded = compute_only(built.graph, node, true);
    check_same(folded, full);
    // Fewer events: the other seven ranks were not simulated.
    if (folded.events < full.events) ++folded_schemes;
    // no_overlap: its ranks meet only through collectives, which the compute-only run skips; async_tp:
    // each rank's GEMM chunks wait for copies from its peers (zeroed, but dependencies across ranks).
    if (s.name == "no_overlap" || s.name == "async_tp") CHECK(folded.events * w.tp <= full.events);
  }
  CHECK(folded_schemes >= 2);
}

TEST_CASE("ranks are folded only when nothing couples them and their ops are rank 0's", "[engine][fold]") {
  const NodeConfig node = switch_node(3, 4, 1);
  // cross_dep: rank 1's second GEMM waits for rank 2's first (one rank coupled); ring: every rank's
  // second GEMM waits for the next rank's first (all coupled alike).
  auto graph = [](std::int64_t rank2_tiles, bool cross_dep, bool ring = false) {
    TaskGraph g(3);
    std::vector<OpId> first;
    for (int r = 0; r < 3; ++r) {
      const StreamId main = g.add_stream(r, "main");
      const StreamId side = g.add_stream(r, "side", 1);
      first.push_back(g.add(tiled("gemm", main, r == 2 ? rank2_tiles : 10)));
      g.add(comm_kernel("ag", side, 2, 3 * kTile));  // zeroed: completes at once
      Op next = tiled("gemm2", main, 6);
      g.add(std::move(next));
    }
    if (cross_dep) g.depend(static_cast<OpId>(g.ops().size() - 4), first[2]);
    if (ring)
      for (int r = 0; r < 3; ++r) g.depend(first[static_cast<std::size_t>(r)] + 2, first[static_cast<std::size_t>((r + 1) % 3)]);
    return g;
  };
  SECTION("alike and independent: ranks 1 and 2 folded") {
    const TaskGraph g = graph(10, false);
    const Timeline full = compute_only(g, node, false), folded = compute_only(g, node, true);
    check_same(folded, full);
    CHECK(folded.events * 3 == full.events);
  }
  SECTION("rank 2 unlike rank 0: rank 1 folded, rank 2 simulated") {
    const TaskGraph g = graph(14, false);
    const Timeline full = compute_only(g, node, false), folded = compute_only(g, node, true);
    check_same(folded, full);
    CHECK(folded.events < full.events);
    CHECK(folded.rank_end_ps[2] > folded.rank_end_ps[0]);
  }
  SECTION("dependencies across ranks, every rank alike: ranks 1 and 2 folded, waiting as rank 0 does") {
    const TaskGraph g = graph(10, false, true);
    const Timeline full = compute_only(g, node, false), folded = compute_only(g, node, true);
    check_same(folded, full);
    CHECK(folded.events * 3 == full.events);
  }
  SECTION("a dependency across ranks, rank 2 unlike rank 0: nothing folded") {
    const TaskGraph g = graph(14, false, true);
    const Timeline full = compute_only(g, node, false), folded = compute_only(g, node, true);
    check_same(folded, full);
    CHECK(folded.events == full.events);
  }
  SECTION("a dependency across ranks: nothing folded") {
    const TaskGraph g = graph(14, true);
    const Timeline full = compute_only(g, node, false), folded = compute_only(g, node, true);
    check_same(folded, full);
    CHECK(folded.events == full.events);
  }
}

TEST_CASE("a wave's tail hands each freed SM to the kernel waiting beside it", "[engine][sm]") {
  // 4 SMs, all three kernels launched at 0 on their own streams, one priority (so in launch order):
  // A 6 tiles of 1 tile-time, B 4 tiles of 2, C a gang kernel of 3 SMs doing no work.
  // t=0: A takes the 4 SMs (tiles 0-3); A (2 tiles left), B, C wait in that order.
  // t=1: A's wave ends: A is first in line, so two of its slots go to tiles 4 and 5; the other two
  //      SMs free up one by one and go to B (tiles 0, 1).
  // t=2: A's tiles 4 and 5 end (A ends): B takes both SMs (tiles 2, 3).
  // t=3: B's tiles 0 and 1 end: C takes their SMs (2 of its 3).
  // t=4: B's tiles 2 and 3 end (B ends): C takes its third SM and starts (and ends: no work).
  TaskGraph g(1);
  const StreamId s0 = g.add_stream(0, "a");
  const StreamId s1 = g.add_stream(0, "b");
  const StreamId s2 = g.add_stream(0, "c");
  const OpId a = g.add(tiled("A", s0, 6));
  const OpId b = g.add(tiled("B", s1, 4, 2 * kTile));
  Op gang;
  gang.name = "C";
  gang.kind = OpKind::memory;  // an SM-holding gang kernel with no bytes to stream
  gang.stream = s2;
  gang.channels = 3;
  const OpId c = g.add(gang);
  const Timeline tl = run(g, switch_node(1, 4, 1));
  const auto& ra = tl.ops[static_cast<std::size_t>(a)];
  const auto& rb = tl.ops[static_cast<std::size_t>(b)];
  const auto& rc = tl.ops[static_cast<std::size_t>(c)];
  CHECK(ra.end_ps == 2 * kTile);
  CHECK(rb.start_ps == kTile);
  CHECK(rb.end_ps == 4 * kTile);
  CHECK(rb.sms_held == 4);
  CHECK(rc.start_ps == 4 * kTile);
  CHECK(rc.end_ps == 4 * kTile);
  CHECK(rc.sms.size() == 3);
  // SM time: A's 6 tiles and B's 4 x 2 (C held its SMs for no time once started).
  CHECK(tl.sm_busy_ps[0] == 6 * kTile + 8 * kTile);
  CHECK(tl.makespan_ps == 4 * kTile);
}
