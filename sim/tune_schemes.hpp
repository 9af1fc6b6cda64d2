#pragma once
// `overlap-sim tune SCENARIO`: every scheme of a scenario with its knobs searched (design.md
// "Tuning": "best chunk count / m / SM margin for other schemes"). The knobs and the values tried come
// from each scheme's parameter table (SchemeParam::tune_values, tune_when), so a scheme that gains a
// knob is tuned without a change here. FlashOverlap's wave groups are also searched in the engine
// (sim/tune_wave_groups.hpp) and the engine's best partition joins the candidates.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/metrics.hpp"
#include "sim/scenario.hpp"

namespace overlap::sim {

struct SchemeTuneCandidate {
  std::string scheme;
  nlohmann::json params;  // the knobs set (only those the candidate sets; the rest are defaults)
  Ps latency_ps = 0;
  double speedup = 0;     // baseline latency / latency
  std::string origin;     // "scenario" (as written), "grid", "wave-group search"
  // The workload keys it changes, below `workload.` ({"parallel.bucket_mb": 100}); empty = as written.
  nlohmann::json workload = nlohmann::json::object();
};

struct SchemeTuneEntry {
  std::string scheme;
  std::vector<SchemeTuneCandidate> candidates;  // best first (ties: enumeration order)
  SchemeResult best;                            // full metrics of candidates.front()
};

struct SchemeTuneResult {
  std::string baseline;     // no_overlap, or tp_baseline for decode stacks
  Ps baseline_ps = 0;
  std::vector<SchemeTuneEntry> schemes;  // in the scenario's order, each scheme once
  std::size_t best = 0;                  // index into schemes of the fastest
  int evaluated = 0;                     // engine runs of candidates
  double search_ms = 0;
  // Grid settings this hardware or workload cannot run (copy_sms 32 on a 32-SM rank), each with the
  // scheme's reason: left out of the ranking, listed. The scenario's own settings are never here:
  // one of those that cannot run is an error.
  std::vector<std::string> skipped;
  // Settings the caller's filter (tune_schemes `keep`) left out: one line per scheme and reason, with
  // how many and the first (the grid and scenario settings), or how many (the per-name search). Not
  // run, not ranked.
  std::vector<std::string> left_out;
};

// The knob settings to try for one scheme: the cartesian product of its tuned parameters' values
// (parameter table order, the last varying fastest), a conditional knob (tune_when: "other=value"
// conditions joined by " and ", "workload.dtype=fp8" one of the workload) only where its
// condition holds, and only knobs that apply to `workload` (param_applies: a training-only knob only
// where there is a backward). The first entry is the empty object (every default).
std::vector<nlohmann::json> scheme_knob_grid(const SchemeInfo& scheme, const Workload& workload);

// Grouped knobs: a parameter named "<group>.<knob>" (te_userbuffers' per-GEMM-name settings) is left
// out of the cartesian grid above; tune searches its group's grid (group_knob_grid: `base` with the
// group's tuned knobs varied, tune_when holding) group by group from a scheme's best (coordinate
// descent; tune_schemes). knob_groups: the groups with a tuned knob that applies to `workload`.
bool is_grouped_knob(const std::string& name);
std::vector<std::string> knob_groups(const SchemeInfo& scheme, const Workload& workload);
std::vector<nlohmann::json> group_knob_grid(const SchemeInfo& scheme, const Workload& workload,
                                            const nlohmann::json& base, const std::string& group);

// The workload keys tune also searches, as {key below workload.: value} settings, the scenario's own
// first ({}): on a training step with data parallelism, parallel.bucket_mb (DDP / ZeRO-1/2 gradient
// buckets: 10, 25, 100, 400 MiB) or parallel.prefetch (ZeRO-3: 1, 2 layers ahead). Each scheme's knob
// grid is tried with each setting. A forward workload has only {}.
std::vector<nlohmann::json> workload_knob_grid(const Workload& workload);
// `workload` with the keys of a workload_knob_grid setting applied.
Workload with_workload_knobs(const Workload& workload, const nlohmann::json& knobs);

// What tune may pick: "" keeps a setting, otherwise why it is left out. `tune --export te-userbuffers`
// passes what TransformerEngine can deploy (tools/export_production.hpp te_undeployable), so the
// exported setting is the one simulated (design.md "exports: only settings the target stack can
// deploy").
using TuneFilter =
    std::function<std::string(const std::string& scheme, const Workload& workload, const nlohmann::json& params)>;

// Tunes every scheme of the scenario (each name once; the scenario's own parameters are tried too).
// `jobs` threads evaluate candidates (results do not depend on it). A setting `keep` refuses is not
// run (SchemeTuneResult::left_out says which and why).
SchemeTuneResult tune_schemes(const Scenario& scenario, int jobs = 1, const TuneFilter& keep = {});

nlohmann::json to_json(const SchemeTuneResult& r, const Scenario& scenario, int top);
std::string format_scheme_tune_table(const SchemeTuneResult& r, const Scenario& scenario, int top);

}  // namespace overlap::sim
