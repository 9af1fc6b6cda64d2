// FlashOverlap's LLM-training result as a simulated training step (flashoverlap-paper Sec. 6.3, line
// 368: "our design brings 1.05-1.13x speedup for different tasks"; Table 4, line 335: Llama3-70B,
// TP 8, 16384 input tokens, 8 layers, Megatron-LM on A800). The Sec. 6.3 rows of papers_flashoverlap.cpp
// reach the end-to-end figure from the operators and the paper's own time share (Sec. 2.3.2: GEMM+RS
// about 30 % of a training step); these rows simulate the whole step instead
// (scenarios/papers/flashoverlap-a800-llama3-70b-training-step.yaml: forward, backward, every
// collective) and compare the step speedup with the printed range. The paper prints only the range
// over its four tasks (Fig. 12's bars carry no numbers), so the step's speedup is held to both ends
// (validation/papers/flashoverlap.yaml).
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "tools/paper_data.hpp"
#include "tools/papers.hpp"

namespace overlap::tools::papers {

namespace {

constexpr const char* kStepFile = "flashoverlap-a800-llama3-70b-training-step";

struct StepRun {
  double speedup = 0;
  double base_us = 0, fo_us = 0;
  double base_exposed_us = 0, fo_exposed_us = 0;  // exposed TP communication of the step
};

StepRun run_step(ScenarioRunner& runner, const nlohmann::json& params) {
  const sim::SchemeResult& base = runner.result(kStepFile, {}, "no_overlap", params);
  const sim::SchemeResult& fo = runner.result(kStepFile, {}, "flashoverlap", params);
  StepRun s;
  s.base_us = static_cast<double>(base.latency_ps) / 1e6;
  s.fo_us = static_cast<double>(fo.latency_ps) / 1e6;
  s.speedup = fo.latency_ps > 0 ? static_cast<double>(base.latency_ps) / static_cast<double>(fo.latency_ps) : 0;
  s.base_exposed_us = static_cast<double>(base.step.exposed_tp_ps) / 1e6;
  s.fo_exposed_us = static_cast<double>(fo.step.exposed_tp_ps) / 1e6;
  return s;
}

// The step's forward GEMM + reduce-scatter operators alone (flashoverlap-a800-llama3-70b-training.yaml:
// o_proj, K = 1024, and down_proj, K = 3584, the same shapes the step's layers run), no_overlap and
// FlashOverlap, once per layer each.
struct Operators {
  double base_us = 0, fo_us = 0;
};

Operators forward_operators(ScenarioRunner& runner, int layers) {
  const char* file = "flashoverlap-a800-llama3-70b-training";
  Operators o;
  for (const auto& pt : runner.points(file)) {
    o.base_us += layers * static_cast<double>(runner.result(file, pt, "no_overlap").latency_ps) / 1e6;
    o.fo_us += layers * static_cast<double>(runner.result(file, pt, "flashoverlap", {{"groups", "auto"}}).latency_ps) / 1e6;
  }
  return o;
}

}  // namespace

std::vector<PaperRow> flashoverlap_step_rows(ScenarioRunner& runner) {
  const PaperData& data = runner.data("flashoverlap");
  // The paper's setting: Megatron-LM's asynchronous column-parallel backward in both runs and
  // FlashOverlap in place of the forward's linear + reduce-scatter (the file says why). The shipped
  // default: the simulator's column_backward (scheme), FlashOverlap on the backward's dgrad too.
  const nlohmann::json paper = {{"column_backward", "bulk"}};
  const StepRun runs[] = {run_step(runner, paper), run_step(runner, nlohmann::json::object())};
  const char* labels[] = {"column_backward bulk (Megatron-LM's asynchronous backward; FlashOverlap in the forward)",
                          "column_backward scheme (sequential backward; FlashOverlap on the dgrad reduce-scatter too)"};
  // Where a miss comes from: Amdahl's law over the forward's GEMM + RS operators. Their share f of our
  // no_overlap step against the paper's "roughly 30 %" of a Llama2-7B training step (Sec. 2.3.2, line
  // 117; it prints no share for Llama3-70B), and their speedup s alone.
  const auto& t = std::get<sim::Transformer>(runner.shipped(kStepFile).workload.shape);
  const Operators ops = forward_operators(runner, t.layers);
  std::string causes[2];
  for (int v = 0; v < 2; ++v) {
    const double f = ops.base_us / runs[v].base_us, s = ops.base_us / ops.fo_us;
    causes[v] = fmt::format(
        "not found: the forward's GEMM+RS operators (flashoverlap-a800-llama3-70b-training, x{} layers) are {:.1f} % "
        "of our no_overlap step (the paper: about 30 % of a Llama2-7B step, Sec. 2.3.2) and gain {:.3f}x alone; "
        "Amdahl over them gives {:.3f}x",
        t.layers, 100 * f, s, 1.0 / ((1.0 - f) + f / s));
  }
  std::vector<PaperRow> rows;
  for (int bound = 0; bound < 2; ++bound) {
    for (int v = 0; v < 2; ++v) {
      const StepRun& s = runs[v];
      RowSpec spec = data.row(bound == 0 ? "step_low" : "step_high");
      spec.config = fmt::format("{}.yaml (16384 tokens as 2 x 8192, TP 8 + SP, no recomputation, pass step) with {}: "
                                "no_overlap {:.1f} us, flashoverlap {:.1f} us; exposed TP communication {:.1f} -> {:.1f} us",
                                kStepFile, labels[v], s.base_us, s.fo_us, s.base_exposed_us, s.fo_exposed_us);
      spec.variant = v == 0 ? kPaperSetting : kShippedDefault;
      spec.cause = causes[v];  // not shown to lie outside our model: the row stays off
      rows.push_back(judge(spec, s.speedup));
    }
  }
  return rows;
}

}  // namespace overlap::tools::papers
