#include "tools/cli.hpp"

#include <fmt/ranges.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cost_model/bounded_message.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/profile_loader.hpp"
#include "cost_model/source_paths.hpp"
#include "cost_model/yaml_reader.hpp"
#include "cost_model/atomic_file.hpp"
#include "sim/engine.hpp"
#include "tools/cmd_collective.hpp"
#include "sim/sweep_mpi.hpp"
#include "tools/cmd_papers.hpp"
#include "tools/cmd_profile.hpp"
#include "tools/cmd_profile_fit.hpp"
#include "tools/cmd_run.hpp"
#include "tools/cmd_schemes.hpp"
#include "tools/cmd_plan.hpp"
#include "tools/cmd_sweep.hpp"
#include "tools/cmd_trace.hpp"
#include "tools/cmd_tune.hpp"
#include "tools/cmd_validate.hpp"
#include "tools/papers.hpp"
#include "tools/scenario_flags.hpp"

namespace overlap::tools {

namespace fs = std::filesystem;

std::string source_dir() { return source_tree_dir(); }

std::string hardware_dir() { return default_hardware_dir(); }

std::string resolve_input_path(const std::string& path) {
  // error_code overloads: a path the OS refuses (too long, bad bytes) is "not there", and the input
  // reader then says why, never a filesystem exception.
  const auto exists = [](const fs::path& p) {
    std::error_code ec;
    return fs::exists(p, ec);
  };
  if (path.empty() || fs::path(path).is_absolute() || exists(path)) return path;
  const fs::path root(source_dir());
  if (exists(root / path)) return (root / path).string();
  const bool bare = path.find('/') == std::string::npos && fs::path(path).extension() != ".yaml";
  if (bare) {
    for (const char* sub : {"scenarios", "scenarios/papers"}) {
      const fs::path candidate = root / sub / (path + ".yaml");
      if (exists(candidate)) return candidate.string();
    }
  }
  return path;
}

namespace {

// A relative file named on the command line: the working directory's, else the scenario folder's,
// else the source tree's; absolute, so the scenario loader does not read it against the scenario.
std::string resolve_flag_path(const std::string& value, const std::string& scenario_path, const char* extension) {
  const auto exists = [](const fs::path& p) {
    std::error_code ec;
    return fs::exists(p, ec);
  };
  const fs::path v(value);
  const bool path_like = value.find('/') != std::string::npos || v.extension() == extension;
  if (!path_like || v.is_absolute()) return value;  // a built-in name, or already absolute
  fs::path chosen = v;
  for (const fs::path& candidate : {v, fs::path(scenario_path).parent_path() / v, fs::path(source_dir()) / v}) {
    if (exists(candidate)) {
      chosen = candidate;
      break;
    }
  }
  std::error_code ec;
  const fs::path abs = fs::absolute(chosen, ec);
  return ec ? value : abs.lexically_normal().string();
}

}  // namespace

std::string resolve_hardware_path(const std::string& value, const std::string& scenario_path) {
  return resolve_flag_path(value, scenario_path, ".yaml");
}

std::string resolve_model_path(const std::string& value, const std::string& scenario_path) {
  return resolve_flag_path(value, scenario_path, ".json");
}

std::vector<std::string> resolve_set_paths(const std::vector<std::string>& sets, const std::string& scenario_path) {
  const std::string hardware = "hardware=";
  const std::string model = "workload.model=";
  std::vector<std::string> out = sets;
  for (std::string& s : out) {
    if (s.rfind(hardware, 0) == 0) s = hardware + resolve_hardware_path(s.substr(hardware.size()), scenario_path);
    if (s.rfind(model, 0) == 0) s = model + resolve_model_path(s.substr(model.size()), scenario_path);
  }
  return out;
}

namespace {

#ifndef OVERLAP_VERSION
#define OVERLAP_VERSION "0.0.0"
#endif

constexpr const char* kDescription =
    "overlap-sim: simulates how communication overlaps computation in tensor-parallel LLM layers.\n"
    "Exit status: 0 ok, 2 usage or input error, 1 internal error.";

const std::vector<std::string> kCommands = {"run", "tune", "sweep", "plan", "collective", "validate", "schemes", "profile", "trace"};

std::string examples(std::initializer_list<const char*> lines) {
  std::string out = "\nExamples:\n";
  for (const char* l : lines) out += std::string("  ") + l + "\n";
  return out;
}

std::string version_text() {
  return fmt::format("overlap-sim {} (MPI sweeps: {})", OVERLAP_VERSION,
                     sim::built_with_mpi() ? "yes" : "no, built without MPI");
}

// A first word that is no command (and no option) is named as such, before CLI11 reports it as an
// unexpected argument.
std::optional<std::string> unknown_command(int argc, const char* const* argv) {
  if (argc < 2) return std::nullopt;
  const std::string first = argv[1];
  if (first.empty() || first[0] == '-') return std::nullopt;
  for (const auto& c : kCommands)
    if (first == c) {
      if (first == "profile" && argc >= 3) {
        const std::string sub = argv[2];
        if (!sub.empty() && sub[0] != '-' && sub != "show" && sub != "list" && sub != "fit")
          return fmt::format("unknown command 'profile {}' (profile commands: list, show, fit)", sub);
      }
      return std::nullopt;
    }
  std::string list;
  for (const auto& c : kCommands) list += (list.empty() ? "" : ", ") + c;
  return fmt::format("unknown command '{}' (commands: {})", first, list);
}

// always_capture_default shows a repeatable option's empty list as "=[]": say nothing instead.
void drop_empty_list_defaults(CLI::App* app) {
  for (CLI::Option* o : app->get_options())
    if (o->get_default_str() == "[]") o->default_str("");
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) drop_empty_list_defaults(sub);
}

// One command's output flags: an empty path is refused (it is not "standard output": that is -),
// and two flags naming one file are refused before anything runs (cost_model/atomic_file.hpp).
struct OutputFlag {
  std::string flag;
  const std::string* path;
  const CLI::Option* option;  // null: always given when `path` is not empty
};

void check_output_flags(const std::vector<OutputFlag>& flags,
                        std::vector<std::pair<std::string, std::string>> extra = {}) {
  std::vector<std::pair<std::string, std::string>> outputs;
  for (const OutputFlag& f : flags) {
    if (f.option && f.option->count() > 0 && f.path->empty())
      throw UsageError(f.flag + " '': an empty path names no file (give a file name, or - for standard output)");
    outputs.emplace_back(f.flag, *f.path);
  }
  outputs.insert(outputs.end(), extra.begin(), extra.end());
  check_distinct_outputs(outputs);
}

}  // namespace

// Number options read as written, by the rule of every numeric input (cost_model/yaml_reader.hpp):
// decimal digits with an optional sign, leading zeros decimal. CLI11 alone would read 010 as octal
// 8 and 0x10 as 16; this transform hands it the canonical decimal text.
CLI::Validator decimal_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto v = parse_decimal_int(text);
        if (!v) return "must be a whole number in decimal digits (got '" + text + "')";
        text = std::to_string(*v);
        return std::string();
      },
      "", "decimal");
}

namespace {

// `run`: a scenario's schemes evaluated and reported (tools/cmd_run.hpp).
CLI::App* add_run_command(CLI::App& app, RunOptions& run) {
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
  return run_cmd;
}

// `tune`: FlashOverlap's wave groups for one GEMM, or every scheme's knobs for a scenario
// (tools/cmd_tune.hpp). --algo is read into `algo` so that a negative value is refused by name.
CLI::App* add_tune_command(CLI::App& app, TuneOptions& tune, std::optional<int>& tune_algo) {
  CLI::App* tune_cmd = app.add_subcommand(
      "tune", "Tune FlashOverlap's wave groups for one GEMM (--gemm ...), or every scheme's knobs for a SCENARIO");
  tune_cmd->add_option("scenario", tune.scenario,
                       "Scenario: tune each scheme's knobs (scheme level); on a training step with data "
                       "parallelism also parallel.bucket_mb (DDP, ZeRO-1/2) or parallel.prefetch (ZeRO-3)");
  tune_cmd->add_option("--hardware", tune.hardware,
                       "Hardware profile (name or path): the operator level's, or with a SCENARIO the same as "
                       "--set hardware=VALUE")
      ->type_name("NAME|FILE");
  add_scenario_flags(tune_cmd, tune.flags, false);
  tune_cmd->add_option("--gemm", tune.gemm, "Operator level: the per-rank GEMM, MxNxK")->type_name("MxNxK");
  tune_cmd->add_option("--dtype", tune.dtype, "Operator level: fp8, fp16, bf16 or fp32 (default bf16)");
  tune_cmd->add_option("--primitive", tune.primitive, "Operator level: all_reduce, reduce_scatter or all_to_all");
  tune_cmd->add_option("--ranks", tune.ranks, "Operator level: GPUs in the collective")->transform(decimal_integer());
  tune_cmd->add_option("--search", tune.search,
                       "flashoverlap (the published tuner), optimal (exact optimum of its predictor), exhaustive "
                       "(2^(T-1) partitions, T <= 20), simulate (the engine decides; default)");
  tune_cmd->add_option("--format", tune.format, "table or json");
  tune_cmd->add_option("--output,-o", tune.output, "Write the result to FILE (atomically) instead of stdout");
  tune_cmd->add_option("--export-flashoverlap", tune.export_flashoverlap,
                       "The older form of --export flashoverlap FILE|DIR/ (kept; it says so on stderr)")
      ->type_name("FILE|DIR/");
  add_tune_export_option(tune_cmd, tune);
  tune_cmd->add_option("--swizzle", tune.swizzle, "Tile order of the exported hint: CUTLASS swizzle 1, 2, 4 or 8")
      ->transform(decimal_integer());
  tune_cmd->add_option("--algo", tune_algo, "Exported Algo: FlashOverlap's index of the GEMM kernel (AlgoDict; 0 or more)")
      ->transform(decimal_integer());
  tune_cmd->add_option("--budget", tune.budget, "simulate: engine runs at most (default 40)")->transform(decimal_integer());
  tune_cmd->add_flag("--sm-margin", tune.sm_margin,
                     "Operator level: the engine runs FlashOverlap with sm_margin (the GEMM leaves NCCL's SMs free)");
  tune_cmd->add_option("--top", tune.top, "Candidates listed (default 10)")->transform(decimal_integer());
  tune_cmd->add_option("-j,--jobs", tune.jobs, "Threads running simulations (default: every core)")
      ->transform(decimal_integer())
      ->check(CLI::Range(1, kMaxJobs));
  tune_cmd->add_option("--set", tune.sets,
                       "Override a key (repeatable): of the profile (operator level, e.g. hardware.gpu.sm_count=100) "
                       "or of the scenario")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  tune_cmd->footer(examples({"overlap-sim tune --hardware a800-8x-nvlink --gemm 8192x8192x4096 --dtype fp16 --primitive all_reduce --ranks 4",
                             "overlap-sim tune --hardware rtx4090-4x-pcie --gemm 4096x8192x7168 --dtype fp16 --primitive reduce_scatter --ranks 4 --search flashoverlap",
                             "overlap-sim tune --hardware h100-sxm-8x-nvswitch --gemm 16384x8192x8192 --primitive all_reduce --ranks 8 --export flashoverlap configs/ --algo 3",
                             "overlap-sim tune scenarios/llama3-70b-tp8-mlp.yaml --tp 4",
                             "overlap-sim tune flashoverlap-a800-allreduce --format json"}));
  return tune_cmd;
}

// `sweep`: a scenario over a grid of its keys (tools/cmd_sweep.hpp).
CLI::App* add_sweep_command(CLI::App& app, SweepOptions& sweep) {
  CLI::App* sweep_cmd = app.add_subcommand(
      "sweep", "Run a scenario over the cartesian product of its sweep: axes (and --sweep flags), every scheme");
  sweep_cmd->add_option("scenario", sweep.scenario, std::string("Scenario YAML; default ") + kDefaultScenario);
  sweep_cmd->add_option("--sweep,--axis", sweep.sweeps,
                        "An axis: key=v1,v2,... (repeatable; replaces the scenario's axis of that key). A value "
                        "A..BxF is A, A*F, ... up to B (A..B: x2); A..B+S is A, A+S, ... up to B")
      ->type_name("KEY=V1,V2,...")
      ->allow_extra_args(false);
  sweep_cmd->add_option("--no-axis", sweep.no_axes, "Drop the scenario's own axis over KEY (repeatable)")
      ->type_name("KEY")
      ->allow_extra_args(false);
  sweep_cmd->add_flag("--only-axes", sweep.only_axes, "Sweep only the --sweep axes, none of the scenario's own");
  add_scenario_flags(sweep_cmd, sweep.flags);
  sweep_cmd->add_option("--set", sweep.sets, "Override a scenario key: a.b.c=value (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  sweep_cmd->add_option("-j,--jobs", sweep.jobs, "Threads (default: every core, shared among mpirun ranks on a machine)")
      ->transform(decimal_integer())
      ->check(CLI::Range(1, kMaxJobs));
  sweep_cmd->add_option("--format", sweep.format, "csv or json (default csv)");
  sweep_cmd->add_option("--output,-o", sweep.output, "Write the rows to FILE (atomically at the end; FILE.partial "
                                                      "holds the points finished so far)");
  sweep_cmd->add_flag("--resume", sweep.resume, "Skip the points already in --output FILE (and its FILE.partial)");
  sweep_cmd->add_flag("--progress", sweep.progress, "Show the progress bar even when stderr is not a terminal");
  sweep_cmd->add_option("--plot", sweep.plot, "PNG: heatmap (two swept keys) or line chart (one) of speedup and "
                                              "exposed communication per scheme (python3 + matplotlib)");
  sweep_cmd->add_flag("--verify-bytes", sweep.verify_bytes,
                      "Check every scheme's byte accounting on a steps-fidelity rebuild (as run does; slower)");
  sweep_cmd->footer(examples({"overlap-sim sweep -o sweep.csv --plot sweep.png",
                              "overlap-sim sweep --only-axes --sweep workload.tokens=1024..32768x2 --plot tokens.png",
                              "overlap-sim sweep --no-axis hardware.fabric.links.nvlink.bandwidth_gbps --tp 4",
                              "overlap-sim sweep flashoverlap-a800-allreduce --format json -o fo.json",
                              "overlap-sim sweep --sweep workload.tokens=2048,4096,8192 --sweep hardware.comm.channels=16,24,32",
                              "overlap-sim sweep -o big.csv --resume --progress",
                              "mpirun -np 4 overlap-sim sweep -o sweep.csv   # rank 0 writes what one process would"}));
  return sweep_cmd;
}

// `profile list` and `profile show` (tools/cmd_profile.hpp).
struct ProfileOptions {
  std::string name;                  // show: a built-in name or a YAML path
  std::string format = "table";      // show: json | yaml | table
  std::string list_format = "table"; // list: table | json
  std::vector<std::string> sets;     // show: --set
};

// Every command's options and its subcommand, filled in by parsing.
struct Commands {
  RunOptions run;
  TuneOptions tune;
  std::optional<int> tune_algo;
  SweepOptions sweep;
  PlanCommandOptions plan;
  std::string schemes_format = "table";
  ProfileOptions profile;
  CollectiveOptions collective;
  TraceOptions trace;
  ProfileFitOptions fit;
  std::string validate_dir;
  bool validate_record = false;
  PapersOptions papers;
  CLI::App *run_cmd = nullptr, *tune_cmd = nullptr, *sweep_cmd = nullptr, *schemes_cmd = nullptr,
           *list_cmd = nullptr, *show_cmd = nullptr, *collective_cmd = nullptr, *validate_cmd = nullptr,
           *trace_cmd = nullptr, *fit_cmd = nullptr, *plan_cmd = nullptr;
};

void add_profile_commands(CLI::App& app, Commands& c) {
  CLI::App* profile_cmd = app.add_subcommand("profile", "Hardware profiles");
  profile_cmd->require_subcommand(1);
  profile_cmd->footer(examples({"overlap-sim profile list", "overlap-sim profile show h100-sxm-8x-nvswitch",
                                "overlap-sim profile fit traces/*.json.gz --hardware h100-sxm-8x-nvswitch -o my-cluster.yaml"}));
  c.list_cmd = profile_cmd->add_subcommand("list", "List the built-in hardware profiles");
  c.list_cmd->add_option("--format", c.profile.list_format, "Output format")->check(CLI::IsMember({"table", "json"}));
  c.list_cmd->footer(examples({"overlap-sim profile list", "overlap-sim profile list --format json"}));
  c.show_cmd = profile_cmd->add_subcommand("show", "Print a resolved hardware profile");
  c.show_cmd->add_option("name", c.profile.name, "Built-in profile name or a profile YAML path")->required();
  c.show_cmd->add_option("--format", c.profile.format, "Output format")->check(CLI::IsMember({"json", "yaml", "table"}));
  c.show_cmd->add_option("--set", c.profile.sets, "Override a profile key: a.b=value (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  c.show_cmd->footer(examples({"overlap-sim profile show h100-sxm-8x-nvswitch",
                             "overlap-sim profile show h100-sxm-8x-nvswitch --format yaml > my-node.yaml   # loads back: --hardware my-node.yaml",
                             "overlap-sim profile show a800-8x-nvlink --format yaml --set gpu.sm_count=100"}));
  c.fit_cmd = add_profile_fit_command(*profile_cmd, c.fit);
}

// `validate DIR`: a calibration results directory, predicted vs measured (tools/cmd_validate.hpp);
// `validate --papers`: the sources' published figures against our predictions (tools/papers.hpp).
CLI::App* add_validate_command(CLI::App& app, std::string& validate_dir, bool& validate_record, PapersOptions& papers) {
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
  return validate_cmd;
}

// Runs the command that was parsed, after the checks that need more than one option: its output
// flags (check_output_flags) and the combinations CLI11 cannot express.
int run_command(Commands& c, std::ostream& out, std::ostream& err) {
  if (c.run_cmd->parsed()) {
    check_output_flags({{"-o", &c.run.output, c.run_cmd->get_option("--output")},
                        {"--trace", &c.run.trace, c.run_cmd->get_option("--trace")},
                        {"--plot", &c.run.plot, c.run_cmd->get_option("--plot")},
                        {"--graphviz", &c.run.graphviz, c.run_cmd->get_option("--graphviz")}});
    return cmd_run(c.run, out, err);
  }
  if (c.tune_cmd->parsed()) {
    check_output_flags({{"-o", &c.tune.output, c.tune_cmd->get_option("--output")}});  // the exports: cmd_tune
    if (c.tune_cmd->get_option("--export-flashoverlap")->count() > 0) {
      c.tune.export_flashoverlap_flag = "--export-flashoverlap";
      err << "note: --export-flashoverlap FILE is the older form of --export flashoverlap FILE (one --export flag "
             "for every export)\n";
    }
    if (c.tune_algo && *c.tune_algo < 0)
      throw UsageError(fmt::format("--algo must be 0 or more (FlashOverlap's AlgoDict index; got {})", *c.tune_algo));
    c.tune.algo = c.tune_algo;
    cmd_tune(c.tune, out, err);
    return kExitOk;
  }
  if (c.sweep_cmd->parsed()) {
    // FILE.partial, the checkpoint beside -o FILE, is an output too.
    std::vector<std::pair<std::string, std::string>> checkpoint;
    if (!c.sweep.output.empty() && c.sweep.output != "-" && c.sweep.output.back() != '/')
      checkpoint.emplace_back("-o's checkpoint", c.sweep.output + ".partial");
    check_output_flags({{"-o", &c.sweep.output, c.sweep_cmd->get_option("--output")},
                        {"--plot", &c.sweep.plot, c.sweep_cmd->get_option("--plot")}},
                       checkpoint);
    // The progress bar goes to a terminal only (and with --progress anywhere).
    c.sweep.progress_if_tty = &err == &std::cerr && ::isatty(STDERR_FILENO);
    cmd_sweep(c.sweep, out, err);
    return kExitOk;
  }
  if (c.plan_cmd->parsed()) {
    check_output_flags({{"-o", &c.plan.output, c.plan_cmd->get_option("--output")}});
    cmd_plan(c.plan, out, err);
    return kExitOk;
  }
  if (c.schemes_cmd->parsed()) {
    cmd_schemes(c.schemes_format, out);
    return kExitOk;
  }
  if (c.collective_cmd->parsed()) {
    check_output_flags({{"-o", &c.collective.output, c.collective_cmd->get_option("--output")}});
    cmd_collective(c.collective, out, err);
    return kExitOk;
  }
  if (c.trace_cmd->parsed()) {
    check_output_flags({{"-o", &c.trace.output, c.trace_cmd->get_option("--output")}});
    cmd_trace(c.trace, out, err);
    return kExitOk;
  }
  if (c.fit_cmd->parsed()) {
    check_output_flags({{"-o", &c.fit.output, c.fit_cmd->get_option("--output")},
                        {"--report", &c.fit.report, c.fit_cmd->get_option("--report")}});
    cmd_profile_fit(c.fit, out, err);
    return kExitOk;
  }
  if (c.list_cmd->parsed()) {
    cmd_profile_list(c.profile.list_format, out);
    return kExitOk;
  }
  if (c.validate_cmd->parsed()) {
    check_output_flags({{"-o", &c.papers.output, c.validate_cmd->get_option("--output")}});
    if (c.papers.papers) {
      if (!c.validate_dir.empty() || c.validate_record)
        throw UsageError("validate: give either DIR (measured results) or --papers, not both");
      return cmd_validate_papers(c.papers, out);
    }
    if (c.validate_dir.empty())
      throw UsageError("validate: give DIR (a calibration results directory) or --papers (the sources' figures)");
    if (c.papers.strict || !c.papers.sources.empty() || !c.papers.output.empty())
      throw UsageError("validate DIR: --strict, --source and --output go with --papers");
    const std::string dir = resolve_input_path(c.validate_dir);
    if (c.validate_record) {
      const std::string record = (fs::path(dir) / "validation.json").string();
      check_output_flags({{"--record", &record, nullptr}});
    }
    cmd_validate(dir, c.papers.format, c.validate_record, out, err);
    return kExitOk;
  }
  if (c.show_cmd->parsed()) {
    const std::string path = fs::path(c.profile.name).extension() == ".yaml" || c.profile.name.find('/') != std::string::npos
                                 ? resolve_input_path(c.profile.name)
                                 : c.profile.name;
    return cmd_profile_show(path, c.profile.format, c.profile.sets, out);
  }
  err << "overlap-sim: no command given\n";
  return kExitUsage;
}

template <typename T>
bool is_a(const std::exception& e) {
  return dynamic_cast<const T*>(&e) != nullptr;
}

// The command line as a message quotes it: "run big.yaml --tp 64" (each word bounded).
std::string command_text(int argc, const char* const* argv) {
  std::string text;
  for (int i = 1; i < argc; ++i) text += (i > 1 ? " " : "") + std::string(argv[i]);
  return bounded_message(text);
}

// Running out of memory, said with what the program was running and what the user can change.
void report_out_of_memory(const std::bad_alloc& e, const std::string& command, std::ostream& err) {
  std::string size;
  if (const auto* oom = dynamic_cast<const OutOfMemory*>(&e))
    size = fmt::format(" (an allocation of {} bytes failed)", oom->bytes());
  err << fmt::format("overlap-sim: error: out of memory while running 'overlap-sim {}'{}: the process may use no more "
                     "memory (ulimit -v, a container's limit, or the machine's); a smaller workload (fewer layers, "
                     "tokens, ranks or sweep points) or fewer threads (-j) needs less\n",
                     command, size);
}

// The exit status of an error a command threw, with its message on `err` (bounded:
// cost_model/bounded_message.hpp). The user's input (a bad file, flag or output path, the OS error in
// an OutputError's message; hardware the model cannot simulate; work that needs more memory than the
// process may use) is exit 2; anything else is an internal error, exit 1.
int report_error(const std::exception& e, const std::string& command, std::ostream& err) {
  if (const auto* oom = dynamic_cast<const std::bad_alloc*>(&e)) {
    try {
      report_out_of_memory(*oom, command, err);
    } catch (const std::bad_alloc&) {
      err << "overlap-sim: error: out of memory\n";  // no memory left even for the message
    }
    return kExitUsage;
  }
  if (is_a<InputError>(e) || is_a<UsageError>(e) || is_a<OutputError>(e)) {
    err << "overlap-sim: error: " << bounded_message(e.what()) << "\n";
    return kExitUsage;
  }
  if (is_a<sim::ResourceError>(e) || is_a<RangeError>(e)) {
    err << "overlap-sim: error: cannot simulate this: " << bounded_message(e.what()) << "\n";
    return kExitUsage;
  }
  err << "overlap-sim: internal error: " << bounded_message(e.what()) << "\n";
  return kExitInternal;
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  if (const auto unknown = unknown_command(argc, argv)) {
    err << "overlap-sim: " << bounded_message(*unknown) << "\nRun 'overlap-sim --help' for usage.\n";
    return kExitUsage;
  }
  CLI::App app{kDescription, "overlap-sim"};
  app.require_subcommand(1);
  // Every option's --help line shows its default (subcommands inherit this).
  app.option_defaults()->always_capture_default();
  app.set_version_flag("--version", version_text());
  app.footer(examples({"overlap-sim run                              # the default scenario: Llama-3-70B MLP, TP=8, 8x H100",
                       "overlap-sim tune --hardware a800-8x-nvlink --gemm 8192x8192x4096 --dtype fp16 --primitive all_reduce --ranks 4",
                       "overlap-sim sweep -o sweep.csv --plot sweep.png",
                       "overlap-sim schemes",
                       "overlap-sim profile list"}));
  Commands c;
  c.run_cmd = add_run_command(app, c.run);
  c.tune_cmd = add_tune_command(app, c.tune, c.tune_algo);
  c.sweep_cmd = add_sweep_command(app, c.sweep);
  c.plan_cmd = add_plan_command(app, c.plan);
  c.schemes_cmd = app.add_subcommand("schemes", "List the schemes with their parameters, sources and the "
                                                        "production knobs they correspond to");
  c.schemes_cmd->add_option("--format", c.schemes_format, "Output format")->check(CLI::IsMember({"table", "json"}));
  c.schemes_cmd->footer(examples({"overlap-sim schemes", "overlap-sim schemes --format json"}));
  add_profile_commands(app, c);
  c.collective_cmd = add_collective_command(app, c.collective);
  c.trace_cmd = add_trace_command(app, c.trace);
  c.validate_cmd = add_validate_command(app, c.validate_dir, c.validate_record, c.papers);

  drop_empty_list_defaults(&app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    err << "overlap-sim: " << bounded_message(e.what())
        << "\nRun 'overlap-sim --help' (or 'overlap-sim SUBCOMMAND --help') for usage.\n";
    return kExitUsage;
  }
  const std::string command = command_text(argc, argv);  // before the work: no memory may be left after it
  try {
    // The files this command reads: no output of it may replace one (cost_model/atomic_file.hpp).
    InputFileLog inputs;
    return run_command(c, out, err);
  } catch (const QuietExit& e) {
    return e.code();
  } catch (const std::exception& e) {
    return report_error(e, command, err);
  }
}

}  // namespace overlap::tools
