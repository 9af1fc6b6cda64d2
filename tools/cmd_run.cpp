#include "tools/cmd_run.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string_view>

#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "cost_model/bounded_message.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/atomic_file.hpp"
#include "sim/chrome_trace.hpp"
#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "sim/node_builder.hpp"
#include "sim/pipeline_step.hpp"
#include "sim/placeholder_sensitivity.hpp"
#include "sim/report.hpp"
#include "sim/scenario.hpp"
#include "sim/step_memory.hpp"
#include "tools/command_errors.hpp"
#include "tools/input_paths.hpp"

extern char** environ;

namespace overlap::tools {

namespace fs = std::filesystem;

int run_process(const std::vector<std::string>& args, bool quiet) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  }
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status) == 127 ? -1 : WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

ScenarioLoad scenario_load(const std::string& scenario, const std::vector<std::string>& sets,
                           const ScenarioFlags& flags) {
  ScenarioLoad load;
  // The default scenario lives in the source tree, wherever the program runs from.
  load.path = scenario.empty() ? (fs::path(source_dir()) / kDefaultScenario).string() : resolve_input_path(scenario);
  load.options.sets = resolve_set_paths(sets, load.path);
  load.flag_sets = scenario_flag_sets(flags, load.path, sets);
  for (const FlagAssignment& f : load.flag_sets) load.options.sets.push_back(f.set);
  load.options.hardware_dir = hardware_dir();
  return load;
}

std::optional<sim::ReportFormat> parse_report_format(const std::string& s) {
  if (s == "table") return sim::ReportFormat::table;
  if (s == "json") return sim::ReportFormat::json;
  if (s == "csv") return sim::ReportFormat::csv;
  return std::nullopt;
}

std::string python_program() {
  const char* p = std::getenv("PYTHON");
  return p && *p ? std::string(p) : std::string("python3");
}

void check_plotting_available(const std::string& script) {
  const std::string py = python_program();
  const int rc = run_process({py, "-c", "import matplotlib"}, true);
  if (rc == -1) throw UsageError(fmt::format("--plot needs Python 3 ('{}' was not found; set PYTHON to another interpreter)", py));
  if (rc != 0)
    throw UsageError(fmt::format("--plot needs matplotlib ('{} -c \"import matplotlib\"' failed); install it with "
                                 "'{} -m pip install matplotlib' or tools/setup.sh", py, py));
  const fs::path path = fs::path(source_dir()) / "tools" / script;
  if (!fs::exists(path)) throw UsageError("--plot: tools/" + script + " not found under " + source_dir() + " (set OVERLAP_HOME)");
  note_input_file(path.string(), "Python");  // the program the command runs: never an output
}

void write_output(const std::string& path, const std::string& content) {
  try {
    write_file_atomically(path, content);
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
}

namespace {

// 2827672 -> "2,827,672".
std::string grouped_count(std::uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

const sim::SchemeInfo& scheme_or_throw(const std::string& name) {
  const sim::SchemeInfo* info = sim::find_scheme(name);
  if (!info) throw std::logic_error("scheme '" + name + "' vanished from the registry");
  return *info;
}

// A scheme rejected its parameters while the schemes were evaluated: find which one (by building
// each graph again) and point at the scenario line that names it.
[[noreturn]] void locate_scheme_error(const sim::Scenario& sc, const std::vector<sim::SchemeSpec>& specs,
                                      const std::string& what) {
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const sim::SchemeSpec& spec = specs[i];
    const sim::BuildContext ctx{sc.workload, sc.hardware, spec.params, sc.fidelity};
    // Line 0 when the scheme list came from --set: the file is still named, without a line.
    std::string key = fmt::format("schemes.{}", i);
    std::string message;
    try {
      (void)scheme_or_throw(spec.name).build(ctx);
      continue;
    } catch (const InputError& e) {
      if (!e.key_path().empty()) key += "." + e.key_path();
      message = e.message();
    } catch (const std::invalid_argument& e) {
      message = e.what();
    }
    throw InputError(sc.file, spec.line, key,
                     fmt::format("scheme '{}': {}", spec.name, message));
  }
  throw InputError(sc.file, 0, "schemes", what);
}

std::vector<sim::SchemeSpec> selected_schemes(const sim::Scenario& sc, const std::string& only) {
  if (only.empty()) return sc.schemes;
  for (const auto& s : sc.schemes)
    if (s.name == only) return {s};
  const sim::SchemeInfo* info = sim::find_scheme(only);
  if (!info) {
    std::string known;
    for (const auto& s : sim::scheme_registry()) known += (known.empty() ? "" : ", ") + s.name;
    throw UsageError(fmt::format("--scheme: unknown scheme '{}' (known: {})", only, known));
  }
  if (sim::is_training_step(sc.workload) && info->backward.empty())
    throw UsageError(fmt::format("--scheme: '{}' has no backward form, so it cannot run a training step (workload.pass {}{}); "
                                 "`overlap-sim schemes` lists each scheme's backward",
                                 only, sim::pass_name(sc.workload.training.pass),
                                 sc.workload.training.parallel.dp > 1 ? ", data parallelism" : ""));
  if (info->applies && !info->applies(sc.workload))
    throw UsageError(fmt::format("--scheme: '{}' does not apply to a {} tp={} workload; it applies to {}", only,
                                 sim::workload_kind_name(sc.workload.kind), sc.workload.tp, sim::scheme_applies_to(*info)));
  return {sim::SchemeSpec{only, nlohmann::json::object(), 0}};
}

// The trace options of --trace-level / --trace-ranks / --trace-window; a bad value is a usage error
// naming the flag (checked before any simulation runs).
sim::TraceOptions trace_options(const RunOptions& o) {
  sim::TraceOptions t;
  auto flag = [](const char* name, auto parse) {
    try {
      return parse();
    } catch (const std::invalid_argument& e) {
      throw UsageError(fmt::format("{}: {}", name, e.what()));
    }
  };
  if (!o.trace_level.empty()) t.level = flag("--trace-level", [&] { return parse_trace_level(o.trace_level); });
  if (!o.trace_ranks.empty()) t.ranks = flag("--trace-ranks", [&] { return parse_trace_ranks(o.trace_ranks); });
  if (!o.trace_window.empty()) {
    const auto [start, end] = flag("--trace-window", [&] { return parse_trace_window(o.trace_window); });
    t.window_start_ps = start;
    t.window_end_ps = end;
  }
  return t;
}

// The Chrome trace of one scheme's run at the level asked (sim/chrome_trace.hpp).
nlohmann::json trace_of(const sim::Scenario& sc, const sim::SchemeSpec& spec, const sim::TraceOptions& options) {
  const sim::BuildContext ctx{sc.workload, sc.hardware, spec.params, sc.fidelity};
  sim::BuiltScheme built = scheme_or_throw(spec.name).build(ctx);
  for (int r : options.ranks)
    if (r >= built.graph.num_ranks())
      throw UsageError(fmt::format("--trace-ranks: rank {} is not in this run (ranks 0-{})", r,
                                   built.graph.num_ranks() - 1));
  const sim::NodeConfig node = sim::make_node(sc.hardware, built.graph.num_ranks());
  sim::EngineOptions engine;
  engine.record_ctas = options.level == sim::TraceLevel::cta;  // CTA records cost memory: only when shown
  const sim::Timeline tl = sim::run(built.graph, node, engine);
  nlohmann::json trace = sim::chrome_trace(built.graph, tl, node, options);
  trace["otherData"]["scheme"] = spec.name;
  // The parameters it ran with, defaults included (what the report's params column shows).
  trace["otherData"]["params"] = sim::params_with_defaults(scheme_or_throw(spec.name), spec.params, sc.workload);
  trace["otherData"]["scenario"] = sc.name;
  trace["otherData"]["hardware"] = sim::hardware_display_name(sc);
  return trace;
}

// The located message of a failed scheme: the scenario's file and line of its entry, and the key
// "schemes.N[.params.x]" as --set accepts it back.
InputError scheme_failure(const sim::Scenario& sc, const std::vector<sim::SchemeSpec>& specs,
                          const sim::SchemeResult& r) {
  const std::size_t i = r.request >= 0 ? static_cast<std::size_t>(r.request) : 0;
  int line = i < specs.size() ? specs[i].line : 0;
  // A builder names the knob it refused as "params.<knob>": point at that knob's line when the
  // scenario wrote it.
  constexpr std::string_view kParams = "params.";
  if (i < specs.size() && r.error_key.rfind(kParams, 0) == 0) {
    const auto it = specs[i].param_lines.find(r.error_key.substr(kParams.size()));
    if (it != specs[i].param_lines.end() && it->second > 0) line = it->second;
  }
  std::string key = fmt::format("schemes.{}", i);
  if (!r.error_key.empty()) key += "." + r.error_key;
  return InputError(sc.file, line, key, fmt::format("scheme '{}': {}", r.scheme, r.error));
}

// The timeline shows the trace's first rank unless --trace-ranks chose ranks (the trace then holds
// only those, and the plot shows them all).
void plot(const std::string& trace_path, const std::string& png_path, const std::string& title, bool all_ranks) {
  const std::string script = (fs::path(source_dir()) / "tools" / "plot_timeline.py").string();
  std::vector<std::string> args = {python_program(), script, trace_path, "--output", png_path, "--title", title};
  if (all_ranks) args.insert(args.end(), {"--ranks", "all"});
  const int rc = run_process(args, false);
  if (rc != 0) throw UsageError(fmt::format("--plot: {} failed (exit status {})", script, rc));
}

// A knob that means nothing for this workload (a training-only knob in a forward pass) is bad input,
// refused before anything runs, at its line in the scenario (or at --param).
void refuse_params_not_applying(const RunOptions& options, const sim::Scenario& sc,
                                const std::vector<sim::SchemeSpec>& specs) {
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto refused = sim::check_params_apply(scheme_or_throw(specs[i].name).params, specs[i].params, sc.workload);
    if (!refused) continue;
    const std::string message = fmt::format("scheme '{}': {}", specs[i].name, refused->why);
    if (!options.params.empty()) throw InputError("", 0, "--param " + refused->name, message);
    const auto line = specs[i].param_lines.find(refused->name);
    throw InputError(sc.file, line != specs[i].param_lines.end() ? line->second : specs[i].line,
                     fmt::format("schemes.{}.params.{}", i, refused->name), message);
  }
}

// Every selected scheme's result. A failed row carries its error located in the scenario (or at
// --param, which names one scheme). When every scheme failed there is no result to show: the
// scenario is unusable as given, an input error (exit 2) like any other bad input.
std::vector<sim::SchemeResult> evaluate_schemes(const RunOptions& options, const sim::Scenario& sc,
                                                const std::vector<sim::SchemeSpec>& specs) {
  std::vector<sim::SchemeRequest> requests;
  for (const auto& s : specs) requests.push_back(sim::SchemeRequest{s.name, s.params});
  std::vector<sim::SchemeResult> results;
  sim::EvaluateOptions evaluate;
  evaluate.keep_going = true;  // one failing scheme does not hide the others' results
  try {
    results = sim::evaluate_all(requests, sc.workload, sc.hardware, sc.fidelity, evaluate);
  } catch (const InputError& e) {
    if (!options.params.empty()) throw InputError("", 0, "--param", fmt::format("scheme '{}': {}", options.scheme, e.message()));
    locate_scheme_error(sc, specs, e.what());
  } catch (const std::invalid_argument& e) {
    if (!options.params.empty()) throw InputError("", 0, "--param", fmt::format("scheme '{}': {}", options.scheme, e.what()));
    locate_scheme_error(sc, specs, e.what());
  } catch (const RangeError& e) {
    // The baseline (no_overlap) runs outside keep_going: name the scenario its overflow came from.
    throw InputError(sc.file, 0, "workload", std::string("cannot simulate this: ") + e.what());
  }
  std::size_t failed = 0;
  for (sim::SchemeResult& r : results) {
    if (!r.failed()) continue;
    ++failed;
    if (!options.params.empty()) {
      const std::string key = r.error_key.empty() ? "--param" : "--param " + r.error_key.substr(r.error_key.rfind('.') + 1);
      throw InputError("", 0, key, fmt::format("scheme '{}': {}", options.scheme, r.error));
    }
    const InputError located = scheme_failure(sc, specs, r);
    if (failed == results.size()) throw located;
    r.error = located.what();
  }
  if (failed > 0 && failed == results.size()) throw scheme_failure(sc, specs, results.front());
  return results;
}

// Reserves the --plot PNG in `staged` and draws it from the trace `text`. The plotting script reads
// the trace from a temporary of its own (the staged trace is not in place yet).
void stage_plot(StagedOutputs& staged, const std::string& text, const RunOptions& options, const sim::Scenario& sc,
                const sim::SchemeSpec& spec) {
  const fs::path tmp = fs::temp_directory_path() / fmt::format("overlap-sim-trace-{}.json", ::getpid());
  write_file_atomically(tmp.string(), text);
  const std::string png = staged.reserve(options.plot);
  const std::string title = fmt::format("{}: {} on {}", sc.name, spec.name, sim::hardware_display_name(sc));
  try {
    plot(tmp.string(), png, title, !options.trace_ranks.empty());
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  std::error_code ec;
  fs::remove(tmp, ec);
}

// A file that could not be written, as a usage error naming its flag.
UsageError output_error(const RunOptions& options, const std::runtime_error& e) {
  std::string flag;
  const std::string what = e.what();
  for (const auto& [name, target] : {std::pair<const char*, const std::string*>{"--plot", &options.plot},
                                     {"--trace", &options.trace}, {"-o", &options.output}, {"--graphviz", &options.graphviz}}) {
    if (!target->empty() && what.find("'" + *target + "'") != std::string::npos) {
      flag = std::string(name) + " " + *target + ": ";
      break;
    }
  }
  return UsageError(flag + what + " " + written_note(e));
}

// The report (-o), and the trace, plot and graph of the first scheme: every file is staged before
// any is moved into place, so an error leaves every target as it was.
void write_outputs(const RunOptions& options, const sim::Scenario& sc, const std::vector<sim::SchemeSpec>& specs,
                   const std::string& report, const sim::TraceOptions& trace_opts,
                   const std::optional<sim::PipelineReport>& job) {
  StagedOutputs staged;
  try {
    if (!options.output.empty()) staged.stage(options.output, report);
    if (!options.trace.empty() || !options.plot.empty()) {
      const sim::SchemeSpec& spec = specs.front();
      nlohmann::json trace = trace_of(sc, spec, trace_opts);
      // A job's schedule beside the stage's step: one process after the step's ranks and fabric.
      if (job && !job->results.empty()) {
        int pid = 0;
        for (const auto& e : trace["traceEvents"])
          if (e.contains("pid")) pid = std::max(pid, e["pid"].get<int>() + 1);
        for (auto& e : sim::pipeline_trace_events(job->results.front(), pid)) trace["traceEvents"].push_back(std::move(e));
      }
      const std::string text = trace.dump();
      if (!options.trace.empty()) staged.stage(options.trace, text);
      if (!options.plot.empty()) stage_plot(staged, text, options, sc, spec);
    }
    if (!options.graphviz.empty()) {
      const sim::SchemeSpec& spec = specs.front();
      const sim::BuildContext ctx{sc.workload, sc.hardware, spec.params, sc.fidelity};
      staged.stage(options.graphviz, scheme_or_throw(spec.name).build(ctx).graph.to_graphviz());
    }
    staged.commit();
  } catch (const std::runtime_error& e) {
    if (dynamic_cast<const UsageError*>(&e) || dynamic_cast<const InputError*>(&e) || dynamic_cast<const sim::SimError*>(&e)) throw;
    throw output_error(options, e);
  }
}

// The 1-based line of the scenario's top-level `workload:` key (0 when it cannot be found).
int workload_line(const std::string& text) {
  try {
    const YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) return 0;
    for (const auto& kv : root)
      if (kv.first.IsScalar() && kv.first.Scalar() == "workload") return kv.first.Mark().line + 1;
  } catch (const YAML::Exception&) {
  }
  return 0;
}

// The scenario with the workload one stage runs for one micro-batch (sim/pipeline_step.hpp stage_workload).
sim::Scenario stage_scenario(const sim::Scenario& job) {
  sim::Scenario s = job;
  s.workload = sim::stage_workload(job.workload, sim::pipeline_parallel_of(job.workload));
  return s;
}

// A job's figures: the schedule over the passes of every scheme whose stage step ran; a configuration
// the composition refuses is the scenario's parallel keys' fault (exit 2).
sim::PipelineReport job_report(const sim::Scenario& job, const std::vector<sim::SchemeSpec>& specs,
                               const std::vector<sim::SchemeResult>& stage_steps) {
  std::vector<sim::SchemeRequest> requests;
  for (const sim::SchemeResult& r : stage_steps)
    if (!r.failed() && r.request >= 0 && static_cast<std::size_t>(r.request) < specs.size())
      requests.push_back(sim::SchemeRequest{specs[static_cast<std::size_t>(r.request)].name,
                                            specs[static_cast<std::size_t>(r.request)].params});
  sim::PipelineReport report;
  report.workload = job.workload;
  try {
    report.results = sim::evaluate_pipeline(requests, job.workload, job.hardware, job.fidelity,
                                            sim::pipeline_parallel_of(job.workload), &stage_steps);
  } catch (const std::invalid_argument& e) {
    throw InputError(job.file, workload_line(job.text), "workload.parallel", e.what());
  } catch (const RangeError& e) {
    throw InputError(job.file, workload_line(job.text), "workload.parallel", std::string("cannot simulate this: ") + e.what());
  }
  report.stage_memory = sim::stage_memories(job.workload, job.hardware);
  return report;
}

// `run --fit-only`: the step's memory per GPU against the profile's HBM, without simulating anything.
// Prints the memory block when the step fits; refuses it (InputError, exit 2) when it does not.
int fit_only(const RunOptions& options, const sim::Scenario& sc, sim::ReportFormat format, std::ostream& out) {
  if (!options.scheme.empty() || !options.params.empty() || !options.trace.empty() || !options.plot.empty() ||
      !options.graphviz.empty())
    throw UsageError("--fit-only simulates nothing: it takes no --scheme, --param, --trace, --plot or --graphviz");
  if (format == sim::ReportFormat::csv) throw UsageError("--fit-only prints a table or JSON (--format table|json)");
  const std::optional<sim::StepMemory> m = sim::step_memory(sc.workload, sc.hardware);
  if (!m)
    throw UsageError(fmt::format("--fit-only: the memory model covers a dense transformer's training step (workload.kind "
                                 "transformer without MoE layers or latent attention, pass backward or step); this is "
                                 "a {} workload, pass {}",
                                 sim::workload_kind_name(sc.workload.kind), sim::pass_name(sc.workload.training.pass)));
  if (m->hbm_bytes == 0)
    throw InputError(sc.hardware.source_file, 0, "hardware.gpu.hbm_bytes",
                     fmt::format("--fit-only needs the GPU's memory capacity, and profile '{}' gives none (gpu.hbm_bytes is 0)",
                                 sim::hardware_display_name(sc)));
  if (!m->fits()) {
    const double gib = static_cast<double>(Bytes{1} << 30);
    throw InputError(sc.file, workload_line(sc.text), "workload",
                     fmt::format("the training step does not fit: its peak memory per GPU is {:.2f} GiB, above the "
                                 "{:.2f} GiB of hardware.gpu.hbm_bytes ({}); decided by {}",
                                 static_cast<double>(m->bytes.peak_bytes) / gib, static_cast<double>(m->hbm_bytes) / gib,
                                 sim::hardware_display_name(sc), sim::step_memory_keys(sc.workload)));
  }
  std::string text;
  if (format == sim::ReportFormat::table) {
    text = fmt::format("scenario: {}   hardware: {}\nworkload: {}\n", sc.name, sim::hardware_display_name(sc),
                       sim::describe_workload(sc.workload)) +
           sim::format_step_memory(*m);
  } else {
    nlohmann::json j;
    j["scenario"] = sc.name;
    j["hardware"] = sim::hardware_display_name(sc);
    j["workload"] = sim::workload_json(sc.workload);
    j["memory_per_gpu"] = sim::step_memory_json(*m);
    text = j.dump(2) + "\n";
  }
  if (!options.output.empty()) write_output(options.output, text);
  else out << text;
  return kExitOk;
}

// The placeholder line of a run on a profile with guesses: the check's verdict (each guess's range
// re-run for the schemes it reaches), or why it did not run.
void check_placeholders(sim::ReportContext& ctx, const RunOptions& options, const ScenarioLoad& load,
                        const sim::Scenario& sc, const std::vector<sim::SchemeSpec>& specs,
                        const std::vector<sim::SchemeResult>& results, bool is_job) {
  std::uint64_t run_events = 0;
  for (const sim::SchemeResult& r : results) run_events += r.events;
  const bool run_check =
      options.placeholder_check == "always" ||
      (options.placeholder_check == "auto" && run_events <= kPlaceholderCheckEvents);
  if (!sc.hardware.placeholders.empty() && !run_check) {
    std::vector<std::string> keys;
    for (const PlaceholderRange& ph : sc.hardware.placeholders) keys.push_back(ph.key);
    const std::string why =
        options.placeholder_check == "never"
            ? std::string("--placeholder-check never")
            : fmt::format("this run took {} engine events, more than the {} the check runs for by default; each "
                          "guess re-runs the schemes it reaches twice",
                          grouped_count(run_events), grouped_count(kPlaceholderCheckEvents));
    ctx.placeholder_lines = sim::wrap_text(
        fmt::format("placeholders: not checked ({}): {} {} guesses; --placeholder-check always says whether one "
                    "decides the ranking",
                    why, bounded_list(keys), keys.size() == 1 ? "is" : "are"),
        sim::kTableWidth, "  ");
    ctx.placeholder_sensitivity = {{"skipped", why}, {"guesses", keys}};
  }
  if (!sc.hardware.placeholders.empty() && run_check) {
    std::vector<sim::SchemeRequest> requests;
    for (const auto& s : specs) requests.push_back(sim::SchemeRequest{s.name, s.params});
    const auto reload = [&](const std::vector<std::string>& extra) {
      sim::ScenarioOptions at = load.options;
      at.sets.insert(at.sets.end(), extra.begin(), extra.end());
      const sim::Scenario again = sim::load_scenario_file(load.path, at);
      return is_job ? stage_scenario(again) : again;
    };
    const sim::PlaceholderSensitivity s = sim::placeholder_sensitivity(sc, requests, results, load.options.sets, reload);
    ctx.placeholder_lines = sim::format_placeholder_sensitivity(s);
    ctx.placeholder_sensitivity = sim::placeholder_sensitivity_json(s);
  }
}

// One line per failed scheme, at most kListedItems of them (a scenario may list thousands), and the
// exit status: kExitSchemeFailed when any failed.
int report_failed_schemes(const std::vector<sim::SchemeResult>& results, std::ostream& err) {
  const auto failed = static_cast<std::size_t>(
      std::count_if(results.begin(), results.end(), [](const sim::SchemeResult& r) { return r.failed(); }));
  if (failed > 0) {
    std::size_t shown = 0;
    for (const sim::SchemeResult& r : results)
      if (r.failed() && shown++ < kListedItems) err << "overlap-sim: error: " << bounded_message(r.error) << "\n";
    if (failed > kListedItems)
      err << fmt::format("overlap-sim: ... and {} more failed schemes (their rows say FAILED)\n", failed - kListedItems);
    err << fmt::format("overlap-sim: {} of {} schemes failed (their rows say FAILED); the others' results are "
                       "reported\n", failed, results.size());
    return kExitSchemeFailed;
  }
  return kExitOk;
}

}  // namespace

int cmd_run(const RunOptions& options, std::ostream& out, std::ostream& err) {
  const auto format = parse_report_format(options.format);
  if (!format) throw UsageError("--format must be table, json or csv (got '" + options.format + "')");
  if (!options.fidelity.empty() && options.fidelity != "curve" && options.fidelity != "steps")
    throw UsageError("--fidelity must be curve or steps (got '" + options.fidelity + "')");
  const bool trace_flags = !options.trace_level.empty() || !options.trace_ranks.empty() || !options.trace_window.empty();
  const sim::TraceOptions trace_opts = trace_options(options);
  if (trace_flags && options.trace.empty() && options.plot.empty())
    throw UsageError("--trace-level, --trace-ranks and --trace-window shape the trace: give --trace FILE (or --plot)");
  if (!options.plot.empty()) check_plotting_available("plot_timeline.py");

  if (!options.params.empty() && options.scheme.empty())
    throw UsageError("--param sets a knob of one scheme: name it with --scheme (e.g. --scheme data_slicing --param chunks=8)");
  ScenarioLoad load = scenario_load(options.scenario, options.sets, options.flags);
  if (!options.fidelity.empty()) load.options.sets.push_back("fidelity=" + options.fidelity);
  // `run` runs the scenario as written; its sweep is `overlap-sim sweep`'s to run, but each of its
  // values is checked as `sweep` checks it (sim/scenario.hpp check_ignored_sweep).
  load.options.validate_sweep = false;
  const std::vector<FlagAssignment>& flag_sets = load.flag_sets;
  const sim::Scenario loaded = with_flag_errors(flag_sets, [&] { return sim::load_scenario_file(load.path, load.options); });
  // A pipeline or context-parallel job: the schemes run one stage's step of one micro-batch (the tables
  // and the trace), and the schedule composes the job from its passes (sim/pipeline_step.hpp).
  const bool is_job = loaded.workload.training.job.active();
  const sim::Scenario sc = is_job ? stage_scenario(loaded) : loaded;
  // Every file the scenario brought in is read now (its profile, model config, routing histogram):
  // no output may replace one, checked before the schemes run.
  check_outputs_not_inputs({{"-o", options.output}, {"--trace", options.trace}, {"--plot", options.plot},
                            {"--graphviz", options.graphviz}});
  if (options.fit_only) return fit_only(options, loaded, *format, out);

  std::vector<sim::SchemeSpec> specs = selected_schemes(sc, options.scheme);
  if (!options.params.empty())
    specs.front().params = sim::apply_scheme_params(scheme_or_throw(specs.front().name), specs.front().params, options.params, sc.hardware);
  refuse_params_not_applying(options, sc, specs);
  const std::vector<sim::SchemeResult> results = evaluate_schemes(options, sc, specs);

  // Everything is computed before anything is written.
  sim::ReportContext ctx = sim::report_context(loaded);
  if (is_job) ctx.job = job_report(loaded, specs, results);
  ctx.overrides = shown_overrides(options.sets, flag_sets);
  // With --scheme the user chose one; the others' absence is no news.
  if (options.scheme.empty()) ctx.not_applicable = sim::schemes_not_applying(sc.workload);
  // An inline profile's file is the scenario, whose comments are about more than the hardware; a
  // profile whose guesses have ranges gets the sensitivity check's line instead of the count of its
  // comments that say "placeholder".
  if (sc.hardware.source_file != sc.file && sc.hardware.placeholders.empty())
    ctx.hardware_note = placeholder_note(ctx.hardware, sc.hardware.source_file);
  check_placeholders(ctx, options, load, sc, specs, results, is_job);
  const std::string report = sim::format_report(*format, ctx, results, options.wide);
  const bool want_trace = !options.trace.empty() || !options.plot.empty();
  const bool first_failed = !results.empty() && results.front().failed() && results.front().request == 0;
  if ((want_trace || !options.graphviz.empty()) && first_failed)
    throw UsageError(fmt::format("--trace / --plot / --graphviz: scheme '{}' failed: {}", specs.front().name,
                                 results.front().error));
  write_outputs(options, sc, specs, report, trace_opts, ctx.job);
  if (options.output.empty()) out << report;
  for (const std::string* written : {&options.output, &options.trace, &options.plot, &options.graphviz})
    if (!written->empty()) err << "wrote " << *written << "\n";
  return report_failed_schemes(results, err);
}

Command add_run_command(CLI::App& app) {
  const auto options = std::make_shared<RunOptions>();
  RunOptions& run = *options;
  CLI::App* run_cmd = app.add_subcommand("run", "Evaluate a scenario's schemes and report latency, exposed "
                                                "communication, overlap efficiency, speedup and bound");
  run_cmd->add_option("scenario", run.scenario,
                      std::string("Scenario YAML (a path, or a name under scenarios/ or scenarios/papers/); "
                                  "default ") + kDefaultScenario);
  run_cmd->add_option("--set", run.sets, "Override a scenario key: a.b.c=value (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  add_scenario_flags(run_cmd, run.flags);
  run_cmd->add_option("--format", run.format, "Output format")->check(CLI::IsMember({"table", "json", "csv"}));
  run_cmd->add_option("--output,-o", run.output, "Write the report to FILE (atomically) instead of stdout");
  run_cmd->add_option("--trace", run.trace, "Write the Chrome trace (Perfetto) of one scheme's run to FILE");
  run_cmd->add_option("--trace-level", run.trace_level,
                      "Trace detail: kernel (default: one slice per kernel/copy/collective per rank, send->receive "
                      "arrows) or cta (every CTA on its SM, copy engines, transfers on links)")
      ->type_name("kernel|cta");
  run_cmd->add_option("--trace-ranks", run.trace_ranks,
                      "Trace (--trace) and plot (--plot) only these ranks, e.g. 0,3-5 (--plot alone shows rank 0)")
      ->check(non_empty_value())
      ->type_name("LIST");
  run_cmd->add_option("--trace-window", run.trace_window, "Trace only events overlapping START_US:END_US")
      ->type_name("START:END");
  run_cmd->add_option("--scheme", run.scheme, "Run only this scheme (the one traced / plotted / given --param)");
  run_cmd->add_option("--param", run.params,
                      "Set a knob of the --scheme scheme: key=value (repeatable; see 'overlap-sim schemes')")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  run_cmd->add_option("--plot", run.plot,
                      "Write a PNG timeline of one scheme's run: rank 0 (or --trace-ranks), exposed communication in "
                      "red, every kernel named (needs python3 + matplotlib)");
  run_cmd->add_option("--graphviz", run.graphviz, "Write the task graph (Graphviz dot) of one scheme to FILE");
  run_cmd->add_option("--fidelity", run.fidelity, "Collective fidelity (overrides the scenario's)")
      ->check(CLI::IsMember({"curve", "steps"}));
  run_cmd->add_flag("--wide", run.wide, "Table: every column and parameter (default: fits 120 columns)");
  run_cmd->add_option("--placeholder-check", run.placeholder_check,
                      "Re-run the schemes at both ends of each guessed profile value's range and say whether one "
                      "decides the ranking: auto (runs of at most 1,000,000 engine events), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  run_cmd->add_flag("--fit-only", run.fit_only,
                    "Training step: report its memory per GPU without simulating, and refuse it (exit 2) when the peak "
                    "exceeds the profile's HBM (gpu.hbm_bytes)");
  run_cmd->footer(examples({"overlap-sim run",
                            "overlap-sim run --hardware h200-sxm-8x-nvswitch --tp 4 --tokens 16384",
                            "overlap-sim run flashoverlap-a800-allreduce --format json",
                            "overlap-sim run --scheme data_slicing --param chunks=8",
                            "overlap-sim run --set hardware.fabric.links.nvlink.bandwidth_gbps=900 --wide",
                            "overlap-sim run llama3-70b-tp8xdp2-fsdp-step --fit-only --set workload.parallel.dp=32",
                            "overlap-sim run --scheme async_tp --trace async_tp.json --plot async_tp.png"}));
  return {run_cmd, [options, run_cmd](std::ostream& out, std::ostream& err) {
            check_output_flags({{"-o", &options->output, run_cmd->get_option("--output")},
                                {"--trace", &options->trace, run_cmd->get_option("--trace")},
                                {"--plot", &options->plot, run_cmd->get_option("--plot")},
                                {"--graphviz", &options->graphviz, run_cmd->get_option("--graphviz")}});
            return cmd_run(*options, out, err);
          }};
}

}  // namespace overlap::tools
