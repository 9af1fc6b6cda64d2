#include "calibrate/validate/groups.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "calibrate/core/statistics.hpp"
#include "sim/engine.hpp"
#include "sim/node_builder.hpp"
#include "sim/schemes/graph_builder.hpp"

namespace overlap::calibrate {

namespace fs = std::filesystem;
namespace cal = overlap::calibrate;
using nlohmann::json;

namespace {

// One tiled GEMM kernel of `plan` on `stream`.
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
  const GemmPlan plan = plan_gemm(p, s);
  sim::TaskGraph g(1);
  const int side = g.add_stream(0, "side");
  const int timed = g.add_stream(0, "timed");
  auto copy_op = [&](int stream) {
    sim::Op copy;
    copy.name = "copy";
    copy.kind = sim::OpKind::copy;
    copy.stream = stream;
    copy.src_gpu = copy.dst_gpu = 0;
    copy.bytes = copy_bytes;
    copy.comm = true;
    return copy;
  };
  auto gemm_op = [&](int stream) {
    sim::Op gemm = gemm_kernel(plan, stream);
    gemm.hbm_bytes_per_cta = sim::gemm_tile_hbm_bytes(p, s, plan);
    return gemm;
  };
  std::vector<sim::OpId> measured;  // the timed stream's op of each repetition
  for (int i = 0; i < warmup + reps; ++i) {
    // The host enqueues the timed repetitions after waiting for the warm-up's timed stream.
    const std::vector<sim::OpId> after_wait = i == warmup && !measured.empty() ? std::vector<sim::OpId>{measured.back()} : std::vector<sim::OpId>{};
    for (int j = 0; j < (timed_copy ? gemms_beside : 1); ++j) {
      sim::Op o = timed_copy ? gemm_op(side) : copy_op(side);
      if (j == 0) o.deps = after_wait;
      g.add(o);
    }
    measured.push_back(g.add(timed_copy ? copy_op(timed) : gemm_op(timed)));
  }
  sim::NodeConfig node = sim::make_node(p, 1);
  node.launch_gap_ps = 0;
  node.launch_host_ps = 0;
  const sim::Timeline tl = sim::run(g, node);
  std::vector<double> us;
  for (std::size_t i = static_cast<std::size_t>(warmup); i < measured.size(); ++i) {
    const auto& r = tl.ops[static_cast<std::size_t>(measured[i])];
    us.push_back(us_from_ps(r.end_ps - r.start_ps));
  }
  return cal::median_of_values(us);
}


// The engine on a virtual node: the same GEMM on each of its T ranks at once (own operands), the
// ranks sharing the GPU's HBM through their tiles' HBM demand (gemm_tile_hbm_bytes).
double simulate_concurrent_gemm_us(const HardwareProfile& p, const GemmShape& s, int ranks) {
  const GemmPlan plan = plan_gemm(p, s);
  sim::TaskGraph g(ranks);
  for (int r = 0; r < ranks; ++r) {
    sim::Op op = gemm_kernel(plan, g.add_stream(r, "gemm"));
    op.hbm_bytes_per_cta = sim::gemm_tile_hbm_bytes(p, s, plan);
    g.add(op);
  }
  sim::NodeConfig node = sim::make_node(p, ranks);
  node.launch_gap_ps = 0;
  node.launch_host_ps = 0;
  return us_from_ps(sim::run(g, node).makespan_ps);
}

}  // namespace overlap::calibrate
