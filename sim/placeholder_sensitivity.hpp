#pragma once
// Which guessed profile values decide a run's answer. A profile lists its guesses, neither published
// nor calibrated, under `placeholders:` with the range a measurement could plausibly find
// (cost_model/hardware_profile.hpp PlaceholderRange). The check re-runs the run's schemes with each
// placeholder at the low and at the high end of its range (at most profile_schema::kMaxPlaceholders
// placeholders, side by side on every core: sim/sweep_parallel.hpp), but only the schemes whose
// latency the value can reach: the engine is a deterministic function of the graph and the node
// (engine.hpp), so a scheme whose graphs (every depth a composed run simulates) have the same digest
// at the new value, on a node that differs at most in the costs of transports its ops do not use,
// has the latency it had as run. Its row is the row as run, its speedup taken against the baseline
// at the new value as evaluate_all takes it; the answer equals re-running every scheme
// (SensitivityRuns::all, which the tests compare it with). It then keeps the ends where the
// ranking changes: the best scheme becomes another (the tied best sets share no scheme), or a
// scheme moves to the other side of the baseline (faster than no_overlap as given, slower at the
// extreme, or the reverse). Swaps between two schemes that are neither the best nor the baseline are
// not reported: they change no decision a user takes from the run.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost_model/hardware_profile.hpp"
#include "sim/metrics.hpp"
#include "sim/scenario.hpp"

namespace overlap::sim {

// What one end of a placeholder's range does to the ranking.
struct RankingChange {
  double value = 0;         // the placeholder at this value (its range's low or high)
  std::string best_before;  // best_label as run; equal to best_after when the best holds
  std::string best_after;
  double best_speedup_before = 0, best_speedup_after = 0;
  // A scheme on the other side of the baseline at this value.
  struct Crossing {
    std::string scheme;  // its label as the best line names it ("data_slicing (chunks=2)")
    double speedup_before = 0, speedup_after = 0;
  };
  std::vector<Crossing> crossings;
  bool best_changed() const { return best_before != best_after; }
};

struct DecidingPlaceholder {
  PlaceholderRange placeholder;
  std::vector<RankingChange> changes;  // at the low and/or the high end, where the ranking changes
};

struct PlaceholderSensitivity {
  std::vector<std::string> checked;  // the placeholders re-run, in profile order
  // Left out: a placeholder the run's --set gave a value ("KEY: set by --set"), or an end of a range
  // where the re-run failed ("KEY = V: why").
  std::vector<std::string> unchecked;
  std::vector<DecidingPlaceholder> deciding;
  // Scheme evaluations the re-runs took (the baseline counted where it was run), and what re-running
  // every requested scheme and the baseline at every end would have taken.
  int scheme_runs = 0;
  int scheme_runs_if_all = 0;
};

// Which schemes a re-run evaluates: those whose inputs the value changes (the check's own way), or
// every one (what the cheap way must equal; tests and benchmarks).
enum class SensitivityRuns { changed_inputs, all };

// Re-loads the scenario with extra --set assignments (the caller's loader, with the run's own sets).
using ScenarioReloader = std::function<Scenario(const std::vector<std::string>& extra_sets)>;

// The check for a run of `requests` whose results are `results` on `sc` (a failed row takes no part).
// `given_sets` are the run's --set assignments: a placeholder they set is the user's value, not a guess.
PlaceholderSensitivity placeholder_sensitivity(const Scenario& sc, const std::vector<SchemeRequest>& requests,
                                               const std::vector<SchemeResult>& results,
                                               const std::vector<std::string>& given_sets,
                                               const ScenarioReloader& reload,
                                               SensitivityRuns runs = SensitivityRuns::changed_inputs);

// The rows of `requests` on `at` (the scenario as run with one profile value changed), latency and
// speedup only, as evaluate_all gives them with keep_going and latency_only: SensitivityRuns::all
// evaluates every request; changed_inputs evaluates only those whose inputs differ from `as_run`'s
// and takes the others' rows from `results` (the run as given). `evaluated`: how many scheme
// evaluations it took (the baseline included).
std::vector<SchemeResult> rerun_schemes(const Scenario& as_run, const Scenario& at, const std::vector<SchemeRequest>& requests,
                                        const std::vector<SchemeResult>& results, SensitivityRuns runs, int* evaluated = nullptr);

// One line per deciding placeholder (the table prints them after its best: line); when none decides,
// one line naming the placeholders checked; "" when the profile marks none.
std::string format_placeholder_sensitivity(const PlaceholderSensitivity& s);
// {"checked": [key...], "unchecked": [...], "deciding": [{key, value, low, high, source, changes:
// [{value, best_before, best_after, crossings: [{scheme, speedup_before, speedup_after}]}]}]}
nlohmann::json placeholder_sensitivity_json(const PlaceholderSensitivity& s);

}  // namespace overlap::sim
