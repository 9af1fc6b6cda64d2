// overlap_sim._core: the commands of tools/ (tools/cmd_*.hpp) called in-process from Python. Each
// function runs one command with --format json into a string stream, with the GIL released, and
// returns (exit status, stdout text, stderr text, error); the Python side (overlap_sim/__init__.py)
// parses the JSON and raises the error. No C++ exception crosses into Python here: every one is caught
// and described as data, so a bad input can never take the interpreter down, and the Python layer
// builds the exception with its attributes (file, line, key) while holding the GIL.
// Beside the commands: `check_scenario` and `scenario_tree` (load a scenario with its overrides to
// validate it, or to read its keys) and `trace`, for the object API (overlap_sim/objects.py).
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <yaml-cpp/yaml.h>

#include <exception>
#include <new>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "cost_model/atomic_file.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/input_file.hpp"
#include "cost_model/overrides.hpp"
#include "cost_model/yaml_reader.hpp"
#include "cost_model/profile_json.hpp"
#include "cost_model/profile_loader.hpp"
#include "cost_model/units.hpp"
#include "sim/engine.hpp"
#include "tools/cmd_collective.hpp"
#include "tools/cmd_papers.hpp"
#include "tools/cmd_profile.hpp"
#include "tools/cmd_profile_fit.hpp"
#include "tools/cmd_run.hpp"
#include "tools/cmd_sweep.hpp"
#include "tools/cmd_trace.hpp"
#include "tools/cmd_tune.hpp"
#include "tools/cmd_validate.hpp"
#include "tools/command.hpp"
#include "tools/command_errors.hpp"
#include "tools/input_paths.hpp"

namespace nb = nanobind;
namespace fs = std::filesystem;
using namespace overlap;
using namespace overlap::tools;

namespace {

// What went wrong, as the CLI would classify it (tools/cli.cpp report_error). Exit status 2 there:
// kind "input" (InputError, with its location), "usage" (an option value: UsageError), "output" (an
// output that cannot be written: OutputError), "simulate" (hardware or a size the model cannot
// simulate: ResourceError, RangeError), "memory" (running out of memory). Exit status 1: "internal"
// (anything else). Empty kind: no error. The Python side maps each kind to an exception class.
struct Failure {
  std::string kind;
  std::string message;  // as the CLI prints it after "overlap-sim: error: "
  std::string file;
  int line = 0;
  std::string key;
  std::string detail;   // InputError's message without the location
};

// InputError's what() as cost_model/input_error.cpp formats it, rebuilt from its parts: what() is a C
// string, so a NUL that a scenario value brought into the message would cut it there.
std::string input_error_text(const InputError& e) {
  std::string out = e.file().empty() ? std::string("<input>") : e.file();
  if (e.line() > 0) out.append(":").append(std::to_string(e.line()));
  out.append(": ");
  if (!e.key_path().empty()) out.append(e.key_path()).append(": ");
  return out.append(e.message());
}

using Outcome = std::tuple<int, std::string, std::string, std::tuple<std::string, std::string, std::string, int,
                                                                     std::string, std::string>>;

template <typename F>
Outcome call(F&& command) {
  std::ostringstream out, err;
  int rc = kExitOk;
  Failure f;
  {
    // Simulations take milliseconds to minutes; other Python threads run meanwhile.
    nb::gil_scoped_release release;
    try {
      rc = command(out, err);
    } catch (const InputError& e) {
      f = {"input", input_error_text(e), e.file(), e.line(), e.key_path(), e.message()};
    } catch (const UsageError& e) {
      f = {"usage", e.what(), "", 0, "", e.what()};
    } catch (const OutputError& e) {
      f = {"output", e.what(), "", 0, "", e.what()};
    } catch (const sim::ResourceError& e) {
      f = {"simulate", std::string("cannot simulate this: ") + e.what(), "", 0, "", e.what()};
    } catch (const RangeError& e) {
      f = {"simulate", std::string("cannot simulate this: ") + e.what(), "", 0, "", e.what()};
    } catch (const QuietExit& e) {
      rc = e.code();
    } catch (const std::bad_alloc&) {
      f = {"memory", "out of memory", "", 0, "", "out of memory"};
    } catch (const std::exception& e) {
      f = {"internal", e.what(), "", 0, "", e.what()};
    } catch (...) {
      f = {"internal", "unknown C++ exception", "", 0, "", "unknown C++ exception"};
    }
  }
  if (!f.kind.empty()) rc = f.kind == "internal" ? kExitInternal : kExitUsage;
  return {rc, out.str(), err.str(), {f.kind, f.message, f.file, f.line, f.key, f.detail}};
}

// A command that reports on its streams and throws on failure (tools/cmd_*.hpp): exit 0 when it returns.
template <typename Options>
Outcome call_command(void (*command)(const Options&, std::ostream&, std::ostream&), const Options& o) {
  return call([&](std::ostream& out, std::ostream& err) {
    command(o, out, err);
    return kExitOk;
  });
}

Outcome run(std::string scenario, std::vector<std::string> sets, std::string scheme, std::string fidelity,
            std::vector<std::string> params, std::string format, std::string placeholder_check) {
  RunOptions o;
  o.placeholder_check = std::move(placeholder_check);
  o.scenario = std::move(scenario);
  o.sets = std::move(sets);
  o.scheme = std::move(scheme);
  o.fidelity = std::move(fidelity);
  o.params = std::move(params);
  o.format = std::move(format);
  return call([&](std::ostream& out, std::ostream& err) { return cmd_run(o, out, err); });
}

Outcome tune(std::string scenario, std::vector<std::string> sets, std::string hardware, std::string gemm,
             std::string dtype, std::string primitive, int ranks, std::string search, int budget, int top, int jobs,
             bool sm_margin, std::vector<std::string> export_spec, std::string export_flashoverlap) {
  TuneOptions o;
  o.scenario = std::move(scenario);
  o.sets = std::move(sets);
  o.hardware = std::move(hardware);
  o.gemm = std::move(gemm);
  o.dtype = std::move(dtype);
  o.primitive = std::move(primitive);
  o.ranks = ranks;
  o.search = std::move(search);
  o.budget = budget;
  o.top = top;
  o.jobs = jobs;
  o.sm_margin = sm_margin;
  // --export FORMAT FILE / --export-flashoverlap FILE: written by the command itself, atomically and
  // never over a directory, device or socket (cost_model/atomic_file.hpp), as from the CLI.
  o.export_spec = std::move(export_spec);
  o.export_flashoverlap = std::move(export_flashoverlap);
  o.format = "json";
  return call_command(cmd_tune, o);
}

Outcome sweep(std::string scenario, std::vector<std::string> sweeps, std::vector<std::string> sets,
              std::vector<std::string> no_axes, bool only_axes, int jobs) {
  SweepOptions o;
  o.scenario = std::move(scenario);
  o.sweeps = std::move(sweeps);
  o.sets = std::move(sets);
  o.no_axes = std::move(no_axes);
  o.only_axes = only_axes;
  o.jobs = jobs;
  o.format = "json";
  o.progress = false;
  o.progress_if_tty = false;  // no progress bar drawn into a string
  return call_command(cmd_sweep, o);
}

Outcome collective(std::string primitive, std::string hardware, std::optional<int> ranks, std::string min_bytes,
                   std::string max_bytes, std::string step_factor, std::string step_bytes, std::string dtype,
                   std::string algorithm, std::string protocol, std::vector<std::string> sets,
                   std::vector<std::string> export_spec) {
  CollectiveOptions o;
  o.primitive = std::move(primitive);
  o.hardware = std::move(hardware);
  o.ranks = ranks;
  o.min_bytes = std::move(min_bytes);
  o.max_bytes = std::move(max_bytes);
  o.step_factor = std::move(step_factor);
  o.step_bytes = std::move(step_bytes);
  o.dtype = std::move(dtype);
  o.algorithm = std::move(algorithm);
  o.protocol = std::move(protocol);
  o.sets = std::move(sets);
  o.export_spec = std::move(export_spec);
  o.format = "json";
  return call_command(cmd_collective, o);
}

// `validate DIR` or `validate --papers [--source S]...`, with tools/cli.cpp's checks of the pair.
Outcome validate(std::string dir, bool papers, std::vector<std::string> sources) {
  return call([&](std::ostream& out, std::ostream& err) {
    if (papers) {
      if (!dir.empty()) throw UsageError("validate: give either DIR (measured results) or papers=True, not both");
      PapersOptions p;
      p.papers = true;
      p.format = "json";
      p.sources = sources;
      return cmd_validate_papers(p, out);
    }
    if (dir.empty()) throw UsageError("validate: give DIR (a calibration results directory) or papers=True");
    if (!sources.empty()) throw UsageError("validate DIR: sources go with papers=True");
    cmd_validate(resolve_input_path(dir), "json", false, out, err);
    return kExitOk;
  });
}

// `profile show NAME|PATH --format json` (tools/cmd_profile.cpp): the resolved profile, loaded here so
// that the JSON is all the command writes. A path (a '/' or .yaml) is resolved as the CLI resolves it.
Outcome profile_show(std::string name, std::vector<std::string> sets) {
  return call([&](std::ostream& out, std::ostream&) {
    const bool path = fs::path(name).extension() == ".yaml" || name.find('/') != std::string::npos;
    const HardwareProfile p = load_profile(path ? resolve_input_path(name) : name, default_hardware_dir(), sets);
    out << profile_to_json(p).dump(2) << "\n";
    return kExitOk;
  });
}

Outcome profile_list() {
  return call([&](std::ostream& out, std::ostream&) {
    cmd_profile_list("json", out);
    return kExitOk;
  });
}

// `trace FILE... --format json` (tools/cmd_trace.hpp): the overlap report, or with `kernels` every
// kernel group per rank (`--kernels`).
Outcome trace(std::vector<std::string> files, std::string step_prefix, std::string hardware, bool kernels,
              std::vector<std::string> comm_kernels, std::vector<std::string> compute_kernels) {
  TraceOptions o;
  o.files = std::move(files);
  o.format = "json";
  o.step_prefix = std::move(step_prefix);
  o.hardware = std::move(hardware);
  o.kernels = kernels;
  o.comm_kernels = std::move(comm_kernels);
  o.compute_kernels = std::move(compute_kernels);
  return call([&](std::ostream& out, std::ostream& err) {
    if (o.files.empty()) throw UsageError("trace: give at least one trace file");
    cmd_trace(o, out, err);
    return kExitOk;
  });
}

// `profile fit FILE... --hardware BASE -o OUTPUT --format json` (tools/cmd_profile_fit.hpp): a profile
// whose launch and kernel-rate keys are fitted to profiler traces, written to OUTPUT; the report on
// standard output.
Outcome profile_fit(std::vector<std::string> files, std::string hardware, std::string output, std::string name,
                    int min_samples) {
  ProfileFitOptions o;
  o.files = std::move(files);
  o.hardware = std::move(hardware);
  o.output = std::move(output);
  o.name = std::move(name);
  o.min_samples = min_samples;
  o.format = "json";
  return call([&](std::ostream& out, std::ostream& err) {
    if (o.files.empty()) throw UsageError("profile fit: give at least one trace file");
    if (o.output.empty()) throw UsageError("profile fit: give the fitted profile's output path");
    cmd_profile_fit(o, out, err);
    return kExitOk;
  });
}

// Loads SCENARIO with SETS exactly as `run` does (its sweep block read for shape only) and prints
// nothing: every mistake `run` would report before simulating is raised, in milliseconds.
Outcome check_scenario(std::string scenario, std::vector<std::string> sets) {
  return call([&](std::ostream&, std::ostream&) {
    ScenarioLoad load = scenario_load(scenario, sets, ScenarioFlags{});
    load.options.validate_sweep = false;
    (void)sim::load_scenario_file(load.path, load.options);
    return kExitOk;
  });
}

// A YAML tree as JSON with its maps' keys in the file's order (nlohmann::json would sort them);
// scalars typed as sim::yaml_text_to_json reads them (int, number, bool, else string).
nlohmann::ordered_json tree_json(const YAML::Node& n) {
  if (n.IsMap()) {
    nlohmann::ordered_json obj = nlohmann::ordered_json::object();
    for (const auto& kv : n) obj[kv.first.Scalar()] = tree_json(kv.second);
    return obj;
  }
  if (n.IsSequence()) {
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const auto& e : n) arr.push_back(tree_json(e));
    return arr;
  }
  if (n.IsNull()) return nullptr;
  // A quoted scalar ("8") stays a string, as the loader reads it.
  if (n.Tag() == "!") return n.Scalar();
  // A plain scalar whose text reads as a collection ("a: b" in a description) is the string it is.
  const nlohmann::json typed = sim::yaml_text_to_json(n.Scalar());
  if (!typed.is_primitive()) return n.Scalar();
  return nlohmann::ordered_json::parse(typed.dump());
}

// The scenario's YAML tree with SETS applied, as JSON: what a key holds after the overrides, for
// reading fields from Python. Not validated.
Outcome scenario_tree(std::string scenario, std::vector<std::string> sets) {
  return call([&](std::ostream& out, std::ostream&) {
    const ScenarioLoad load = scenario_load(scenario, sets, ScenarioFlags{});
    YAML::Node root = parse_yaml(read_input_file(load.path, "scenario"), load.path);
    apply_overrides(root, load.options.sets);
    out << tree_json(root).dump() << "\n";
    return kExitOk;
  });
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "overlap-sim's commands in-process (tools/cmd_*.hpp); use the overlap_sim package, not this module";
  m.def("run", &run, nb::arg("scenario"), nb::arg("sets"), nb::arg("scheme"), nb::arg("fidelity"), nb::arg("params"),
        nb::arg("format") = "json", nb::arg("placeholder_check") = "auto");
  m.def("tune", &tune, nb::arg("scenario"), nb::arg("sets"), nb::arg("hardware"), nb::arg("gemm"), nb::arg("dtype"),
        nb::arg("primitive"), nb::arg("ranks"), nb::arg("search"), nb::arg("budget"), nb::arg("top"), nb::arg("jobs"),
        nb::arg("sm_margin"), nb::arg("export_spec") = std::vector<std::string>{},
        nb::arg("export_flashoverlap") = std::string{});
  m.def("sweep", &sweep, nb::arg("scenario"), nb::arg("sweeps"), nb::arg("sets"), nb::arg("no_axes"),
        nb::arg("only_axes"), nb::arg("jobs"));
  m.def("collective", &collective, nb::arg("primitive"), nb::arg("hardware"), nb::arg("ranks").none(),
        nb::arg("min_bytes"), nb::arg("max_bytes"), nb::arg("step_factor"), nb::arg("step_bytes"), nb::arg("dtype"),
        nb::arg("algorithm"), nb::arg("protocol"), nb::arg("sets"), nb::arg("export_spec") = std::vector<std::string>{});
  m.def("validate", &validate, nb::arg("dir"), nb::arg("papers"), nb::arg("sources"));
  m.def("profile_show", &profile_show, nb::arg("name"), nb::arg("sets"));
  m.def("profile_list", &profile_list);
  m.def("trace", &trace, nb::arg("files"), nb::arg("step_prefix"), nb::arg("hardware"), nb::arg("kernels"),
        nb::arg("comm_kernels"), nb::arg("compute_kernels"));
  m.def("profile_fit", &profile_fit, nb::arg("files"), nb::arg("hardware"), nb::arg("output"), nb::arg("name"),
        nb::arg("min_samples"));
  m.def("check_scenario", &check_scenario, nb::arg("scenario"), nb::arg("sets"));
  m.def("scenario_tree", &scenario_tree, nb::arg("scenario"), nb::arg("sets"));
  // The CLI's -j range (tools/command.hpp), checked by the Python side before a command runs.
  m.attr("MAX_JOBS") = kMaxJobs;
  m.def("source_dir", [] { return source_dir(); }, "The source tree the package reads scenarios/ from");
}
