// CommFuse's published results ("CommFuse: Hiding Tail Latency via Communication Decomposition and
// Fusion for Distributed LLM Training", arXiv 2604.24013, Sec. 5, Tables 1-4; the line numbers below
// are of the paper's text as the project keeps it) against commfuse-table1-mlp.yaml and
// commfuse-table4-attention.yaml. The accelerator is not named, so the comparisons are ratios between
// schemes; the stand-in profile (scenarios/papers/hardware/commfuse-testbed-fit.yaml) takes its compute
// rate and link bandwidth from Table 1's baseline row, and everything else is predicted. The tables'
// figures are data (validation/papers/commfuse.yaml).
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tools/paper_data.hpp"
#include "tools/papers.hpp"

namespace overlap::tools::papers {

namespace {

constexpr const char* kMlp = "commfuse-table1-mlp";
constexpr const char* kAttention = "commfuse-table4-attention";

// The slicing entries of both files: the paper's setting (MindSpeed CoC's 8 slices, layer order) and
// the scheme's default order beside it.
const nlohmann::json kSlicing = {{"chunks", 8}, {"order", "layer"}};
const nlohmann::json kSlicingDefault = {{"chunks", 8}};
const nlohmann::json kFuseRs = {{"m", 1}, {"schedule", "ring"}};

// Tables 2-3's columns (validation/papers/commfuse.yaml `columns`).
struct MlpColumn {
  std::string label;
  int batch = 0, seq = 0;
  double slicing_ms = 0, ours_ms = 0;                  // Table 2
  double reduction_slicing = 0, reduction_ours = 0;    // Table 3 (%)
  double improvement_slicing = 0, improvement_ours = 0;  // Table 3 (%)
};

std::vector<MlpColumn> mlp_columns(const PaperData& data) {
  std::vector<MlpColumn> out;
  for (const YamlReader& r : data.table("columns", {"label", "batch", "seq", "slicing_ms", "ours_ms", "reduction_slicing",
                                                    "reduction_ours", "improvement_slicing", "improvement_ours"}))
    out.push_back({r.get_string("label"), static_cast<int>(r.get_positive_int("batch")),
                   static_cast<int>(r.get_positive_int("seq")), r.get_positive_double("slicing_ms"),
                   r.get_positive_double("ours_ms"), r.get_double("reduction_slicing"), r.get_double("reduction_ours"),
                   r.get_double("improvement_slicing"), r.get_double("improvement_ours")});
  return out;
}

// Table 4's rows: forward latency of an attention layer (ms).
struct AttentionRow {
  int batch = 0, seq = 0;
  double baseline = 0, slicing = 0, row_parallel = 0, query_split = 0;
};

std::vector<AttentionRow> attention_rows(const PaperData& data) {
  std::vector<AttentionRow> out;
  for (const YamlReader& r :
       data.table("attention", {"batch", "seq", "baseline", "slicing", "row_parallel", "query_split"}))
    out.push_back({static_cast<int>(r.get_positive_int("batch")), static_cast<int>(r.get_positive_int("seq")),
                   r.get_positive_double("baseline"), r.get_positive_double("slicing"),
                   r.get_positive_double("row_parallel"), r.get_positive_double("query_split")});
  return out;
}

std::vector<std::string> mlp_sets(int batch, int seq) {
  return {fmt::format("workload.batch={}", batch), fmt::format("workload.seq={}", seq)};
}

// The row `id` of validation/papers/commfuse.yaml, predicted with `config`.
RowSpec commfuse_row(const PaperData& data, const std::string& id, std::string config) {
  RowSpec s = data.row(id);
  s.config = std::move(config);
  return s;
}

constexpr const char* kMlpConfig = "commfuse-table1-mlp: MLP d 4096, ffn 16384, TP 4, FuseRS; slicing 8 (b, s) = ";

// Table 1 (lines 281-285): (b, s, d) = (32, 4096, 4096).
void add_table1(ScenarioRunner& runner, const PaperData& data, std::vector<PaperRow>& rows) {
  const int batch = static_cast<int>(data.number("table1_batch")), seq = static_cast<int>(data.number("table1_seq"));
  const auto sets = mlp_sets(batch, seq);
  const auto& base = runner.result(kMlp, sets, "no_overlap");
  const auto& slicing = runner.result(kMlp, sets, "data_slicing", kSlicing);
  const auto& ours = runner.result(kMlp, sets, "commfuse", kFuseRs);
  const std::string cfg = fmt::format("{}({}, {})", kMlpConfig, batch, seq);
  auto ratio = [](const sim::SchemeResult& a, const sim::SchemeResult& b) {
    return static_cast<double>(a.latency_ps) / static_cast<double>(b.latency_ps);
  };
  auto compute_ratio = [](const sim::SchemeResult& a, const sim::SchemeResult& b) {
    return static_cast<double>(a.compute_only_ps) / static_cast<double>(b.compute_only_ps);
  };
  RowSpec sl = commfuse_row(data, "table1_slicing", cfg + ", order layer");
  sl.variant = kPaperSetting;
  rows.push_back(judge(sl, ratio(slicing, base)));
  sl.config = cfg + ", order linear (the scheme's default)";
  sl.variant = kShippedDefault;
  rows.push_back(judge(sl, ratio(runner.result(kMlp, sets, "data_slicing", kSlicingDefault), base)));
  rows.push_back(judge(commfuse_row(data, "table1_commfuse", cfg), ratio(ours, base)));
  const RowSpec c1 = commfuse_row(data, "table1_slicing_compute", cfg);
  const RowSpec c2 = commfuse_row(data, "table1_commfuse_compute", cfg);
  rows.push_back(judge(c1, compute_ratio(slicing, base)));
  rows.push_back(judge(c2, compute_ratio(ours, base)));
}

// Table 2 (lines 297-302) and Table 3 (lines 306-312), column by column.
void add_tables23(ScenarioRunner& runner, const PaperData& data, std::vector<PaperRow>& rows) {
  for (const MlpColumn& col : mlp_columns(data)) {
    const auto sets = mlp_sets(col.batch, col.seq);
    const auto& base = runner.result(kMlp, sets, "no_overlap");
    const auto& slicing = runner.result(kMlp, sets, "data_slicing", kSlicing);
    const auto& ours = runner.result(kMlp, sets, "commfuse", kFuseRs);
    const std::string cfg = fmt::format("{}({}, {})", kMlpConfig, col.batch, col.seq);
    RowSpec t2 = commfuse_row(data, "table2", cfg);
    t2.location = fmt::format("{} {}", t2.location, col.label);
    t2.published = col.ours_ms / col.slicing_ms;
    t2.published_text = fmt::format("{} / {} ms", col.ours_ms, col.slicing_ms);
    rows.push_back(judge(t2, static_cast<double>(ours.latency_ps) / static_cast<double>(slicing.latency_ps)));

    auto reduction = [&](const sim::SchemeResult& r) {
      return 100.0 * (1.0 - static_cast<double>(r.exposed_comm_ps) / static_cast<double>(base.exposed_comm_ps));
    };
    auto improvement = [&](const sim::SchemeResult& r) {
      return 100.0 * (1.0 - static_cast<double>(r.latency_ps) / static_cast<double>(base.latency_ps));
    };
    struct Cell {
      const char* row;
      double published;
      double predicted;
    };
    const Cell cells[] = {
        {"table3_reduction_slicing", col.reduction_slicing, reduction(slicing)},
        {"table3_reduction_commfuse", col.reduction_ours, reduction(ours)},
        {"table3_improvement_slicing", col.improvement_slicing, improvement(slicing)},
        {"table3_improvement_commfuse", col.improvement_ours, improvement(ours)},
    };
    for (const Cell& c : cells) {
      RowSpec s = commfuse_row(data, c.row, cfg);
      s.location = fmt::format("{} {}", s.location, col.label);
      s.published = c.published;
      s.published_text = fmt::format("{} %", c.published);
      rows.push_back(judge(s, c.predicted));
    }
  }
}

// Table 4 (lines 319-325): attention, (B x S) as printed.
void add_table4(ScenarioRunner& runner, const PaperData& data, std::vector<PaperRow>& rows) {
  for (const AttentionRow& a : attention_rows(data)) {
    const auto sets = mlp_sets(a.batch, a.seq);
    const auto& base = runner.result(kAttention, sets, "no_overlap");
    const auto& slicing = runner.result(kAttention, sets, "data_slicing", kSlicing);
    const auto& row_par = runner.result(kAttention, sets, "commfuse", {{"attention", "row_parallel"}});
    const auto& query = runner.result(kAttention, sets, "commfuse", {{"attention", "query_split"}});
    const std::string cfg =
        fmt::format("commfuse-table4-attention: d 4096, 32 heads, TP 4, (B, S) = ({}, {})", a.batch, a.seq);
    RowSpec abs = commfuse_row(data, "table4_baseline", cfg);
    abs.location = fmt::format("{} {}x{}", abs.location, a.batch, a.seq);
    abs.published = a.baseline;
    abs.published_text = fmt::format("{} ms", a.baseline);
    rows.push_back(judge(abs, static_cast<double>(base.latency_ps) / 1e9));
    const struct {
      const char* row;
      double published;
      const sim::SchemeResult* r;
    } cells[] = {{"table4_slicing", a.slicing, &slicing},
                 {"table4_row_parallel", a.row_parallel, &row_par},
                 {"table4_query_split", a.query_split, &query}};
    for (const auto& c : cells) {
      RowSpec s = commfuse_row(data, c.row, cfg);
      s.location = fmt::format("{} {}x{}", s.location, a.batch, a.seq);
      s.published = c.published / a.baseline;
      s.published_text = fmt::format("{} / {} ms", c.published, a.baseline);
      if (c.r == &slicing) s.variant = kPaperSetting;
      if (c.published > a.baseline) {
        // 4x8192: slicing 43 % slower than no overlap. Nothing in the paper says why.
        s.cause = fmt::format(
            "not found: the paper's slicing is slower than no overlap here ({} vs {} ms); in our model slicing "
            "can only add per-slice launches and wave quantization, a few %",
            c.published, a.baseline);
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
  const PaperData& data = runner.data("commfuse");
  std::vector<PaperRow> rows;
  add_table1(runner, data, rows);
  add_tables23(runner, data, rows);
  add_table4(runner, data, rows);
  return rows;
}

}  // namespace overlap::tools::papers
