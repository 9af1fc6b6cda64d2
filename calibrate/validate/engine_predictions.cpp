#include "calibrate/validate/groups.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "cost_model/statistics.hpp"
#include "sim/engine.hpp"
#include "sim/node_builder.hpp"
#include "sim/schemes/graph_builder.hpp"

namespace overlap::calibrate {

using nlohmann::json;

namespace {

// One tiled GEMM kernel of `plan` on `stream`, built here rather than by GraphBuilder::add_gemm:
// that one plans the GEMM's waves for the profile's whole GPU and charges its tiles' HBM traffic,
// where this prediction is the kernel alone on a partition of `sms` SMs with the roofline applied
// to the result.
sim::Op gemm_kernel(const GemmPlan& plan, sim::StreamId stream) {
  sim::Op op;
  op.name = "gemm";
  op.kind = sim::OpKind::tiled;
  op.stream = stream;
  op.ctas = plan.tiles;
  op.ctas_per_sm = plan.ctas_per_sm;
  op.cta_ps = plan.cta_ps;
  op.reference_sms = plan.reference_sms;
  return op;
}

}  // namespace

// The engine on one GPU of `sms` SMs running one GEMM kernel (the measured time is CUDA events
// around the kernel alone, so no launch gap); a memory-bound plan takes at least its weight bytes
// over HBM, as cost_model's gemm_time_ps does.
double simulate_gemm_us(const HardwareProfile& p, const GemmShape& s, int sms) {
  const GemmPlan plan = plan_gemm(p, s);
  sim::TaskGraph g(1);
  g.add(gemm_kernel(plan, g.add_stream(0, "gemm")));
  sim::NodeConfig node = sim::make_node(p, 1);
  node.gpus[0].sm_count = sms;
  node.launch_gap_ps = 0;
  node.launch_host_ps = 0;
  const sim::Timeline tl = sim::run(g, node);
  return us_from_ps(std::max(tl.makespan_ps, plan.memory_ps));
}

// The benchmark's loop (bench_interference.cpp through timing.cpp time_on_stream_us), simulated as
// it runs: `warmup` repetitions, the host waiting for the timed stream only, then `reps` timed ones,
// none waited for in between. A repetition is a copy-engine copy of `copy_bytes` inside the GPU's
// memory on a side stream and the GEMM on the timed stream, so the copies queue back to back on
// their stream (the first timed copy no earlier than the host enqueues it, after the last warm-up
// GEMM), the GEMMs on theirs. The copy reads and writes HBM at the calibrated D2D rate, the GEMM's
// tiles stream their HBM traffic (gemm_tile_hbm_bytes), and the engine shares the HBM between them.
// Returns the median timed GEMM, as the benchmark reports it. (One copy beside one GEMM would end
// half-way through the GEMM: 889 us against the measured 1024 us.)
//
// timed_copy: the other row of the benchmark, the copy timed (on the timed stream) with
// `gemms_beside` GEMMs per repetition on the side stream; returns the median timed copy.
double simulate_gemm_beside_copies_us(const HardwareProfile& p, const GemmShape& s, Bytes copy_bytes, int warmup, int reps,
                                      bool timed_copy, int gemms_beside) {
  const sim::Workload one_gpu;
  const json no_params = json::object();
  const sim::BuildContext ctx{one_gpu, p, no_params};  // the builder keeps a reference to it
  sim::GraphBuilder b(ctx, 1);
  const sim::StreamId side = b.add_stream(0, "side");
  const sim::StreamId timed = b.add_stream(0, "timed");
  // A copy inside the GPU's memory (not part of a collective: no required bytes), or the GEMM with
  // its tiles' HBM traffic.
  auto add = [&](bool copy, sim::StreamId stream, const std::vector<sim::OpId>& deps) {
    if (copy) return b.add_copy(0, stream, 0, 0, copy_bytes, "copy", deps, false);
    sim::GemmOptions o;
    o.deps = deps;
    return b.add_gemm(0, stream, s, o);
  };
  std::vector<sim::OpId> measured;  // the timed stream's op of each repetition
  for (int i = 0; i < warmup + reps; ++i) {
    // The host enqueues the timed repetitions after waiting for the warm-up's timed stream.
    const std::vector<sim::OpId> after_wait = i == warmup && !measured.empty() ? std::vector<sim::OpId>{measured.back()} : std::vector<sim::OpId>{};
    for (int j = 0; j < (timed_copy ? gemms_beside : 1); ++j) add(!timed_copy, side, j == 0 ? after_wait : std::vector<sim::OpId>{});
    measured.push_back(add(timed_copy, timed, {}));
  }
  sim::NodeConfig node = sim::make_node(p, 1);
  node.launch_gap_ps = 0;
  node.launch_host_ps = 0;
  const sim::Timeline tl = sim::run(b.graph(), node);
  std::vector<double> us;
  for (std::size_t i = static_cast<std::size_t>(warmup); i < measured.size(); ++i) {
    const auto& r = tl.ops[static_cast<std::size_t>(measured[i])];
    us.push_back(us_from_ps(r.end_ps - r.start_ps));
  }
  return median(us);
}

namespace {

// The makespan in us of what `add` builds on a fresh `ranks`-GPU graph, run on the profile's node; with
// `launch_costs` false the kernels start with no host issue cost and no gap (a kernel timed alone by
// CUDA events).
double simulate_built_us(const HardwareProfile& p, int ranks, bool launch_costs,
                         const std::function<void(sim::GraphBuilder&)>& add) {
  const sim::Workload no_workload;
  const json no_params = json::object();
  const sim::BuildContext ctx{no_workload, p, no_params};  // the builder keeps a reference to it
  sim::GraphBuilder b(ctx, ranks);
  add(b);
  sim::NodeConfig node = sim::make_node(p, ranks);
  if (!launch_costs) {
    node.launch_gap_ps = 0;
    node.launch_host_ps = 0;
  }
  return us_from_ps(sim::run(b.graph(), node).makespan_ps);
}

}  // namespace

// The engine on a virtual node: the same GEMM on each of its T ranks at once (own operands), the
// ranks sharing the GPU's HBM through their tiles' HBM demand (gemm_tile_hbm_bytes).
double simulate_concurrent_gemm_us(const HardwareProfile& p, const GemmShape& s, int ranks) {
  return simulate_built_us(p, ranks, false, [&](sim::GraphBuilder& b) {
    for (int r = 0; r < ranks; ++r) b.add_gemm(r, b.add_stream(r, "gemm"), s);
  });
}

// One rank's expert GEMMs as the MoE schemes build them (GraphBuilder::add_grouped_gemm: one tiled op
// whose waves come from every expert's tiles, a memory-bound one stretched to its weight bytes), the
// kernel alone on the whole GPU.
double simulate_grouped_gemm_us(const HardwareProfile& p, const std::vector<GemmShape>& experts) {
  return simulate_built_us(p, 1, false, [&](sim::GraphBuilder& b) { b.add_grouped_gemm(0, b.add_stream(0, "experts"), experts); });
}

// The same GEMMs as one kernel each, back to back on one stream (a sequential expert loop), each as
// GraphBuilder::add_gemm plans it; the host issues them one after another at the profile's launch
// cost, so a loop of small GEMMs is as launch-bound in the engine as on the GPU.
double simulate_gemm_sequence_us(const HardwareProfile& p, const std::vector<GemmShape>& gemms) {
  return simulate_built_us(p, 1, true, [&](sim::GraphBuilder& b) {
    const sim::StreamId stream = b.add_stream(0, "experts");
    for (const GemmShape& s : gemms) {
      if (s.m > 0) b.add_gemm(0, stream, s);
    }
  });
}

}  // namespace overlap::calibrate
