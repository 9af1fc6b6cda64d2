#pragma once
// Scenario files (design.md "Scenario files"): one YAML document naming the hardware (a built-in
// profile or an inline one), the workload, the schemes to compare, the collective fidelity and
// optional sweep axes. `--set a.b.c=value` overrides are applied to the YAML tree before validation,
// so an override is checked exactly like a value written in the file. Every mistake is an
// InputError naming the file, the line and the key path (the CLI exits 2 on it).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost_model/hardware_profile.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/workload.hpp"

namespace overlap::sim {

// One scheme to run, with the parameters the scenario gives it (only those written; the builder
// supplies defaults for the rest). Parameters are checked against SchemeInfo::params.
struct SchemeSpec {
  std::string name;
  nlohmann::json params = nlohmann::json::object();
  int line = 0;  // where the scenario names it (0: not written, e.g. "every scheme that applies")
};

// One sweep axis: key paths of the scenario and the values they take. A single key takes one value
// per point (`workload.k: [2048, 4096]`); keys joined by commas move together, each value a list with
// one entry per key (`"workload.batch,workload.seq": [[64, 1024], [32, 2048]]`, CommFuse Table 4's
// (B, S) pairs). Values are kept as YAML flow text so a sweep point is a list of `--set key=value`
// assignments applied to the scenario's tree.
struct SweepAxis {
  std::vector<std::string> keys;
  std::vector<std::vector<std::string>> values;  // [point][key]
  int line = 0;
};

struct Scenario {
  std::string name;         // `name:` or the file's stem
  std::string description;  // `description:` (free text; sources of the numbers)
  std::string file;         // the scenario file ("" for inline text)
  std::string hardware_name;  // the profile's name (built-in name, or the inline profile's `name`)
  HardwareProfile hardware;
  Workload workload;
  std::vector<SchemeSpec> schemes;  // never empty after loading
  Fidelity fidelity = Fidelity::curve;
  std::vector<SweepAxis> sweep;
  // The scenario's YAML text and the overrides applied to it: a sweep point is
  // load_scenario_text(text, file, {sets + point}).
  std::string text;
  std::vector<std::string> sets;
};

struct ScenarioOptions {
  std::vector<std::string> sets;  // `--set a.b.c=value`, applied in order
  std::string hardware_dir;       // built-in profiles; "" = cost_model's default_hardware_dir()
  // Read the sweep and check every value by loading the scenario with it. Off when loading the
  // points of a sweep already checked: the sweep is then left out (`sweep` stays empty).
  bool validate_sweep = true;
};

// Loads a scenario file. Throws InputError (file, line, key) for every kind of bad input.
Scenario load_scenario_file(const std::string& path, const ScenarioOptions& options = {});
// Loads scenario YAML text; `file` names it in messages and resolves relative profile paths.
Scenario load_scenario_text(const std::string& yaml_text, const std::string& file,
                            const ScenarioOptions& options = {});
// The grid of a scenario's sweep: one list of `key=value` assignments per point (the cartesian
// product of the axes in file order, the last axis varying fastest). Empty when there is no sweep.
std::vector<std::vector<std::string>> sweep_points(const Scenario& scenario);

const char* fidelity_name(Fidelity f);

}  // namespace overlap::sim
