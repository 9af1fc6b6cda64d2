#pragma once
// Scenario files (design.md "Scenario files"): one YAML document naming the hardware (a built-in
// profile or an inline one), the workload, the schemes to compare, the collective fidelity and
// optional sweep axes. `--set a.b.c=value` overrides are applied to the YAML tree before validation,
// so an override is checked exactly like a value written in the file. Every mistake is an
// InputError naming the file, the line and the key path (the CLI exits 2 on it).
#include <optional>
#include <map>
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
  // Where each parameter given in the scenario is written, so an error a builder finds in one (a
  // value this workload cannot use) is located at that knob's own line.
  std::map<std::string, int> param_lines = {};
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
  // With validate_sweep, also load the scenario once per axis value to check that value alone.
  // `overlap-sim sweep` turns this off: it checks every point (every combination of values) itself
  // and reports all the bad ones at once.
  bool check_sweep_values = true;
  // Without validate_sweep, still read the sweep block (keys, lists of values and, with
  // check_sweep_values, each value loaded alone on the file as written, without `sets`) so a broken
  // sweep is refused by every command, never silently ignored. Off for the points of a sweep being
  // run: their scenario text has the block blanked or was read once already.
  bool check_ignored_sweep = true;
};

// Loads a scenario file. Throws InputError (file, line, key) for every kind of bad input.
Scenario load_scenario_file(const std::string& path, const ScenarioOptions& options = {});
// Loads scenario YAML text; `file` names it in messages and resolves relative profile paths.
Scenario load_scenario_text(const std::string& yaml_text, const std::string& file,
                            const ScenarioOptions& options = {});
// The grid of a scenario's sweep: one list of `key=value` assignments per point (the cartesian
// product of the axes in file order, the last axis varying fastest). Empty when there is no sweep.
std::vector<std::vector<std::string>> sweep_points(const Scenario& scenario);

// `run --param key=value`: `base` (a scheme's parameters) with each assignment applied, the value read
// as YAML and checked against the scheme's parameter table exactly like a value written under
// `params:` in a scenario (the same check_param_value, on `hardware`). Throws InputError (key
// "--param KEY") for an unknown knob, a missing '=' or a value of the wrong type or out of range.
nlohmann::json apply_scheme_params(const SchemeInfo& scheme, nlohmann::json base,
                                   const std::vector<std::string>& assignments, const HardwareProfile& hardware);

// A YAML value written as text ("900", "ring", "[1, 2]") as JSON: int, then number, then bool, then
// string for scalars; lists and maps element by element. Text that is not YAML stays a string.
nlohmann::json yaml_text_to_json(const std::string& text);

const char* fidelity_name(Fidelity f);

// Work budgets, checked on the workload before any graph is built (README "Bad input"), so every
// input inside the documented ranges finishes in seconds or is refused at once:
//   - at most kMaxSimulatedRanks ranks: routes and collectives cost time quadratic in the ranks
//     (512 ranks take about 4 s for every scheme of a GEMM + all-reduce, 4096 more than a minute);
//   - at most kMaxGemmTilesPerRank GEMM output tiles of 128 x 128 per rank, over every GEMM of the
//     workload (every layer of a transformer or decode stack): FlashOverlap's wave groups and the
//     tuners walk the tiles wave by wave (a 16777216^3 GEMM has 1.7e10 tiles per rank).
//   - at most kMaxMoeExchangePairs EP rank pairs over the MoE layers (ranks^2 x MoE layers): every
//     dispatch and combine is an all-to-all of ranks^2 routed transfers that the schemes split further
//     (a DeepSeek-V3 MoE layer at EP 256 takes about 10 s and 240 MB for its slowest scheme,
//     moe_tile_fused, on a 2-core machine; EP 512 four times that).
inline constexpr int kMaxSimulatedRanks = 512;
inline constexpr std::int64_t kMaxMoeExchangePairs = std::int64_t{1} << 16;  // 65,536: EP 256, one layer
inline constexpr std::int64_t kMaxGemmTilesPerRank = std::int64_t{1} << 22;  // 4,194,304
struct WorkOverBudget {
  std::string key;      // the workload key to name ("tp", "m", "tokens", ...)
  std::string message;  // the estimate, the limit and what to do
};
// nullopt when the workload is inside every budget. A transformer deeper than its dense prefix + 4
// layers counts the layers it is simulated over (sim/layer_composition.hpp), not all of them.
std::optional<WorkOverBudget> work_over_budget(const Workload& w);
// Every GEMM output tile of the workload per rank, all layers counted (what a whole simulation walks).
std::int64_t gemm_tiles_per_rank(const Workload& w);

}  // namespace overlap::sim
