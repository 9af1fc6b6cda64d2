#pragma once
// `overlap-sim run [SCENARIO]`: loads a scenario, evaluates its schemes (sim/metrics.hpp) and prints
// or writes the report (sim/report.hpp); optionally the Chrome trace and a PNG timeline of one scheme.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/chrome_trace.hpp"
#include "sim/report.hpp"
#include "sim/scenario.hpp"
#include "tools/command.hpp"
#include "tools/scenario_flags.hpp"
#include "tools/trace_flags.hpp"

namespace overlap::tools {

// The scenario `run` uses when none is given (Llama-3-70B MLP, TP=8 on 8xH100).
inline constexpr const char* kDefaultScenario = "scenarios/llama3-70b-tp8-mlp.yaml";

struct RunOptions {
  std::string scenario;            // "" = kDefaultScenario
  std::vector<std::string> sets;   // --set a.b.c=value
  ScenarioFlags flags;             // --hardware, --tp, --tokens
  std::string format = "table";    // table | json | csv
  std::string output;              // "" = `out`
  std::string trace;               // Chrome trace JSON of one scheme
  std::string trace_level;         // kernel (default) | cta (sim/chrome_trace.hpp)
  std::string trace_ranks;         // "0,3-5": only these ranks' tracks ("" = all)
  std::string trace_window;        // "START_US:END_US": only events overlapping it ("" = all)
  std::string scheme;              // run only this scheme (and trace / plot it)
  std::string plot;                // PNG timeline via tools/plot_timeline.py
  std::string graphviz;            // the task graph (Graphviz dot) of one scheme, for debugging
  std::string fidelity;            // "" = the scenario's (curve | steps)
  std::vector<std::string> params; // --param key=value: knobs of the --scheme scheme
  bool wide = false;               // table: every column (default: fits 120 columns)
  // A training step's memory per GPU only (sim/step_memory.hpp), no simulation; a step whose peak exceeds
  // the profile's HBM is refused as an InputError naming the scenario and the keys that decide it.
  bool fit_only = false;
  // The placeholder check (sim/placeholder_sensitivity.hpp): auto = while the run as given took at most
  // kPlaceholderCheckEvents engine events; always; never.
  std::string placeholder_check = "auto";
};

// `auto` runs the placeholder check when the run as given took at most this many engine events: the
// check re-runs, at both ends of each guess's range, the schemes that guess reaches (up to twice the
// guesses times this run), so a layer (a few thousand events) or a 4-layer 70B step (150,000) is
// checked at once (an 80-layer 70B forward, 870,000), while a whole 80-layer step (2.8 million) is not
// made several times slower by default.
inline constexpr std::uint64_t kPlaceholderCheckEvents = 1'000'000;

// Registers `run` and its flags on `app` (tools/command.hpp).
Command add_run_command(CLI::App& app);

// Throws overlap::InputError (bad scenario / --set, or every scheme failed), UsageError (bad option,
// missing plotting dependency, unwritable output); anything else is an internal error. A scheme that
// fails while others succeed is a FAILED row of the report, named on `err`, and the exit status is
// 1 (returned). Every output (report, trace, graph, plot) is produced to a temporary file first and
// all are moved into place together only when all succeeded (cost_model/atomic_file.hpp StagedOutputs).
int cmd_run(const RunOptions& options, std::ostream& out, std::ostream& err);

// What `run` and `sweep` load: SCENARIO (or kDefaultScenario when ""), the options carrying --set
// (a hardware path made absolute) followed by the flags' assignments, and those assignments (for
// with_flag_errors and the report's header).
struct ScenarioLoad {
  std::string path;
  std::vector<FlagAssignment> flag_sets;
  sim::ScenarioOptions options;
};
ScenarioLoad scenario_load(const std::string& scenario, const std::vector<std::string>& sets, const ScenarioFlags& flags);

// The value of --format: nullopt for anything but table, json or csv.
std::optional<sim::ReportFormat> parse_report_format(const std::string& s);

// Helpers the commands that plot share (run --plot, sweep --plot).
// Runs a program (searched in PATH) and waits for it; stdout/stderr go to ours unless `quiet`.
// Returns its exit status, or -1 when it could not be started.
int run_process(const std::vector<std::string>& args, bool quiet);
// $PYTHON, else python3.
std::string python_program();
// Throws UsageError unless Python with matplotlib and tools/<script> are there (before any
// simulation runs, so a missing dependency costs nothing).
void check_plotting_available(const std::string& script);
// Writes `content` atomically; an unwritable path is a UsageError.
void write_output(const std::string& path, const std::string& content);

}  // namespace overlap::tools
