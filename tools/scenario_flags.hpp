#pragma once
// The knobs users reach for first, on every command that runs a scenario (run, sweep, tune SCENARIO):
// --hardware NAME|FILE, --tp N and --tokens N. Each stands for the --set it means and goes through the
// same loader and checks; an error in one names the flag and its text, not the --set behind it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cost_model/input_error.hpp"

namespace CLI {
class App;
}

namespace overlap::tools {

struct ScenarioFlags {
  std::string hardware;                // --hardware: hardware=VALUE
  std::optional<std::int64_t> tp;      // --tp: workload.tp=N
  std::optional<std::int64_t> tokens;  // --tokens: see scenario_flag_sets
  std::string model;                   // --model: workload.model=NAME|FILE
};

// Adds --hardware, --tp, --tokens and --model to `cmd` (`with_hardware` false where the command already has
// a --hardware of its own).
void add_scenario_flags(CLI::App* cmd, ScenarioFlags& flags, bool with_hardware = true);

// One flag as the assignment it stands for.
struct FlagAssignment {
  std::string set;   // "workload.tp=4", as the loader receives it (a hardware path made absolute)
  std::string shown; // "workload.tp=4" / "hardware=h200-sxm-8x-nvswitch": as the header shows it
  std::string flag;  // "--tp 4": how an error names it
};

// The assignments of `flags` for the scenario at `scenario_path` loaded with `user_sets` (--set,
// which they follow, so a flag wins over a --set of the same key). --tokens N sets the workload's
// token count: workload.tokens for mlp_tpsp (batch=1, seq=N when the scenario gives batch and seq),
// batch=1 and seq=N for attention and transformer workloads, workload.m (the GEMM's rows: tokens)
// for gemm_collective; a decode_stack has no token count (UsageError naming --tokens).
std::vector<FlagAssignment> scenario_flag_sets(const ScenarioFlags& flags, const std::string& scenario_path,
                                               const std::vector<std::string>& user_sets);

// The header's list of overrides: the --set assignments as typed, then the flags'.
std::vector<std::string> shown_overrides(const std::vector<std::string>& user_sets,
                                         const std::vector<FlagAssignment>& flags);

// "note: hardware NAME: N figures are placeholder defaults ..." when the profile's file marks figures
// as placeholders (the built-in profiles' convention, scenarios/hardware/README.md: "placeholder"
// marks a guess that calibration should replace); "" when it marks none or was not read from a file.
std::string placeholder_note(const std::string& profile_name, const std::string& profile_file);

// Runs `load` (which loads the scenario with the flags' assignments among its --set); an InputError
// that names one of those assignments ("--set workload.tp=3") is thrown again naming the flag
// ("--tp 3").
template <typename F>
auto with_flag_errors(const std::vector<FlagAssignment>& flags, F&& load) -> decltype(load());
[[noreturn]] void rethrow_naming_flags(const InputError& e, const std::vector<FlagAssignment>& flags);

template <typename F>
auto with_flag_errors(const std::vector<FlagAssignment>& flags, F&& load) -> decltype(load()) {
  try {
    return load();
  } catch (const InputError& e) {
    rethrow_naming_flags(e, flags);
  }
}

}  // namespace overlap::tools
