#pragma once
// The report of a `run`: the metrics of every scheme (sim/metrics.hpp) as a table for people, or as
// JSON / CSV for programs (design.md "Questions it answers", "Metrics"). Output is deterministic:
// fixed-precision numbers, schemes in the order they were evaluated, keys in a fixed order.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/metrics.hpp"
#include "sim/pipeline_report.hpp"
#include "sim/scenario.hpp"
#include "sim/job_figures.hpp"
#include "sim/step_memory.hpp"
#include "sim/workload.hpp"

namespace overlap::sim {

enum class ReportFormat { table, json, csv };

// What the header line names: the scenario, the hardware, the workload and the baseline that
// speedups are measured against.
struct ReportContext {
  std::string scenario;
  std::string hardware;
  Workload workload;
  Fidelity fidelity = Fidelity::curve;
  std::string baseline;  // baseline_scheme_for(workload)
  // The --set assignments (and the shortcuts --hardware, --tp, --tokens as the --set they stand for)
  // the scenario was loaded with, as the user typed them: the header names the scenario with them,
  // so a report never reads as the file's own configuration when it is not.
  std::vector<std::string> overrides;
  // Registered schemes that do not apply to this workload, with where they do (the table's last
  // lines and JSON's "not_applicable"): a scheme absent from a report is never silently absent.
  struct Skipped {
    std::string scheme;
    std::string applies_to;
  };
  std::vector<Skipped> not_applicable;
  // One line when the profile's figures include placeholder defaults (neither published nor
  // calibrated); "" otherwise.
  std::string hardware_note;
  // Placeholders whose plausible range changes the ranking (sim/placeholder_sensitivity.hpp): the
  // table's lines after best: ("" when none decides) and JSON's "placeholder_sensitivity" (null when
  // the profile has no placeholders: the key is then left out).
  std::string placeholder_lines;
  nlohmann::json placeholder_sensitivity;
  // A transformer training step's memory per GPU against the profile's HBM (sim/step_memory.hpp);
  // nullopt where the memory model does not apply.
  std::optional<StepMemory> memory;
  // A dense transformer step's memory-bound kernels and optimizer priced alone (sim/job_figures.hpp);
  // nullopt where the step runs none.
  std::optional<StepKernelTime> step_kernels;
  // A pipeline or context-parallel job (Training::job): its figures after the step's tables and in
  // JSON's "job" (sim/pipeline_report.hpp); nullopt otherwise. The results are then one stage's step.
  std::optional<PipelineReport> job;
};
ReportContext report_context(const Scenario& scenario);
// "llama3-70b-tp8-mlp" or, with overrides, "llama3-70b-tp8-mlp (workload.tp=4 hardware=h200)": how
// every output (table header, CSV scenario column, JSON scenario field) names the scenario.
std::string scenario_label(const std::string& name, const std::vector<std::string>& overrides);
// Where a scheme applies, found by asking its `applies` of one workload of each kind (and, for
// gemm_collective, each primitive): "gemm_collective with all_reduce/reduce_scatter/all_to_all, tp >= 2".
std::string scheme_applies_to(const SchemeInfo& scheme);
// The registered schemes that do not apply to `workload`, with scheme_applies_to.
std::vector<ReportContext::Skipped> schemes_not_applying(const Workload& workload);
// The result with the highest speedup (ties: the lower latency, then the earlier row); nullptr
// when no row has a speedup.
const SchemeResult* best_result(const std::vector<SchemeResult>& results);
// The rows tied for the best: best_result first, then every other row whose latency equals it in
// integer picoseconds, in row order. A tie is equal latency_ps: a speedup is the baseline's latency
// over the row's, so equal latencies give equal speedups and no rounding can split or join a tie.
// Empty when best_result is null.
std::vector<const SchemeResult*> best_results(const std::vector<SchemeResult>& results);
// A row as the best: line names it: the scheme with the parameters it sets that differ from its
// defaults ("data_slicing (chunks=2)").
std::string result_label(const SchemeResult& r);
// The tied rows named as the table's best: line names them: each scheme with the parameters it sets
// that differ from its defaults ("data_slicing (chunks=2)"), in best_results order.
std::vector<std::string> best_names(const std::vector<SchemeResult>& results);
// best_names joined by " = ": "async_tp = te_userbuffers". "" when there is no best.
std::string best_label(const std::vector<SchemeResult>& results);
// The table's closing lines: the best scheme and its speedup, and which schemes did not apply and
// where they do.
std::string format_summary(const ReportContext& ctx, const std::vector<SchemeResult>& results);

// The profile's name (its `name:`), never the path a scenario reached it by.
std::string hardware_display_name(const Scenario& scenario);

// The one definition of exposed communication every output states (design.md "Metrics").
extern const char* const kExposedCommDefinition;

// "mlp_tpsp tp=8 tokens=8192 d_model=8192 d_ffn=28672 gated=true dtype=bf16"
std::string describe_workload(const Workload& w);
// The workload's kind, tp and shape fields as a JSON object.
nlohmann::json workload_json(const Workload& w);

// {"scenario" (scenario_label), "overrides", "hardware", "workload", "fidelity", "baseline",
//  "exposed_comm_definition", "results": [to_json(SchemeResult)...], "best": {scheme, params,
//  speedup_vs_baseline, tied: [{scheme, params}...] (best_results: the best first), label (best_label)}
//  or null, "not_applicable": [{scheme, applies_to}...], "memory_per_gpu" (step_memory_json) where
//  ctx.memory is given, "placeholder_sensitivity" where the profile has placeholders}
nlohmann::json report_json(const ReportContext& ctx, const std::vector<SchemeResult>& results);

// The per-collective figures of every result (SchemeResult::collectives) as a table: one line per
// scheme and (primitive, S, ranks, algorithm/protocol), with the number of calls and their mean time,
// algbw and busbw. Empty when no result has a collective. format_table appends it.
std::string format_collectives(const std::vector<SchemeResult>& results, bool wide = false);

// A training step's figures (SchemeResult::step) as a table, one line per scheme: the forward's and
// the backward's latency (they add up to the step's) and exposed communication, exposed time per
// communicator (TP, DP), MFU and tokens/s; `wide` adds each pass's compute-only latency, communication
// alone and overlap efficiency, and the model FLOPs. Empty unless the workload is a training step (is_training_step), so a forward pass's table is
// as it always was. format_table inserts it after the main table.
std::string format_step_table(const ReportContext& ctx, const std::vector<SchemeResult>& results, bool wide = false);

// The table fits 120 columns: a scheme is named with the parameters it sets that differ from its
// defaults, the columns are latency, comm, exposed comm, overlap efficiency, speedup and % of bound,
// and each scheme's one-line reason follows the table, wrapped. `wide`: every column (compute-only,
// bound, SMs lost to comm, the reason) and every parameter, one row per scheme however long.
std::string format_table(const ReportContext& ctx, const std::vector<SchemeResult>& results, bool wide = false);
// Lines of at most `width` characters, broken at spaces (a longer word stays whole); each
// continuation line starts with `indent`.
std::string wrap_text(const std::string& text, std::size_t width, const std::string& indent = "");
// Text tables (these and validate --papers): each column as wide as its widest cell, header included;
// a line joins its cells by two spaces, each padded to its column's width on the side `align` gives
// for it ('<' left, '>' right, '-' not padded), trailing spaces trimmed, newline added.
std::vector<std::size_t> column_widths(const std::vector<std::string>& headers,
                                       const std::vector<std::vector<std::string>>& rows);
std::string table_line(const std::vector<std::string>& cells, const std::vector<std::size_t>& width,
                       const std::string& align);
// The widest line of the narrow table.
inline constexpr std::size_t kTableWidth = 120;
std::string format_json(const ReportContext& ctx, const std::vector<SchemeResult>& results);
std::string format_csv(const ReportContext& ctx, const std::vector<SchemeResult>& results);
std::string format_report(ReportFormat format, const ReportContext& ctx, const std::vector<SchemeResult>& results,
                          bool wide = false);

// The CSV columns, in order (the header row of format_csv for a forward workload).
const std::vector<std::string>& csv_columns();
// A training step's columns (SchemeResult::step), appended after csv_columns() when the workload is a
// training step (a forward run's CSV is unchanged): pass; forward_us, forward_compute_only_us,
// forward_exposed_comm_us, forward_comm_us, forward_overlap_efficiency and the same five for the
// backward; exposed_tp_us, exposed_dp_us, model_tflop (per GPU per step), mfu (0..1), tokens_per_s.
const std::vector<std::string>& csv_step_columns();
// csv_columns(), then csv_step_columns() when `step_columns`.
std::vector<std::string> csv_columns(bool step_columns);
// One result as the fields of a CSV row (csv_columns() order, not yet quoted), and a row's fields
// joined into one CSV line (quoted where needed, no newline). The step columns follow when the
// workload is a training step, or when `step_columns` (a sweep whose points include steps: a forward
// point's or a failed row's step fields are empty).
std::vector<std::string> csv_row(const ReportContext& ctx, const SchemeResult& r);
std::vector<std::string> csv_row(const ReportContext& ctx, const SchemeResult& r, bool step_columns);
std::string csv_line(const std::vector<std::string>& fields);
// One result as a row of report_json's "results" (exact microseconds from the picoseconds).
nlohmann::json report_row_json(const SchemeResult& r);

}  // namespace overlap::sim
