// validate --papers' FlashOverlap Mixtral-8x7B rows (tools/papers_flashoverlap_moe.cpp): the shipped
// MoE layer file holds Table 4's setting (EP 4, 32768 tokens, TP 2 as half-width experts), and each
// row's prediction is Amdahl's law over the file's own no_overlap / moe_flashoverlap layer speedup at
// the paper's 40 % GEMM+A2A share, judged as bounds against the printed 1.05-1.13x range.
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

namespace overlap::tools::papers {
std::vector<PaperRow> flashoverlap_moe_rows(ScenarioRunner& runner);  // registered in tools/papers.cpp
}

namespace {
constexpr const char* kFile = "flashoverlap-a800-mixtral-8x7b-moe";
}  // namespace

TEST_CASE("the Mixtral-8x7B MoE layer file: Table 4's setting", "[papers][flashoverlap][moe]") {
  ScenarioRunner runner(source_dir(), hardware_dir());
  const sim::Scenario& sc = runner.shipped(kFile);
  CHECK(sc.hardware_name == "a800-8x-nvlink");
  REQUIRE(sc.workload.kind == overlap::sim::WorkloadKind::moe);
  const auto& m = std::get<sim::Moe>(sc.workload.shape);
  CHECK(m.ep == 4);                          // Table 4: EP=4
  CHECK(m.tokens * m.ep == 32768);           // input_token=32768
  CHECK(m.experts == 8);                     // Mixtral-8x7B
  CHECK(m.top_k == 2);
  CHECK(m.d_model == 4096);
  CHECK(m.d_ffn_expert * 2 == 14336);        // TP=2 halves each GPU's expert FFN
  CHECK(m.routing.kind == MoeRoutingSpec::Kind::uniform);
}

TEST_CASE("the Mixtral-8x7B rows: Amdahl over the file's layer speedup, held to the printed range",
          "[papers][flashoverlap][moe]") {
  ScenarioRunner runner(source_dir(), hardware_dir());
  const std::vector<PaperRow> rows = flashoverlap_moe_rows(runner);
  REQUIRE(rows.size() == 2);
  const auto& base = runner.result(kFile, {}, "no_overlap");
  const auto& fo = runner.result(kFile, {}, "moe_flashoverlap");
  const double s = static_cast<double>(base.latency_ps) / static_cast<double>(fo.latency_ps);
  const double e2e = 1.0 / (0.6 + 0.4 / s);
  for (const PaperRow& r : rows) {
    INFO(r.figure);
    CHECK(r.predicted == Approx(e2e).epsilon(1e-12));
    overlap::test::check_range_row(r, 1.05, 1.13, kFile);
  }
}
