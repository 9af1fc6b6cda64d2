// validate --papers' FlashOverlap training-step rows (tools/papers_flashoverlap_step.cpp): the shipped
// Llama-3-70B training step (flashoverlap-paper Table 4 line 335, Sec. 6.1.2, 6.3) holds the paper's
// setting, and each row's prediction is the step speedup of the file's own scheme entries, judged
// against the printed 1.05-1.13x range as bounds (never counted in the median).
#include <string>
#include <variant>

#include <catch2/catch.hpp>

#include "sim/scenario.hpp"
#include "tests/support/paper_bounds.hpp"
#include "tools/input_paths.hpp"
#include "tools/papers.hpp"

using namespace overlap;
using namespace overlap::tools;
using namespace overlap::tools::papers;

namespace {

constexpr const char* kFile = "flashoverlap-a800-llama3-70b-training-step";

}  // namespace

TEST_CASE("the Llama-3-70B training step file: Table 4's setting as a step", "[papers][flashoverlap][step]") {
  ScenarioRunner runner(source_dir(), hardware_dir());
  const sim::Scenario& sc = runner.shipped(kFile);
  CHECK(sc.hardware_name == "a800-8x-nvlink");
  CHECK(sc.workload.kind == overlap::sim::WorkloadKind::transformer);
  CHECK(sc.workload.tp == 8);
  CHECK(sc.workload.training.pass == sim::Pass::step);
  CHECK(sc.workload.training.recompute == sim::Recompute::none);
  CHECK(sc.workload.training.parallel.dp == 1);
  const auto& t = std::get<sim::Transformer>(sc.workload.shape);
  CHECK(t.layers == 8);                 // Sec. 6.1.2, line 344
  CHECK(t.batch * t.seq == 16384);      // Table 4: input_token=16384
  CHECK(t.d_model == 8192);             // Llama-3-70B
  CHECK(t.d_ffn == 28672);
}

TEST_CASE("the training-step rows: the file's step speedups against the printed range", "[papers][flashoverlap][step][slow]") {
  ScenarioRunner runner(source_dir(), hardware_dir());
  const std::vector<PaperRow> rows = flashoverlap_step_rows(runner);
  REQUIRE(rows.size() == 4);
  auto speedup = [&](const nlohmann::json& params) {
    const auto& base = runner.result(kFile, {}, "no_overlap", params);
    const auto& fo = runner.result(kFile, {}, "flashoverlap", params);
    // The same step: the same TP traffic, the same model FLOPs.
    CHECK(base.step.model_flops == fo.step.model_flops);
    return static_cast<double>(base.latency_ps) / static_cast<double>(fo.latency_ps);
  };
  const double paper = speedup({{"column_backward", "bulk"}});
  const double shipped = speedup(nlohmann::json::object());
  for (const PaperRow& r : rows) {
    INFO(r.figure << " [" << r.variant << "]");
    CHECK(r.predicted == (r.variant == kPaperSetting ? paper : shipped));
    overlap::test::check_range_row(r, 1.05, 1.13, kFile);
  }
  // FlashOverlap hides part of the step's TP communication in both settings.
  CHECK(paper > 1.0);
  CHECK(shipped > 1.0);
}
