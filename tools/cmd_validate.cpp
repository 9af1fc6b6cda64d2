#include "tools/cmd_validate.hpp"

#include <algorithm>
#include <filesystem>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cost_model/atomic_file.hpp"
#include "tools/cmd_papers.hpp"
#include "tools/command_errors.hpp"
#include "tools/input_paths.hpp"
#include "tools/papers.hpp"

namespace overlap::tools {

namespace fs = std::filesystem;
using nlohmann::json;

void print_validation_table(const ValidationReport& rep, std::ostream& out) {
  // The verdict first: per group against its accuracy target and its recorded median, then the rows.
  out << fmt::format("verdict: {}: {}{}\n", rep.verdict, rep.verdict_detail,
                     rep.fixture ? "   (FIXTURE: made-up numbers, not a measurement)" : "");
  out << fmt::format("  median |error| {:.2f} % over {} scored rows{}\n", rep.median_abs_error_pct, rep.scored,
                     rep.recorded_median_pct ? fmt::format(" (recorded {:.2f} %)", *rep.recorded_median_pct) : "");
  std::size_t width = 5;
  for (const auto& g : rep.groups) width = std::max(width, g.benchmark.size());
  out << fmt::format("  {:<{}}  {:>15}  {:>14}  {:>8}  {:>10}  {:>9}  {}\n", "group", width, "result", "median |err| %",
                     "target %", "recorded %", "tolerance", "rows off / scored");
  for (const auto& g : rep.groups) {
    out << fmt::format("  {:<{}}  {:>15}  {:>14.2f}  {:>8}  {:>10}  {:>8.1f}%  {} / {}\n", g.benchmark, width, g.result,
                       g.median_abs_error_pct, g.target_median_pct ? fmt::format("{:g}", *g.target_median_pct) : "-",
                       g.recorded_median_pct ? fmt::format("{:.2f}", *g.recorded_median_pct) : "-", g.tolerance_pct,
                       g.off_rows, g.scored);
  }
  for (const auto& s : rep.suspicious) out << "  suspicious: " << s << "\n";
  out << fmt::format("(target: the accuracy promised per group; recorded: DIR/validation.json, held to +{:.1f}; rows with "
                     "|error| above {:g} x the target (else the recorded or own median), at least {:g} %, are marked OFF)\n\n",
                     kValidationMarginPct, kOffFactor, kOffFloorPct);
  out << fmt::format("validate: {}{}\nprofile: {}\nerror = 100 x (predicted - measured) / measured; rows marked "
                     "'fitted' built the profile and are not scored\n",
                     rep.dir, rep.fixture ? "   (FIXTURE: made-up numbers, not a measurement)" : "", rep.profile_file);
  for (const auto& g : rep.groups) {
    out << fmt::format("\n== {}: {}\n", g.benchmark, g.model);
    out << fmt::format("{:<64} {:>14} {:>15} {:>10} {:>8}\n", "configuration", "measured (us)", "predicted (us)", "error (%)", "spread");
    for (const auto& r : g.rows) {
      out << fmt::format("{:<64} {:>14.3f} {:>15.3f} {:>10.2f} {:>8.3f}{}{}{}{}\n", r.config, r.measured_us, r.predicted_us,
                         r.error_pct, r.spread, r.fitted ? "  fitted" : "", r.off ? "  OFF" : "",
                         r.suspicious.empty() ? "" : "  SUSPICIOUS: " + r.suspicious, r.note.empty() ? "" : "  " + r.note);
    }
    out << fmt::format("median |error| {:.2f} %, max {:.2f} % over {} scored rows\n", g.median_abs_error_pct,
                       g.max_abs_error_pct, g.scored);
    if (g.exposed_rows > 0) {
      out << fmt::format("exposed communication: median |predicted - measured| {:.1f} us, {:.2f} % of the measured latency, "
                         "over {} runs\n",
                         g.exposed_median_abs_error_us, g.exposed_median_abs_error_pct_of_latency, g.exposed_rows);
    }
  }
  if (!rep.partitions.empty()) {
    out << "\n== flashoverlap partitions: measured best vs the simulator's best among the measured candidates, "
           "FlashOverlap's predictor's, and tune's over every partition\n";
    for (const auto& p : rep.partitions) {
      out << fmt::format("{} on {}: measured best {} ({:.1f} us), simulator's pick {} (measured {:.1f} us, regret {:.2f} %)", p.workload, p.profile,
                         p.measured_best, p.measured_best_us, p.simulated_best, p.simulated_pick_measured_us, p.regret_pct);
      if (!p.predictor_best.empty()) {
        out << fmt::format(", FlashOverlap's predictor's pick {} (measured {:.1f} us)", p.predictor_best, p.predictor_pick_measured_us);
      }
      if (!p.tune_best_tiles.empty()) {
        out << fmt::format("; tune over every partition: groups of {} tiles (simulated {:.1f} us, {})",
                           json(p.tune_best_tiles).dump(), p.tune_simulated_us,
                           p.tune_pick_measured_us > 0 ? fmt::format("measured {:.1f} us", p.tune_pick_measured_us)
                                                       : std::string("not among the measured runs"));
      }
      out << "\n";
    }
  }
  for (const auto& s : rep.skipped) out << "skipped: " << s << "\n";
  out << fmt::format("\noverall: median |error| {:.2f} %, max {:.2f} % over {} scored rows\n", rep.median_abs_error_pct,
                     rep.max_abs_error_pct, rep.scored);
}


void cmd_validate(const std::string& dir, const std::string& format, bool record, std::ostream& out, std::ostream& err) {
  const ValidationReport rep = validate_dir(dir);
  if (format == "json") {
    out << to_json(rep).dump(2) << "\n";
  } else {
    print_validation_table(rep, out);
  }
  if (record) {
    const std::string file = (fs::path(dir) / "validation.json").string();
    // The previous record was read to hold this run to it: it is this command's own output.
    forget_input_files("validation record");
    check_outputs_not_inputs({{"--record", file}});
    write_file_atomically(file, recorded_figures(rep).dump(2) + "\n");
    err << "wrote " << file << "\n";
  }
}

// `validate`'s two forms share one subcommand and its flags: DIR (this file) and --papers
// (tools/cmd_papers.hpp).
namespace {
struct ValidateOptions {
  std::string dir;      // DIR: a calibration results directory
  bool record = false;  // --record: write DIR/validation.json
  PapersOptions papers; // --papers and the flags that go with it (--format is both forms')
};
}  // namespace

Command add_validate_command(CLI::App& app) {
  const auto options = std::make_shared<ValidateOptions>();
  std::string& validate_dir = options->dir;
  bool& validate_record = options->record;
  PapersOptions& papers = options->papers;
  CLI::App* validate_cmd = app.add_subcommand(
      "validate", "Check predictions against measured results (DIR, e.g. calibrate/results/...) or the sources' "
                  "published figures (--papers)");
  validate_cmd->add_option("dir", validate_dir, "Results directory (measurements.json, profile.yaml, schemes/)");
  validate_cmd->add_flag("--papers", papers.papers,
                         "Compare with every published figure of the sources (CommFuse, FlashOverlap, async TP, DTP)");
  validate_cmd->add_option("--format", papers.format, "Output format")->check(CLI::IsMember({"table", "json"}));
  validate_cmd->add_flag("--record", validate_record,
                         "With DIR: write DIR/validation.json, the error figures CI holds later runs to");
  validate_cmd->add_flag("--strict", papers.strict, "With --papers: exit 1 when a row is off (default: exit 0, a report)");
  validate_cmd->add_option("--source", papers.sources,
                           "With --papers: only this source's rows: " + fmt::format("{}", fmt::join(papers::paper_sources(), ", ")))
      ->allow_extra_args(false);
  validate_cmd->add_option("--output,-o", papers.output, "With --papers: write the report to FILE (atomically)");
  validate_cmd->footer(examples({"overlap-sim validate calibrate/results/nvidia-h100-80gb-hbm3-vm",
                                 "overlap-sim validate calibrate/results/nvidia-h100-80gb-hbm3-vm --format json",
                                 "overlap-sim validate --papers --source flashoverlap"}));
  return {validate_cmd, [options, validate_cmd](std::ostream& out, std::ostream& err) {
            PapersOptions& papers = options->papers;
            check_output_flags({{"-o", &papers.output, validate_cmd->get_option("--output")}});
            if (papers.papers) {
              if (!options->dir.empty() || options->record)
                throw UsageError("validate: give either DIR (measured results) or --papers, not both");
              return cmd_validate_papers(papers, out);
            }
            if (options->dir.empty())
              throw UsageError("validate: give DIR (a calibration results directory) or --papers (the sources' figures)");
            if (papers.strict || !papers.sources.empty() || !papers.output.empty())
              throw UsageError("validate DIR: --strict, --source and --output go with --papers");
            const std::string dir = resolve_input_path(options->dir);
            if (options->record) {
              const std::string record = (fs::path(dir) / "validation.json").string();
              check_output_flags({{"--record", &record, nullptr}});
            }
            cmd_validate(dir, papers.format, options->record, out, err);
            return kExitOk;
          }};
}

}  // namespace overlap::tools
