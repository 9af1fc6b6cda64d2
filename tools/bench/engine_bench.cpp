// Engine throughput benchmark (target: at least 20 million events per second on one core, counted
// as the CTAs, transfers and ops a run retires; see items_per_s below).
// A large multi-rank graph keeps every resource busy at once: tiled GEMMs on two streams per rank
// (over a million CTA events), copy-engine transfers to neighbours, and ring collectives whose steps
// are matched across ranks and share links. Reports events/s as a Google Benchmark rate counter.
#include <benchmark/benchmark.h>

#include "sim/engine.hpp"
#include "sim/node_config.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

NodeConfig bench_node(int gpus) {
  NodeConfig n;
  n.launch_gap_ps = 2'000'000;
  for (int g = 0; g < gpus; ++g) n.gpus.push_back(GpuConfig{132, 3});
  for (int g = 0; g < gpus; ++g) n.fabric.add_node("gpu" + std::to_string(g), g);
  const int sw = n.fabric.add_node("nvswitch");
  for (int g = 0; g < gpus; ++g) {
    n.fabric.add_link(g, sw, 450.0, 250'000, "up");
    n.fabric.add_link(sw, g, 450.0, 250'000, "down");
    n.fabric.set_hbm(g, 3000.0);
  }
  return n;
}

TaskGraph bench_graph(int ranks, int gemms, std::int64_t tiles) {
  TaskGraph g(ranks);
  std::int64_t collective = 0;
  std::vector<StreamId> compute, side, comm, copies;
  for (int r = 0; r < ranks; ++r) {
    compute.push_back(g.add_stream(r, "compute"));
    side.push_back(g.add_stream(r, "side"));
    comm.push_back(g.add_stream(r, "comm", 1));
    copies.push_back(g.add_stream(r, "copy"));
  }
  for (int i = 0; i < gemms; ++i) {
    ++collective;
    for (int r = 0; r < ranks; ++r) {
      Op gemm;
      gemm.name = "gemm";
      gemm.kind = OpKind::tiled;
      gemm.stream = (i % 2 == 0) ? compute[static_cast<std::size_t>(r)] : side[static_cast<std::size_t>(r)];
      gemm.ctas = tiles;
      gemm.cta_ps = 1'500'000 + 10'000 * r;
      const OpId gid = g.add(gemm);

      Op rs;
      rs.name = "ring_rs";
      rs.kind = OpKind::comm_kernel;
      rs.comm = true;
      rs.stream = comm[static_cast<std::size_t>(r)];
      rs.channels = 16;
      rs.collective = collective;
      rs.members = ranks;
      rs.deps.push_back(gid);
      for (int k = 0; k < ranks - 1; ++k)
        rs.phases.push_back(Phase{{{(r + 1) % ranks, 4 << 20}}, {{(r + ranks - 1) % ranks, 4 << 20}}, 0, 1'000'000});
      g.add(rs);

      for (int c = 0; c < 4; ++c) {
        Op cp;
        cp.name = "copy";
        cp.kind = OpKind::copy;
        cp.comm = true;
        cp.stream = copies[static_cast<std::size_t>(r)];
        cp.src_gpu = r;
        cp.dst_gpu = (r + 1 + c) % ranks;
        cp.bytes = 8 << 20;
        g.add(cp);
      }
    }
  }
  return g;
}

void BM_EngineLargeGraph(benchmark::State& state) {
  const int ranks = 8;
  const TaskGraph graph = bench_graph(ranks, static_cast<int>(state.range(0)), 8192);
  const NodeConfig node = bench_node(ranks);
  // What a run retires whatever the engine batches: every CTA, every transfer and every op. An engine
  // with one event per CTA would process about this many events; the
  // cohort engine processes far fewer (a wave ends in one event), so events/s alone undersells it.
  std::int64_t items_per_run = static_cast<std::int64_t>(graph.ops().size());
  for (const Op& op : graph.ops()) {
    if (op.kind == OpKind::tiled || op.kind == OpKind::persistent) items_per_run += op.ctas;
    for (const Phase& ph : op.phases) items_per_run += static_cast<std::int64_t>(ph.sends.size());
  }
  std::uint64_t events = 0;
  std::uint64_t items = 0;
  for (auto _ : state) {
    const Timeline tl = run(graph, node);
    events += tl.events;
    items += static_cast<std::uint64_t>(items_per_run);
    benchmark::DoNotOptimize(tl.makespan_ps);
  }
  state.counters["events_per_run"] = static_cast<double>(events) / static_cast<double>(state.iterations());
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["items_per_run"] = static_cast<double>(items_per_run);
  state.counters["items_per_s"] = benchmark::Counter(static_cast<double>(items), benchmark::Counter::kIsRate);
}
// 20 GEMMs x 8192 tiles x 8 ranks = 1.31 M CTA events, plus steps, copies and flows.
BENCHMARK(BM_EngineLargeGraph)->Arg(20)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
