// The async-TP blog's claims ("An illustrated deep-dive into how the compute and comms in TP+SP are
// overlapped using Async TP", section "SM contention and wave quantization") and the
// forward speedup facts.md records from the PyTorch post the blog cites (its footnote 5), against
// async-tp-wave-quantization.yaml and the Llama-3-70B scenarios on the built-in H100 profile. The
// published figures are data (validation/papers/async_tp.yaml).
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/engine.hpp"
#include "sim/node_builder.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "tools/paper_data.hpp"
#include "tools/papers.hpp"

namespace overlap::tools::papers {

namespace {

// The engine's time for one GEMM alone on one GPU, on all SMs or on a grid of `sms` CTAs (the SMs the
// communication kernels leave it).
Ps gemm_alone_ps(const sim::Scenario& sc, const GemmShape& shape, int sms) {
  const nlohmann::json none = nlohmann::json::object();
  const sim::BuildContext ctx{sc.workload, sc.hardware, none, sc.fidelity};
  sim::GraphBuilder b(ctx, 1);
  const sim::StreamId s = b.add_stream(0, "compute");
  sim::GemmOptions o;
  o.name = "gemm";
  o.sm_budget = sms;
  b.add_gemm(0, s, shape, o);
  const sim::BuiltScheme built = b.finish("one GEMM");
  return sim::run(built.graph, sim::make_node(sc.hardware, 1)).makespan_ps;
}

}  // namespace

std::vector<PaperRow> async_tp_rows(ScenarioRunner& runner) {
  const PaperData& data = runner.data("async_tp");
  std::vector<PaperRow> rows;
  // "SM contention and wave quantization" (lines 213-225): a GEMM of 256 tiles on 132 SMs and on 122.
  {
    const char* name = "async-tp-wave-quantization";
    const sim::Scenario& sc = runner.scenario(name);
    const auto& g = std::get<sim::GemmCollective>(sc.workload.shape);
    const GemmShape shape{g.m, g.n, g.k, g.dtype};
    const GemmPlan plan = plan_gemm(sc.hardware, shape);
    const std::string cfg = fmt::format("{}: the {} x {} x {} GEMM, {} tiles of {}x{}, H100", name, g.m, g.n, g.k, plan.tiles,
                                        plan.tile_m, plan.tile_n);
    RowSpec w132 = data.row("waves_132");
    RowSpec w122 = data.row("waves_122");
    w132.config = w122.config = cfg;
    rows.push_back(judge(w132, static_cast<double>(plan.waves(132))));
    rows.push_back(judge(w122, static_cast<double>(plan.waves(122))));
    RowSpec lat = data.row("latency_122");
    lat.config = cfg + "; engine run, grid capped at 122";
    rows.push_back(judge(lat, static_cast<double>(gemm_alone_ps(sc, shape, 122)) /
                                  static_cast<double>(gemm_alone_ps(sc, shape, 0))));
  }
  // Footnote 5's forward speedup. Our forward: the whole model.
  {
    const auto& base = runner.result("../llama3-70b-tp8-transformer", {}, "no_overlap");
    // The file lists no schemes, so each runs with its defaults: async_tp's are copy engines and two
    // alternating streams, PyTorch's setting.
    const auto& atp = runner.result("../llama3-70b-tp8-transformer", {}, "async_tp");
    rows.push_back(
        judge(data.row("llama3_70b_forward"), static_cast<double>(base.latency_ps) / static_cast<double>(atp.latency_ps)));
  }
  return rows;
}

}  // namespace overlap::tools::papers
