// CommFuse's published results ("CommFuse: Hiding Tail Latency via Communication Decomposition and
// Fusion for Distributed LLM Training", arXiv 2604.24013, Sec. 5, Tables 1-4; the line numbers below
// are of the paper's text as the project keeps it) against commfuse-table1-mlp.yaml and
// commfuse-table4-attention.yaml. The accelerator is not named, so the comparisons are ratios between
// schemes; the stand-in profile (scenarios/papers/hardware/commfuse-testbed-fit.yaml) takes its compute
// rate and link bandwidth from Table 1's baseline row, and everything else is predicted.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tools/papers.hpp"

namespace overlap::tools::papers {

namespace {

constexpr const char* kCommFuseSource = "commfuse-paper";
constexpr const char* kMlp = "commfuse-table1-mlp";
constexpr const char* kAttention = "commfuse-table4-attention";

// The slicing entries of both files: the paper's setting (MindSpeed CoC's 8 slices, layer order) and
// the scheme's default order beside it.
const nlohmann::json kSlicing = {{"chunks", 8}, {"order", "layer"}};
const nlohmann::json kSlicingDefault = {{"chunks", 8}};
const nlohmann::json kFuseRs = {{"m", 1}, {"schedule", "ring"}};

// Tables 2-3's columns: b x s = 131072 tokens in every one (line 295).
struct MlpColumn {
  const char* label;
  int batch, seq;
  double slicing_ms, ours_ms;              // Table 2, lines 300-301
  double reduction_slicing, reduction_ours;  // Table 3, lines 309-310 (%)
  double improvement_slicing, improvement_ours;  // Table 3, lines 311-312 (%)
};
const MlpColumn kColumns[] = {
    {"1K", 128, 1024, 83.8, 77.1, 77.9, 99.7, 29.9, 35.8},
    {"2K", 64, 2048, 83.7, 77.2, 78.9, 99.7, 35.0, 40.2},
    {"4K", 32, 4096, 83.9, 77.1, 83.9, 99.8, 31.4, 36.9},
    {"8K", 16, 8192, 83.7, 77.2, 82.7, 99.8, 29.5, 35.0},
    {"16K", 8, 16384, 83.9, 77.2, 85.2, 99.8, 33.5, 38.8},
};

// Table 4 (lines 319-325): forward latency of an attention layer (ms).
struct AttentionRow {
  int batch, seq;
  double baseline, slicing, row_parallel, query_split;
};
const AttentionRow kAttentionRows[] = {
    {64, 1024, 196.2, 179.6, 170.7, 164.2},
    {32, 2048, 222.8, 202.2, 200.7, 181.2},
    {16, 4096, 270.1, 246.1, 230.9, 215.8},
    {4, 8192, 195.6, 279.7, 174.6, 145.1},
};

// Why Tables 2-3's columns spread although their work is the same.
constexpr const char* kColumnSpread =
    "b x s = 131072 in every column, so the layer's work is the same; the baselines Tables 2-3 imply spread "
    "120.1-129.1 ms (run-to-run spread the paper does not average out), ours is one value";
// Why the attention experiment cannot be matched by a fused-attention model.
constexpr const char* kAttentionCause =
    "the paper's attention grows 0.37 ms per million B*S^2 (about 12 TFLOP/s on the score FLOPs: an unfused "
    "attention) and query split saves 50 ms at 4x8192, more than the whole reduce-scatter (11 ms at Table 1's "
    "bandwidth): the gains are in the attention kernel, not in hidden communication";

std::vector<std::string> mlp_sets(int batch, int seq) {
  return {fmt::format("workload.batch={}", batch), fmt::format("workload.seq={}", seq)};
}

RowSpec commfuse_row(std::string location, std::string figure, std::string config, double published, std::string text) {
  return row_spec(kCommFuseSource, std::move(location), std::move(figure), std::move(config), published, std::move(text));
}

constexpr const char* kMlpConfig = "commfuse-table1-mlp: MLP d 4096, ffn 16384, TP 4, FuseRS; slicing 8 (b, s) = ";

// Table 1 (lines 281-285): (b, s, d) = (32, 4096, 4096).
void add_table1(ScenarioRunner& runner, std::vector<PaperRow>& rows) {
  const auto sets = mlp_sets(32, 4096);
  const auto& base = runner.result(kMlp, sets, "no_overlap");
  const auto& slicing = runner.result(kMlp, sets, "data_slicing", kSlicing);
  const auto& ours = runner.result(kMlp, sets, "commfuse", kFuseRs);
  const std::string cfg = std::string(kMlpConfig) + "(32, 4096)";
  auto ratio = [](const sim::SchemeResult& a, const sim::SchemeResult& b) {
    return static_cast<double>(a.latency_ps) / static_cast<double>(b.latency_ps);
  };
  auto compute_ratio = [](const sim::SchemeResult& a, const sim::SchemeResult& b) {
    return static_cast<double>(a.compute_only_ps) / static_cast<double>(b.compute_only_ps);
  };
  RowSpec sl = commfuse_row("Table 1", "data slicing latency / vanilla latency", cfg + ", order layer",
                    83.9 / 122.3, "83.9 / 122.3 ms");
  sl.variant = kPaperSetting;
  rows.push_back(judge(sl, ratio(slicing, base)));
  sl.config = cfg + ", order linear (the scheme's default)";
  sl.variant = kShippedDefault;
  rows.push_back(judge(sl, ratio(runner.result(kMlp, sets, "data_slicing", kSlicingDefault), base)));
  rows.push_back(judge(commfuse_row("Table 1", "CommFuse latency / vanilla latency", cfg, 77.1 / 122.3,
                            "77.1 / 122.3 ms"),
                       ratio(ours, base)));
  RowSpec c1 = commfuse_row("Table 1", "data slicing compute / vanilla compute", cfg, 76.9 / 78.5,
                    "76.9 / 78.5 ms");
  RowSpec c2 = commfuse_row("Table 1", "CommFuse compute / vanilla compute", cfg, 77.0 / 78.5,
                    "77.0 / 78.5 ms");
  // Our compute grows under decomposition; the paper's falls by 2 %, which no decomposition of the
  // same GEMMs does (it is within the spread of its baselines, kColumnSpread).
  c1.cause = c2.cause =
      "slices quantize into more waves (a 32768-row slice: 31.03 waves -> 32) and FuseRS adds the arriving "
      "accumulators (Alg. 2 line 16); the paper's compute falls 2 %, within its run-to-run spread";
  c1.cause_is_ours = c2.cause_is_ours = true;  // the tile plan is our heuristic for an unnamed accelerator
  rows.push_back(judge(c1, compute_ratio(slicing, base)));
  rows.push_back(judge(c2, compute_ratio(ours, base)));
}

// Table 2 (lines 297-302) and Table 3 (lines 306-312), column by column.
void add_tables23(ScenarioRunner& runner, std::vector<PaperRow>& rows) {
  for (const MlpColumn& col : kColumns) {
    const auto sets = mlp_sets(col.batch, col.seq);
    const auto& base = runner.result(kMlp, sets, "no_overlap");
    const auto& slicing = runner.result(kMlp, sets, "data_slicing", kSlicing);
    const auto& ours = runner.result(kMlp, sets, "commfuse", kFuseRs);
    const std::string cfg = fmt::format("{}({}, {})", kMlpConfig, col.batch, col.seq);
    RowSpec t2 = commfuse_row(fmt::format("Table 2 {}", col.label), "CommFuse latency / slicing latency", cfg,
                      col.ours_ms / col.slicing_ms, fmt::format("{} / {} ms", col.ours_ms, col.slicing_ms));
    t2.cause = kColumnSpread;
    rows.push_back(judge(t2, static_cast<double>(ours.latency_ps) / static_cast<double>(slicing.latency_ps)));

    auto reduction = [&](const sim::SchemeResult& r) {
      return 100.0 * (1.0 - static_cast<double>(r.exposed_comm_ps) / static_cast<double>(base.exposed_comm_ps));
    };
    auto improvement = [&](const sim::SchemeResult& r) {
      return 100.0 * (1.0 - static_cast<double>(r.latency_ps) / static_cast<double>(base.latency_ps));
    };
    struct Cell {
      const char* figure;
      double published;
      double predicted;
    };
    const Cell cells[] = {
        {"slicing comm-overhead reduction vs vanilla", col.reduction_slicing, reduction(slicing)},
        {"CommFuse comm-overhead reduction vs vanilla", col.reduction_ours, reduction(ours)},
        {"slicing latency improvement vs vanilla", col.improvement_slicing, improvement(slicing)},
        {"CommFuse latency improvement vs vanilla", col.improvement_ours, improvement(ours)},
    };
    for (const Cell& c : cells) {
      RowSpec s = commfuse_row(fmt::format("Table 3 {}", col.label), c.figure, cfg, c.published,
                       fmt::format("{} %", c.published));
      s.unit = "%";
      s.cause = kColumnSpread;
      rows.push_back(judge(s, c.predicted));
    }
  }
}

// Table 4 (lines 319-325): attention, (B x S) as printed.
void add_table4(ScenarioRunner& runner, std::vector<PaperRow>& rows) {
  for (const AttentionRow& a : kAttentionRows) {
    const auto sets = mlp_sets(a.batch, a.seq);
    const auto& base = runner.result(kAttention, sets, "no_overlap");
    const auto& slicing = runner.result(kAttention, sets, "data_slicing", kSlicing);
    const auto& row_par = runner.result(kAttention, sets, "commfuse", {{"attention", "row_parallel"}});
    const auto& query = runner.result(kAttention, sets, "commfuse", {{"attention", "query_split"}});
    const std::string cfg =
        fmt::format("commfuse-table4-attention: d 4096, 32 heads, TP 4, (B, S) = ({}, {})", a.batch, a.seq);
    const std::string where = fmt::format("Table 4 {}x{}", a.batch, a.seq);
    RowSpec abs = commfuse_row(where, "baseline latency (testbed fitted on Table 1)", cfg, a.baseline,
                       fmt::format("{} ms", a.baseline));
    abs.unit = "ms";
    abs.ratio = false;
    abs.tolerance_pct = 10;
    abs.cause = kAttentionCause;
    rows.push_back(judge(abs, static_cast<double>(base.latency_ps) / 1e9));
    const struct {
      const char* figure;
      double published;
      const sim::SchemeResult* r;
    } cells[] = {{"slicing latency / baseline latency", a.slicing, &slicing},
                 {"row-parallel FuseRS latency / baseline latency", a.row_parallel, &row_par},
                 {"query-split FuseRS latency / baseline latency", a.query_split, &query}};
    for (const auto& c : cells) {
      RowSpec s = commfuse_row(where, c.figure, cfg, c.published / a.baseline, fmt::format("{} / {} ms", c.published, a.baseline));
      if (c.r == &slicing) s.variant = kPaperSetting;
      s.cause = kAttentionCause;
      if (c.published > a.baseline) {
        // 4x8192: slicing 43 % slower than no overlap. Nothing in the paper says why.
        s.cause =
            "not found: the paper's slicing is slower than no overlap here (279.7 vs 195.6 ms); in our model slicing "
            "can only add per-slice launches and wave quantization, a few %";
        s.cause_is_ours = true;
      }
      rows.push_back(judge(s, static_cast<double>(c.r->latency_ps) / static_cast<double>(base.latency_ps)));
      if (c.r == &slicing) {
        s.variant = kShippedDefault;
        const auto& linear = runner.result(kAttention, sets, "data_slicing", kSlicingDefault);
        rows.push_back(judge(s, static_cast<double>(linear.latency_ps) / static_cast<double>(base.latency_ps)));
      }
    }
  }
}

}  // namespace

std::vector<PaperRow> commfuse_rows(ScenarioRunner& runner) {
  std::vector<PaperRow> rows;
  add_table1(runner, rows);
  add_tables23(runner, rows);
  add_table4(runner, rows);
  return rows;
}

}  // namespace overlap::tools::papers
