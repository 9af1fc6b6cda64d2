#include "tools/papers.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cost_model/enum_names.hpp"
#include "cost_model/statistics.hpp"
#include "sim/report.hpp"
#include "tools/paper_data.hpp"

namespace overlap::tools::papers {

namespace fs = std::filesystem;

namespace {

constexpr std::array kVerdictNames{std::pair{Verdict::ok, "ok"}, std::pair{Verdict::explained, "explained"},
                                   std::pair{Verdict::off, "off"}};
static_assert(rows_in_enum_order(kVerdictNames));
constexpr std::array kCompareNames{std::pair{Compare::value, "value"}, std::pair{Compare::at_least, "at_least"},
                                   std::pair{Compare::at_most, "at_most"}};
static_assert(rows_in_enum_order(kCompareNames));

}  // namespace

const char* verdict_name(Verdict v) { return name_of(kVerdictNames, v); }
const char* compare_name(Compare c) { return name_of(kCompareNames, c); }
std::optional<Compare> compare_from_name(const std::string& name) { return parse_name(kCompareNames, name); }

PaperRow judge(const RowSpec& spec, double predicted) {
  PaperRow row;
  static_cast<RowSpec&>(row) = spec;
  row.predicted = predicted;
  const ErrorJudgement j =
      judge_prediction(predicted, spec.published, spec.tolerance_pct, spec.compare, spec.zero_tolerance);
  row.error_pct = j.error_pct;
  if (j.within) row.verdict = Verdict::ok;
  else row.verdict = !spec.cause.empty() && !spec.cause_is_ours ? Verdict::explained : Verdict::off;
  if (row.verdict == Verdict::ok) row.cause.clear();  // a cause is only stated for a miss
  return row;
}

ScenarioRunner::ScenarioRunner(std::string source_dir, std::string hardware_dir)
    : source_dir_(std::move(source_dir)), hardware_dir_(std::move(hardware_dir)) {}

ScenarioRunner::~ScenarioRunner() = default;

const PaperData& ScenarioRunner::data(const std::string& name) {
  auto it = data_.find(name);
  if (it != data_.end()) return *it->second;
  return *data_.emplace(name, std::make_unique<PaperData>(source_dir_, name)).first->second;
}

void ScenarioRunner::check_data_read() const {
  for (const auto& [name, d] : data_) d->check_all_read();
}

namespace {

std::string key_of(const std::string& name, const std::vector<std::string>& sets) {
  std::string k = name;
  for (const auto& s : sets) k += "\n" + s;
  return k;
}

}  // namespace

std::string ScenarioRunner::path_of(const std::string& name) const {
  return (fs::path(source_dir_) / "scenarios" / "papers" / (name + ".yaml")).string();
}

const sim::Scenario& ScenarioRunner::shipped(const std::string& name) {
  auto it = shipped_.find(name);
  if (it != shipped_.end()) return *it->second;
  sim::ScenarioOptions opts;
  opts.hardware_dir = hardware_dir_;
  opts.check_sweep_values = false;  // every point a row uses is loaded (and so checked) by scenario()
  auto sc = std::make_unique<sim::Scenario>(sim::load_scenario_file(path_of(name), opts));
  return *shipped_.emplace(name, std::move(sc)).first->second;
}

std::vector<std::vector<std::string>> ScenarioRunner::points(const std::string& name) {
  return sim::sweep_points(shipped(name));
}

void ScenarioRunner::check_point(const std::string& name, const std::vector<std::string>& point) {
  if (point.empty()) return;
  const auto all = points(name);
  if (std::find(all.begin(), all.end(), point) == all.end())
    throw std::logic_error(fmt::format("validate --papers: [{}] is not a sweep point of scenarios/papers/{}.yaml",
                                       fmt::join(point, ", "), name));
}

const sim::Scenario& ScenarioRunner::scenario(const std::string& name, const std::vector<std::string>& point) {
  check_point(name, point);
  if (point.empty()) return shipped(name);
  const std::string key = key_of(name, point);
  auto it = scenarios_.find(key);
  if (it != scenarios_.end()) return *it->second;
  sim::ScenarioOptions opts;
  opts.sets = point;  // exactly what `overlap-sim sweep` applies at this point
  opts.hardware_dir = hardware_dir_;
  opts.validate_sweep = false;
  auto sc = std::make_unique<sim::Scenario>(sim::load_scenario_file(path_of(name), opts));
  return *scenarios_.emplace(key, std::move(sc)).first->second;
}

const sim::SchemeResult& ScenarioRunner::result(const std::string& name, const std::vector<std::string>& point,
                                                const std::string& scheme, const nlohmann::json& params) {
  const std::string key = key_of(name, point) + "\n@" + scheme + params.dump();
  auto it = results_.find(key);
  if (it != results_.end()) return *it->second;
  const auto& entries = shipped(name).schemes;
  const bool listed = std::any_of(entries.begin(), entries.end(), [&](const sim::SchemeSpec& s) {
    return s.name == scheme && s.params == params;
  });
  if (!listed)
    throw std::logic_error(fmt::format("validate --papers: scenarios/papers/{}.yaml has no scheme entry {} {}", name,
                                       scheme, params.dump()));
  const sim::Scenario& sc = scenario(name, point);
  std::vector<sim::SchemeResult> out =
      sim::evaluate_all({sim::SchemeRequest{scheme, params}}, sc.workload, sc.hardware, sc.fidelity);
  ++evaluations_;
  if (out.empty())
    throw std::logic_error(fmt::format("validate --papers: scheme '{}' does not apply to scenario '{}'", scheme, name));
  runs_.push_back(ScenarioRun{name, point, scheme, params});
  auto r = std::make_unique<sim::SchemeResult>(std::move(out.front()));
  return *results_.emplace(key, std::move(r)).first->second;
}

const std::vector<std::string>& paper_sources() {
  static const std::vector<std::string> names = {"commfuse", "flashoverlap", "async_tp", "dtp", "flux", "megatron",
                                                  "collectives"};
  return names;
}

PapersReport summarize(std::vector<PaperRow> rows) {
  PapersReport rep;
  std::vector<double> errs, errs_unexplained;
  for (const PaperRow& r : rows) {
    if (r.variant == kShippedDefault) {
      ++rep.shipped_default;
      continue;
    }
    if (r.verdict == Verdict::ok) ++rep.ok;
    else if (r.verdict == Verdict::explained) ++rep.explained;
    else ++rep.off;
    if (!(r.ratio && r.compare == Compare::value && r.published != 0)) continue;
    const double e = std::abs(r.error_pct);
    errs.push_back(e);
    if (r.verdict != Verdict::explained) errs_unexplained.push_back(e);
    if (errs.size() == 1 || e > rep.max_abs_error_pct) {
      rep.max_abs_error_pct = e;
      rep.max_row = fmt::format("{}, {}: {}", r.source, r.location, r.figure);
    }
  }
  const AbsErrorFigures all = abs_error_figures(errs);
  const AbsErrorFigures unexplained = abs_error_figures(errs_unexplained);
  rep.ratio_rows = all.count;
  rep.ratio_rows_without_explained = unexplained.count;
  rep.median_abs_error_pct = all.median;
  rep.median_abs_error_pct_without_explained = unexplained.median;
  rep.rows = std::move(rows);
  return rep;
}

// FlashOverlap's Mixtral-8x7B result from the moe workload (papers_flashoverlap_moe.cpp).
std::vector<PaperRow> flashoverlap_moe_rows(ScenarioRunner& runner);
std::vector<PaperRow> flux_rows(ScenarioRunner& runner);
// Narayanan et al.'s measured Megatron-LM training throughput as simulated steps (papers_training.cpp).
std::vector<PaperRow> megatron_training_rows(ScenarioRunner& runner);
// DeepEP's tables and multi-node nccl-tests figures (papers_collectives.cpp).
std::vector<PaperRow> collective_rows(ScenarioRunner& runner);

PapersReport papers_report(ScenarioRunner& runner, const std::vector<std::string>& sources) {
  auto wanted = [&](const std::string& s) {
    return sources.empty() || std::find(sources.begin(), sources.end(), s) != sources.end();
  };
  std::vector<PaperRow> rows;
  auto add = [&](std::vector<PaperRow> more) { rows.insert(rows.end(), more.begin(), more.end()); };
  if (wanted("commfuse")) add(commfuse_rows(runner));
  if (wanted("flashoverlap")) {
    add(flashoverlap_rows(runner));
    add(flashoverlap_step_rows(runner));
    add(flashoverlap_moe_rows(runner));
  }
  if (wanted("async_tp")) add(async_tp_rows(runner));
  if (wanted("dtp")) add(dtp_rows(runner));
  if (wanted("flux")) add(flux_rows(runner));
  if (wanted("megatron")) add(megatron_training_rows(runner));
  if (wanted("collectives")) add(collective_rows(runner));
  runner.check_data_read();
  return summarize(std::move(rows));
}

namespace {

// Finite doubles only in JSON (nlohmann writes NaN as null; say so explicitly instead).
nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }


// Four significant figures, no exponent for the magnitudes the rows have.
std::string num(double v) {
  if (!std::isfinite(v)) return "-";
  const double a = std::abs(v);
  if (a == 0) return "0";
  if (a >= 1000) return fmt::format("{:.0f}", v);
  if (a >= 100) return fmt::format("{:.1f}", v);
  if (a >= 10) return fmt::format("{:.2f}", v);
  if (a >= 1) return fmt::format("{:.3f}", v);
  return fmt::format("{:.4f}", v);
}

std::string with_unit(double v, const std::string& unit, Compare c) {
  const std::string prefix = c == Compare::at_least ? ">= " : c == Compare::at_most ? "<= " : "";
  if (unit.empty()) return prefix + num(v);
  if (unit == "%" || unit == "x") return prefix + num(v) + unit;
  return prefix + num(v) + " " + unit;
}

}  // namespace

nlohmann::json to_json(const PaperRow& r) {
  // The row's text fields under their own names; the figures as numbers (null when not finite).
  constexpr std::array kText{std::pair{"source", &RowSpec::source},     std::pair{"location", &RowSpec::location},
                             std::pair{"figure", &RowSpec::figure},     std::pair{"config", &RowSpec::config},
                             std::pair{"unit", &RowSpec::unit},         std::pair{"published_text", &RowSpec::published_text},
                             std::pair{"cause", &RowSpec::cause},       std::pair{"variant", &RowSpec::variant}};
  using Figure = std::pair<const char*, double PaperRow::*>;
  constexpr std::array kFigures{Figure{"published", &PaperRow::published}, Figure{"predicted", &PaperRow::predicted},
                                Figure{"error_pct", &PaperRow::error_pct}};
  nlohmann::json j;
  for (const auto& [key, field] : kText) j[key] = r.*field;
  for (const auto& [key, field] : kFigures) j[key] = number(r.*field);
  j["ratio"] = r.ratio;
  j["compare"] = compare_name(r.compare);
  j["tolerance_pct"] = r.tolerance_pct;
  j["verdict"] = verdict_name(r.verdict);
  return j;
}

nlohmann::json to_json(const PapersReport& rep) {
  nlohmann::json j;
  nlohmann::json sources = nlohmann::json::object();
  for (const PaperSource& s : sources_of(rep)) sources[s.id] = s.title;
  j["sources"] = sources;
  nlohmann::json rows = nlohmann::json::array();
  for (const PaperRow& r : rep.rows) rows.push_back(to_json(r));
  j["rows"] = rows;
  j["median_abs_error_pct"] = number(rep.median_abs_error_pct);
  j["ratio_rows"] = rep.ratio_rows;
  j["median_abs_error_pct_without_explained"] = number(rep.median_abs_error_pct_without_explained);
  j["ratio_rows_without_explained"] = rep.ratio_rows_without_explained;
  j["max_abs_error_pct"] = number(rep.max_abs_error_pct);
  j["max_row"] = rep.max_row;
  j["counts"] = {{"ok", rep.ok},
                 {"explained", rep.explained},
                 {"off", rep.off},
                 {"shipped_default", rep.shipped_default}};
  j["definition"] =
      "error = (predicted - published) / published; median and max over the ratio rows (dimensionless figures "
      "compared as values), explained rows included (they are misses), and again without them; ok = within "
      "tolerance, explained = a miss whose cause lies outside our model and is stated, off = a miss whose cause is "
      "ours or not found; every row runs a shipped scenarios/papers file as written or at one of its sweep points; "
      "'shipped default' rows repeat a figure with the simulator's default where the file carries the paper's "
      "setting, and are not counted";
  return j;
}

const std::vector<PaperSource>& source_titles() {
  // Each source by its public title (the figures' tables and sections are named in each row).
  static const std::vector<PaperSource> kSources = {
      {"commfuse-paper", "CommFuse: Hiding Tail Latency via Communication Decomposition and Fusion for Distributed "
                         "LLM Training (arXiv 2604.24013)"},
      {"flashoverlap-paper", "Efficient and Adaptable Overlapping for Computation and Communication via Signaling and "
                             "Reordering (FlashOverlap, EuroSys '26)"},
      {"async-tp-illustrated", "An illustrated deep-dive into how the compute and comms in TP+SP are overlapped using "
                               "Async TP (blog post, 2025-05-26)"},
      {"delayed-tp-blog", "Delayed Tensor Parallelism for Faster Transformer Inference (blog post)"},
      {"flux-report", "FLUX's performance report: github.com/bytedance/flux, docs/performance_report.md"},
      {"megatron-sc21", "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM (Narayanan et "
                        "al., SC '21, arXiv 2104.04473)"},
      {"deepep-tables", "DeepEP's performance tables: github.com/deepseek-ai/DeepEP, docs/legacy.md, Performance"},
      {"nccl-tests-issue-290", "Single-node and multi-node performance of H100 nodes (NVIDIA/nccl-tests issue 290)"},
      {"nccl-tests-issue-119", "NCCL all_reduce_perf on 3 nodes of 8x A100 with 4 HDR NICs (NVIDIA/nccl-tests issue 119)"},
      {"nccl-issue-1244", "2 node 16 H20 GPU allreduce performance is not as expected with NVL sharp (NVIDIA/nccl issue 1244)"},
      {"nccl-issue-652", "NCCL performance on 32 node cluster (NVIDIA/nccl issue 652)"},
      {"nccl-tests-issue-283", "NCCL Test Multi-node Bus Bandwidth Tuning issue (NVIDIA/nccl-tests issue 283)"},
  };
  return kSources;
}

std::vector<PaperSource> sources_of(const PapersReport& rep) {
  std::vector<PaperSource> out;
  for (const PaperSource& s : source_titles())
    if (std::any_of(rep.rows.begin(), rep.rows.end(), [&](const PaperRow& r) { return r.source == s.id; }))
      out.push_back(s);
  return out;
}

std::string sources_text(const PapersReport& rep) {
  std::string out;
  for (const PaperSource& s : sources_of(rep)) out += fmt::format("  {}: {}\n", s.id, s.title);
  return out;
}

std::string format_table(const PapersReport& rep) {
  const std::vector<std::string> headers = {"#", "source", "where", "figure", "published", "predicted", "error",
                                            "tol", "verdict", "cause"};
  std::vector<std::vector<std::string>> rows;
  int i = 0;
  for (const PaperRow& r : rep.rows) {
    rows.push_back({std::to_string(++i), r.source, r.location,
                    r.variant.empty() ? r.figure : r.figure + " [" + r.variant + "]", with_unit(r.published, r.unit, r.compare),
                    with_unit(r.predicted, r.unit, Compare::value),
                    std::isfinite(r.error_pct) ? fmt::format("{:+.1f}%", r.error_pct) : std::string("-"),
                    fmt::format("{:g}%", r.tolerance_pct), verdict_name(r.verdict), r.cause});
  }
  const std::vector<std::size_t> width = sim::column_widths(headers, rows);
  // The row number and the figures right-aligned, the text left-aligned, the cause not padded.
  auto line = [&](const std::vector<std::string>& cells) { return sim::table_line(cells, width, "><<<>>>><-"); };
  std::string out =
      "published figures of the sources against overlap-sim's predictions; error = (predicted - published) / "
      "published; 'where' is the source's table, section or footnote\n" +
      sources_text(rep) + "\n";
  out += line(headers);
  std::size_t rule = 0;
  for (std::size_t c = 0; c + 1 < headers.size(); ++c) rule += width[c] + 2;
  out += std::string(rule + 5, '-') + "\n";
  for (const auto& row : rows) out += line(row);
  out += fmt::format("\n{} rows: {} ok, {} explained, {} off", rep.ok + rep.explained + rep.off, rep.ok, rep.explained,
                     rep.off);
  if (rep.shipped_default > 0)
    out += fmt::format(" (and {} shipped-default rows, not counted)", rep.shipped_default);
  out += fmt::format(
      "; median |error| over the {} ratio rows: {:.1f} % ({:.1f} % over the {} without the explained ones); max "
      "{:.1f} % ({})\n",
      rep.ratio_rows, rep.median_abs_error_pct, rep.median_abs_error_pct_without_explained,
      rep.ratio_rows_without_explained, rep.max_abs_error_pct, rep.max_row);
  return out;
}

}  // namespace overlap::tools::papers
