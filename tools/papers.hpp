#pragma once
// `overlap-sim validate --papers`: every published figure of the sources that the simulator can
// predict, side by side with its prediction. One row per figure: where it is printed
// (the source, by its id in source_titles(), and its table, section or footnote), the configuration it was measured
// on, the published value exactly as printed, our prediction, the relative error, a tolerance and a
// verdict. Published numbers are never adjusted; where a row compares a ratio of two printed numbers,
// both are named in `published_text`.
//
// The published figures are data, one file per source (validation/papers/<source>.yaml, read by
// paper_data.hpp); the computation of each source's rows lives in its own file (papers_commfuse.cpp,
// papers_flashoverlap.cpp, papers_async_tp.cpp, papers_dtp.cpp, ...); this header holds what they
// share: the row, the verdict rule, and a runner that evaluates the paper scenarios
// (scenarios/papers/) once each and reads each source's figures once.
//
// Every prediction is made on a shipped scenario file exactly as a user runs it: the file as written
// (`overlap-sim run FILE`) or one point of its own sweep (`overlap-sim sweep FILE`), with a scheme entry
// of its own `schemes:` list. The runner refuses anything else, so a setting a published figure needs
// lives in the file, with the comment that says why.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost_model/prediction_error.hpp"
#include "sim/metrics.hpp"
#include "sim/scenario.hpp"

namespace overlap::tools::papers {

enum class Verdict { ok, explained, off };
const char* verdict_name(Verdict v);

// How a prediction is held against the published figure (value, at_least "> 99 %", at_most
// "only 4 %"): the one judge's rule, cost_model/prediction_error.hpp.
using overlap::Compare;
const char* compare_name(Compare c);
std::optional<Compare> compare_from_name(const std::string& name);  // "value", "at_least", "at_most"

struct RowSpec {
  std::string source;    // "commfuse-paper", "flashoverlap-paper", "async-tp-illustrated", "delayed-tp-blog"
  std::string location;  // "Table 1, line 284"
  std::string figure;    // what the number is
  std::string config;    // the scenario and settings the prediction was made with
  std::string unit;      // "x", "%", "ms", "us", "waves", "" (a plain ratio)
  // A dimensionless figure (speedup, latency ratio, share, reduction): counted in the median error.
  bool ratio = true;
  Compare compare = Compare::value;
  double published = 0;
  std::string published_text;  // as printed in the source (and the arithmetic, for a ratio of two)
  double tolerance_pct = 5;
  // When published is 0 (a figure of "no exposed time"), the prediction must be within this of 0.
  double zero_tolerance = 0;
  // The cause of a miss, one line, when one was found. `cause_is_ours`: it lies in our model, so the
  // row stays `off` (README lists it); otherwise the row is `explained`. Empty: a miss is `off` with
  // its cause not found.
  std::string cause;
  bool cause_is_ours = false;
  // "" for a row whose figure is predicted once. Where the scenario file carries a setting the
  // paper's figure needs and the simulator's default differs, the figure has two rows:
  // "paper setting" (counted) and "shipped default" (the same figure with the default, shown for
  // comparison and left out of the counts and the medians).
  std::string variant;
};

inline constexpr const char* kPaperSetting = "paper setting";
inline constexpr const char* kShippedDefault = "shipped default";

struct PaperRow : RowSpec {
  double predicted = 0;
  double error_pct = 0;  // (predicted - published) / published x 100; bounds: 0 when satisfied
  Verdict verdict = Verdict::ok;
};

// The verdict rule: within tolerance (or the bound satisfied) -> ok; else `explained` when a cause
// outside our model was found, else `off`.
PaperRow judge(const RowSpec& spec, double predicted);

// One evaluation a row asked for: a shipped file, a point of its sweep ({} = the file as written) and
// one of its scheme entries.
struct ScenarioRun {
  std::string file;                // path relative to scenarios/papers/, without ".yaml"
  std::vector<std::string> point;  // `key=value` assignments of one sweep point, as sweep_points() gives them
  std::string scheme;
  nlohmann::json params;
};

// Evaluates shipped paper scenarios (scenarios/papers/<name>.yaml), each distinct request once.
// A point that is not one of the file's sweep points, or a scheme entry the file does not list, is
// a bug in a row definition: std::logic_error.
class PaperData;

class ScenarioRunner {
 public:
  // source_dir: the tree holding scenarios/ and validation/papers/ (tools::source_dir());
  // hardware_dir: built-in profiles.
  ScenarioRunner(std::string source_dir, std::string hardware_dir);
  ~ScenarioRunner();

  // The published figures of a `--source` (validation/papers/<name>.yaml, paper_data.hpp), read once.
  const PaperData& data(const std::string& name);
  // InputError at the first figure of a file read so far that no row read.
  void check_data_read() const;

  // The file as shipped, with its sweep axes and scheme entries.
  const sim::Scenario& shipped(const std::string& name);
  // The file's sweep points (sim::sweep_points), in its order; empty when it has no sweep.
  std::vector<std::vector<std::string>> points(const std::string& name);
  // The scenario at `point` (empty: the file as written).
  const sim::Scenario& scenario(const std::string& name, const std::vector<std::string>& point = {});
  // One scheme entry's result at `point`; `params` must equal the entry's `params:` as written.
  const sim::SchemeResult& result(const std::string& name, const std::vector<std::string>& point,
                                  const std::string& scheme, const nlohmann::json& params = nlohmann::json::object());
  // Scheme evaluations run so far (for tests and the summary line).
  int evaluations() const { return evaluations_; }
  // Every distinct evaluation asked for, in first-asked order.
  const std::vector<ScenarioRun>& runs() const { return runs_; }
  const std::string& source_dir() const { return source_dir_; }

 private:
  std::string path_of(const std::string& name) const;
  void check_point(const std::string& name, const std::vector<std::string>& point);

  std::string source_dir_, hardware_dir_;
  std::map<std::string, std::unique_ptr<sim::Scenario>> shipped_;
  std::map<std::string, std::unique_ptr<sim::Scenario>> scenarios_;
  std::map<std::string, std::unique_ptr<sim::SchemeResult>> results_;
  std::map<std::string, std::unique_ptr<PaperData>> data_;
  std::vector<ScenarioRun> runs_;
  int evaluations_ = 0;
};

// The rows of each source, in the order the source prints them.
std::vector<PaperRow> commfuse_rows(ScenarioRunner& runner);
std::vector<PaperRow> flashoverlap_rows(ScenarioRunner& runner);
// FlashOverlap's LLM-training speedup as a simulated training step (papers_flashoverlap_step.cpp).
std::vector<PaperRow> flashoverlap_step_rows(ScenarioRunner& runner);
std::vector<PaperRow> async_tp_rows(ScenarioRunner& runner);
std::vector<PaperRow> dtp_rows(ScenarioRunner& runner);

// The source names `--source` accepts, in report order.
const std::vector<std::string>& paper_sources();

struct PapersReport {
  std::vector<PaperRow> rows;
  // Over the counted rows (variant != shipped default) with ratio && compare == value; `explained`
  // rows are misses and count in the first median; the second leaves them out.
  double median_abs_error_pct = 0;
  int ratio_rows = 0;
  double median_abs_error_pct_without_explained = 0;
  int ratio_rows_without_explained = 0;
  double max_abs_error_pct = 0;  // the largest |error| among those ratio rows
  std::string max_row;           // its source, location and figure
  int ok = 0, explained = 0, off = 0;
  int shipped_default = 0;  // rows of the shipped default beside a paper setting (not counted)
};

// Every source's rows (or only `sources`, names from paper_sources()) with the summary.
PapersReport papers_report(ScenarioRunner& runner, const std::vector<std::string>& sources = {});
PapersReport summarize(std::vector<PaperRow> rows);

nlohmann::json to_json(const PaperRow& row);
// {"rows": [...], "median_abs_error_pct", "ratio_rows", "median_abs_error_pct_without_explained",
//  "ratio_rows_without_explained", "max_abs_error_pct", "max_row", "counts": {ok, explained, off,
//  shipped_default}, "definition", "sources": {id: public title}}
nlohmann::json to_json(const PapersReport& report);
std::string format_table(const PapersReport& report);

// The sources the rows cite, by the id in each row's `source` and their public title (the table's
// header lists them; JSON "sources").
struct PaperSource {
  std::string id;
  std::string title;
};
const std::vector<PaperSource>& source_titles();
// The sources `report`'s rows cite, in source_titles() order, and one line per source: "  ID: TITLE".
std::vector<PaperSource> sources_of(const PapersReport& report);
std::string sources_text(const PapersReport& report);

}  // namespace overlap::tools::papers
