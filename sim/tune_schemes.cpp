// Scheme-level tuning (sim/tune_schemes.hpp).
#include "sim/tune_schemes.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "cost_model/input_error.hpp"
#include "sim/backward_shapes.hpp"
#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "sim/node_builder.hpp"
#include "sim/report.hpp"
#include "sim/sweep_parallel.hpp"
#include "sim/tune_wave_groups.hpp"

namespace overlap::sim {

namespace {

// The value a knob has in `config`: set there, else the parameter table's default (as text).
std::string knob_text(const SchemeInfo& scheme, const nlohmann::json& config, const std::string& name) {
  if (config.contains(name)) {
    const nlohmann::json& v = config.at(name);
    return v.is_string() ? v.get<std::string>() : v.dump();
  }
  for (const SchemeParam& p : scheme.params)
    if (p.name == name) return default_text(p);
  return {};
}

// tune_when: "other=value" conditions joined by " and "; "workload.dtype=fp8" tests the workload (a
// knob TE allows for FP8 GEMMs only is not tried, nor reported as set, on a bf16 workload).
bool condition_holds(const SchemeInfo& scheme, const nlohmann::json& config, const std::string& when,
                     const Workload& workload) {
  if (when.empty()) return true;
  const std::string sep = " and ";
  const auto and_at = when.find(sep);
  if (and_at != std::string::npos)
    return condition_holds(scheme, config, when.substr(0, and_at), workload) &&
           condition_holds(scheme, config, when.substr(and_at + sep.size()), workload);
  const auto eq = when.find('=');
  if (eq == std::string::npos) throw std::logic_error("tune_when must be other=value (got '" + when + "')");
  const std::string key = when.substr(0, eq), value = when.substr(eq + 1);
  if (key == "workload.dtype") return dtype_name(workload_dtype(workload)) == value;
  if (key.starts_with("workload.")) throw std::logic_error("tune_when: no workload condition '" + key + "'");
  return knob_text(scheme, config, key) == value;
}

std::string knobs_text(const nlohmann::json& params) {
  if (!params.is_object() || params.empty()) return "defaults";
  std::string out;
  for (auto it = params.begin(); it != params.end(); ++it)
    out += (out.empty() ? "" : " ") + it.key() + "=" + (it->is_string() ? it->get<std::string>() : it->dump());
  return out;
}

// A candidate's configuration in one line: its knobs, then the workload keys it changes without their
// "workload." ("chunks=4 parallel.bucket_mb=100": the table's column stays narrow; the JSON's
// "workload" object names them in full); "defaults" when it sets neither.
std::string config_text(const SchemeTuneCandidate& c) {
  std::string out = c.params.is_object() && !c.params.empty() ? knobs_text(c.params) : std::string();
  if (c.workload.is_object())
    for (auto it = c.workload.begin(); it != c.workload.end(); ++it)
      out += (out.empty() ? "" : " ") + it.key() + "=" + it->dump();
  return out.empty() ? "defaults" : out;
}

// The workload keys tune searches beside the schemes' knobs: the data-parallel traffic's shape, which
// every scheme of a training step shares, so each scheme's knob grid is tried with each value.
// PyTorch DDP's bucket_cap_mb defaults to 25 MiB and Megatron-LM's DDP bucket is 40M parameters
// (160 MiB of fp32 gradients) or more, so the grid spans both; FSDP2 prefetches one layer ahead by
// default (workload.parallel.prefetch).
struct WorkloadKnob {
  const char* key;  // below workload.
  std::vector<double> values;
  bool (*applies)(const Workload&);
  double (*get)(const Workload&);
  void (*set)(Workload&, double);
};

const std::vector<WorkloadKnob>& workload_knobs() {
  static const std::vector<WorkloadKnob> knobs = {
      {"parallel.bucket_mb", {10, 25, 100, 400},
       [](const Workload& w) { return w.training.parallel.dp > 1 && w.training.parallel.fsdp != Sharding::zero3; },
       [](const Workload& w) { return w.training.parallel.bucket_mb; },
       [](Workload& w, double v) { w.training.parallel.bucket_mb = v; }},
      {"parallel.prefetch", {1, 2},
       [](const Workload& w) { return w.training.parallel.dp > 1 && w.training.parallel.fsdp == Sharding::zero3; },
       [](const Workload& w) { return static_cast<double>(w.training.parallel.prefetch); },
       [](Workload& w, double v) { w.training.parallel.prefetch = static_cast<int>(v); }}};
  return knobs;
}

}  // namespace

std::vector<nlohmann::json> workload_knob_grid(const Workload& workload) {
  std::vector<nlohmann::json> grid = {nlohmann::json::object()};
  for (const WorkloadKnob& k : workload_knobs()) {
    if (!k.applies(workload)) continue;
    std::vector<nlohmann::json> next;
    for (const nlohmann::json& config : grid) {
      next.push_back(config);  // the scenario's own value
      for (double v : k.values) {
        if (v == k.get(workload)) continue;
        nlohmann::json c = config;
        if (v == static_cast<double>(static_cast<std::int64_t>(v))) c[k.key] = static_cast<std::int64_t>(v);
        else c[k.key] = v;
        next.push_back(std::move(c));
      }
    }
    grid = std::move(next);
  }
  return grid;
}

Workload with_workload_knobs(const Workload& workload, const nlohmann::json& knobs) {
  Workload w = workload;
  if (!knobs.is_object()) return w;
  for (auto it = knobs.begin(); it != knobs.end(); ++it) {
    const auto k = std::find_if(workload_knobs().begin(), workload_knobs().end(),
                                [&](const WorkloadKnob& x) { return it.key() == x.key; });
    if (k == workload_knobs().end()) throw std::logic_error("tune: unknown workload knob '" + it.key() + "'");
    k->set(w, it->get<double>());
  }
  return w;
}

namespace {

// The cartesian expansion both grids share: from `start`, each tuned knob that applies to `workload`
// and that `select` takes (parameter table order, the last varying fastest) crossed with the
// configurations so far; a knob whose condition (tune_when) does not hold in a configuration keeps
// its value there (its default, or what `start` set): one configuration, not one per value.
template <typename Select>
std::vector<nlohmann::json> expand_knobs(const SchemeInfo& scheme, const Workload& workload,
                                         const nlohmann::json& start, Select select) {
  std::vector<nlohmann::json> grid = {start};
  for (const SchemeParam& p : scheme.params) {
    if (p.tune_values.empty() || !param_applies(p, workload) || !select(p)) continue;
    std::vector<nlohmann::json> next;
    for (const nlohmann::json& config : grid) {
      if (!condition_holds(scheme, config, p.tune_when, workload)) {
        next.push_back(config);
        continue;
      }
      for (const nlohmann::json& v : p.tune_values) {
        nlohmann::json c = config;
        c[p.name] = v;
        next.push_back(std::move(c));
      }
    }
    grid = std::move(next);
  }
  return grid;
}

}  // namespace

bool is_grouped_knob(const std::string& name) { return name.find('.') != std::string::npos; }

std::vector<std::string> knob_groups(const SchemeInfo& scheme, const Workload& workload) {
  std::vector<std::string> out;
  for (const SchemeParam& p : scheme.params) {
    if (!is_grouped_knob(p.name) || p.tune_values.empty() || !param_applies(p, workload)) continue;
    const std::string g = p.name.substr(0, p.name.find('.'));
    if (std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
  }
  return out;
}

std::vector<nlohmann::json> group_knob_grid(const SchemeInfo& scheme, const Workload& workload,
                                            const nlohmann::json& base, const std::string& group) {
  nlohmann::json start = base.is_object() ? base : nlohmann::json::object();
  for (const SchemeParam& p : scheme.params)
    if (p.name.starts_with(group + ".")) start.erase(p.name);
  return expand_knobs(scheme, workload, start, [&](const SchemeParam& p) { return p.name.starts_with(group + "."); });
}

std::vector<nlohmann::json> scheme_knob_grid(const SchemeInfo& scheme, const Workload& workload) {
  std::vector<nlohmann::json> grid = expand_knobs(scheme, workload, nlohmann::json::object(),
                                                  [](const SchemeParam& p) { return !is_grouped_knob(p.name); });
  // The all-defaults configuration first, then the grid without it (each configuration once).
  std::vector<nlohmann::json> out = {nlohmann::json::object()};
  auto same_as_defaults = [&](const nlohmann::json& c) {
    for (auto it = c.begin(); it != c.end(); ++it)
      if (knob_text(scheme, c, it.key()) != knob_text(scheme, nlohmann::json::object(), it.key())) return false;
    return true;
  };
  for (auto& c : grid)
    if (!c.empty() && !same_as_defaults(c)) out.push_back(std::move(c));
  return out;
}

namespace {

// Every candidate of every scheme, in order: the scenario's own settings, then the knob grid.
struct CandidateList {
  std::vector<SchemeTuneCandidate> all;
  std::vector<std::string> order;                            // scheme names, first appearance
  std::map<std::string, std::vector<std::size_t>> by_scheme;  // indices into `all`
};

CandidateList collect_candidates(const Scenario& sc, int jobs) {
  CandidateList list;
  auto& all = list.all;
  auto& order = list.order;
  auto& by_scheme = list.by_scheme;
  // Each configuration once, written with only the knobs that differ from their defaults.
  auto add = [&](const std::string& scheme, const nlohmann::json& given, const std::string& origin,
                 const nlohmann::json& workload = nlohmann::json::object()) {
    const SchemeInfo& info = *find_scheme(scheme);
    nlohmann::json params = nlohmann::json::object();
    for (auto it = given.begin(); it != given.end(); ++it)
      if (knob_text(info, given, it.key()) != knob_text(info, nlohmann::json::object(), it.key())) params[it.key()] = *it;
    for (std::size_t i : by_scheme[scheme])
      if (all[i].params == params && all[i].workload == workload) return;
    by_scheme[scheme].push_back(all.size());
    all.push_back(SchemeTuneCandidate{scheme, params, 0, 0, origin, workload});
  };
  const std::vector<nlohmann::json> workload_grid = workload_knob_grid(sc.workload);
  for (const SchemeSpec& spec : sc.schemes) {
    const SchemeInfo* info = find_scheme(spec.name);
    if (!info) throw std::invalid_argument("unknown scheme '" + spec.name + "'");
    if (info->applies && !info->applies(sc.workload)) continue;
    // A knob the workload has no use for (column_backward in a forward pass) is the user's mistake,
    // refused at its line as `run` does.
    if (const auto refused = check_params_apply(info->params, spec.params, sc.workload)) {
      const auto line = spec.param_lines.find(refused->name);
      throw InputError(sc.file, line != spec.param_lines.end() ? line->second : spec.line,
                       fmt::format("schemes.{}.params.{}", &spec - sc.schemes.data(), refused->name),
                       fmt::format("scheme '{}': {}", spec.name, refused->why));
    }
    const bool first = !by_scheme.count(spec.name);
    if (first) order.push_back(spec.name);
    if (!spec.params.empty()) add(spec.name, spec.params, "scenario");
    if (!first) continue;
    for (const nlohmann::json& wk : workload_grid)
      for (const nlohmann::json& c : scheme_knob_grid(*info, sc.workload)) add(spec.name, c, "grid", wk);
    if (spec.name == "flashoverlap" && sc.workload.kind == WorkloadKind::gemm_collective) {
      // The engine-backed wave-group search: its partition competes with the table's settings. It
      // tunes one GEMM + collective; in a layer or a training step every GEMM keeps its own
      // predicted partition (`groups: auto`, FlashOverlap Sec. 4.2), and the grid's knobs compete.
      WaveGroupTuneOptions wo;
      wo.jobs = jobs;
      const WaveGroupTuneResult wg = tune_wave_groups(sc.workload, sc.hardware, sc.fidelity, wo);
      add(spec.name, nlohmann::json{{"groups", wg.groups_waves}}, "wave-group search (simulate)");
    }
  }
  return list;
}

// What timing every candidate found: its latency, or why the scheme refused its grid setting
// (`refused`) or `keep` left it out (`filtered`); index all.size() is the baseline.
struct CandidateTimes {
  std::vector<Ps> latency;
  std::vector<std::string> refused;
  std::vector<std::string> filtered;
};

// Latency of every candidate (one engine run each) and of the baseline.
CandidateTimes time_candidates(const Scenario& sc, int jobs, const TuneFilter& keep,
                               const std::vector<SchemeTuneCandidate>& all, const SchemeInfo& base) {
  CandidateTimes t{std::vector<Ps>(all.size() + 1, 0), std::vector<std::string>(all.size() + 1),
                   std::vector<std::string>(all.size() + 1)};
  if (keep)
    for (std::size_t i = 0; i < all.size(); ++i)
      t.filtered[i] = keep(all[i].scheme, with_workload_knobs(sc.workload, all[i].workload), all[i].params);
  parallel_for(all.size() + 1, jobs, [&](std::size_t i) {
    const bool is_base = i == all.size();
    if (!t.filtered[i].empty()) return;
    const SchemeInfo& s = is_base ? base : *find_scheme(all[i].scheme);
    const nlohmann::json params = is_base ? nlohmann::json::object() : all[i].params;
    const bool from_grid = !is_base && all[i].origin == "grid";
    const Workload workload = is_base ? sc.workload : with_workload_knobs(sc.workload, all[i].workload);
    const BuildContext ctx{workload, sc.hardware, params, sc.fidelity};
    try {
      const BuiltScheme built = s.build(ctx);
      t.latency[i] = run(built.graph, make_node(sc.hardware, built.graph.num_ranks())).makespan_ps;
    } catch (const InputError& e) {
      if (from_grid) {
        t.refused[i] = e.message();
        return;
      }
      throw InputError(sc.file, 0, "schemes." + s.name,
                       fmt::format("{} with {}: {}", s.name, knobs_text(params), e.message()));
    } catch (const std::invalid_argument& e) {
      if (from_grid) {
        t.refused[i] = e.what();
        return;
      }
      throw InputError(sc.file, 0, "schemes." + s.name, fmt::format("{} with {}: {}", s.name, knobs_text(params), e.what()));
    }
  });
  return t;
}

// Each candidate's latency and speedup; the settings the scheme refused go to `skipped`, those `keep`
// left out to `left_out`: one line per scheme and reason (the grid repeats a reason for every value of
// the other knobs), naming the first setting. Both leave the ranking (`refused` set for them).
void tally_candidates(SchemeTuneResult& r, std::vector<SchemeTuneCandidate>& all, CandidateTimes& t) {
  std::vector<std::pair<std::string, std::vector<std::size_t>>> left_out;  // scheme + reason -> candidates
  for (std::size_t i = 0; i < all.size(); ++i) {
    all[i].latency_ps = t.latency[i];
    all[i].speedup = t.latency[i] > 0 ? static_cast<double>(r.baseline_ps) / static_cast<double>(t.latency[i]) : 0;
    if (!t.filtered[i].empty()) {
      const std::string key = all[i].scheme + ": " + t.filtered[i];
      auto it = std::find_if(left_out.begin(), left_out.end(), [&](const auto& g) { return g.first == key; });
      if (it == left_out.end()) left_out.push_back({key, {i}});
      else it->second.push_back(i);
      --r.evaluated;
      t.refused[i] = t.filtered[i];  // out of the ranking
      continue;
    }
    if (!t.refused[i].empty()) {
      r.skipped.push_back(fmt::format("{} with {}: {}", all[i].scheme, config_text(all[i]), t.refused[i]));
      --r.evaluated;
    }
  }
  for (const auto& [key, members] : left_out) {
    const SchemeTuneCandidate& c = all[members.front()];
    r.left_out.push_back(members.size() == 1
                             ? fmt::format("{} with {}: {}", c.scheme, config_text(c), t.filtered[members.front()])
                             : fmt::format("{}: {} settings not run (first: {}): {}", c.scheme, members.size(),
                                           config_text(c), t.filtered[members.front()]));
  }
}

bool faster_candidate(const SchemeTuneCandidate& a, const SchemeTuneCandidate& b) { return a.latency_ps < b.latency_ps; }

// Grouped knobs (te_userbuffers' per-GEMM-name settings, "<group>.<knob>"): searched from the scheme's
// best by coordinate descent, one group's grid at a time with every other knob held, in rounds until
// a round improves nothing (at most kGroupRounds). The groups are a layer's sequential linears: were
// their times independent, one round would find the joint optimum; they share the node (a
// ring_exchange linear's pulls and a pipeline's reduce-scatter tail meet the next linear's start, and a
// training step's data-parallel traffic runs beside them), so a later round re-checks each group
// against the others' choices. A setting a scheme refuses (a name the workload lacks) is dropped
// silently: it is not a grid setting of the table but a name that does not apply.
void search_knob_groups(SchemeTuneResult& r, SchemeTuneEntry& e, const Scenario& sc, int jobs,
                        const TuneFilter& keep) {
  constexpr int kGroupRounds = 3;
  const SchemeInfo& info = *find_scheme(e.scheme);
  const std::vector<std::string> groups = knob_groups(info, sc.workload);
  if (groups.empty()) return;
  SchemeTuneCandidate best = e.candidates.front();
  const Workload workload = with_workload_knobs(sc.workload, best.workload);
  std::set<std::string> seen;
  for (const SchemeTuneCandidate& c : e.candidates) seen.insert(c.params.dump() + c.workload.dump());
  std::map<std::string, int> left_out;  // per-name settings `keep` refused, by reason
  for (int round = 0; round < kGroupRounds; ++round) {
    bool improved = false;
    for (const std::string& g : groups) {
      std::vector<SchemeTuneCandidate> fresh;
      for (const nlohmann::json& c : group_knob_grid(info, workload, best.params, g))
        if (seen.insert(c.dump() + best.workload.dump()).second) {
          if (const std::string why = keep ? keep(e.scheme, workload, c) : std::string(); !why.empty()) {
            ++left_out[why];
            continue;
          }
          fresh.push_back(SchemeTuneCandidate{e.scheme, c, 0, 0, "per-name search", best.workload});
        }
      std::vector<Ps> lat(fresh.size(), -1);
      parallel_for(fresh.size(), jobs, [&](std::size_t i) {
        const BuildContext ctx{workload, sc.hardware, fresh[i].params, sc.fidelity};
        try {
          const BuiltScheme built = info.build(ctx);
          lat[i] = run(built.graph, make_node(sc.hardware, built.graph.num_ranks())).makespan_ps;
        } catch (const InputError&) {
        } catch (const std::invalid_argument&) {
        }
      });
      const Ps from_ps = best.latency_ps;
      for (std::size_t i = 0; i < fresh.size(); ++i) {
        if (lat[i] <= 0) continue;
        fresh[i].latency_ps = lat[i];
        fresh[i].speedup = static_cast<double>(r.baseline_ps) / static_cast<double>(lat[i]);
        ++r.evaluated;
        // A setting that times exactly as the one it started from (a name set to what it inherits)
        // adds nothing to the ranking: counted, not listed.
        if (lat[i] != from_ps) e.candidates.push_back(fresh[i]);
        if (lat[i] < best.latency_ps) {
          best = fresh[i];
          improved = true;
        }
      }
    }
    if (!improved) break;
  }
  for (const auto& [why, n] : left_out)
    r.left_out.push_back(fmt::format("{}: {} per-name setting{} not searched: {}", e.scheme, n, n == 1 ? "" : "s", why));
  std::stable_sort(e.candidates.begin(), e.candidates.end(), faster_candidate);
}

}  // namespace

SchemeTuneResult tune_schemes(const Scenario& sc, int jobs, const TuneFilter& keep) {
  const auto start = std::chrono::steady_clock::now();
  SchemeTuneResult r;
  r.baseline = baseline_scheme_for(sc.workload);

  CandidateList list = collect_candidates(sc, jobs);
  std::vector<SchemeTuneCandidate>& all = list.all;
  if (list.order.empty()) throw InputError(sc.file, 0, "schemes", "no scheme of the scenario applies to its workload");

  const SchemeInfo* base = find_scheme(r.baseline);
  if (!base) throw std::logic_error("baseline scheme '" + r.baseline + "' is not registered");
  CandidateTimes times = time_candidates(sc, jobs, keep, all, *base);
  r.baseline_ps = times.latency.back();
  r.evaluated = static_cast<int>(all.size());
  tally_candidates(r, all, times);

  for (const std::string& name : list.order) {
    SchemeTuneEntry e;
    e.scheme = name;
    for (std::size_t i : list.by_scheme[name])
      if (times.refused[i].empty()) e.candidates.push_back(all[i]);
    // The all-defaults setting comes from the grid: a scheme none of whose settings runs here.
    if (e.candidates.empty()) continue;
    std::stable_sort(e.candidates.begin(), e.candidates.end(), faster_candidate);
    r.schemes.push_back(std::move(e));
  }
  if (r.schemes.empty())
    throw InputError(sc.file, 0, "schemes",
                     r.skipped.empty() ? "no setting of any scheme can be deployed: " + r.left_out.front()
                                       : "no setting of any scheme runs on this hardware: " + r.skipped.front());
  for (SchemeTuneEntry& e : r.schemes) search_knob_groups(r, e, sc, jobs, keep);
  // Full metrics (exposed communication, bound) of each scheme's best.
  parallel_for(r.schemes.size(), jobs, [&](std::size_t i) {
    SchemeTuneEntry& e = r.schemes[i];
    const Workload workload = with_workload_knobs(sc.workload, e.candidates.front().workload);
    const BuildContext ctx{workload, sc.hardware, e.candidates.front().params, sc.fidelity};
    EvaluateOptions o;
    o.verify_bytes = false;  // the latency was just simulated; the byte accounting is `run`'s check
    e.best = evaluate(*find_scheme(e.scheme), ctx, o);
    e.best.speedup_vs_no_overlap = e.candidates.front().speedup;
  });
  for (std::size_t i = 1; i < r.schemes.size(); ++i)
    if (r.schemes[i].candidates.front().latency_ps < r.schemes[r.best].candidates.front().latency_ps) r.best = i;
  r.search_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return r;
}

namespace {

// The best scheme's best and every other scheme's best of the same latency in integer picoseconds,
// in the scenario's order from the best on (report.hpp best_results' rule).
std::vector<const SchemeTuneCandidate*> tied_bests(const SchemeTuneResult& r) {
  const SchemeTuneCandidate& best = r.schemes[r.best].candidates.front();
  std::vector<const SchemeTuneCandidate*> out = {&best};
  for (std::size_t i = 0; i < r.schemes.size(); ++i)
    if (i != r.best && r.schemes[i].candidates.front().latency_ps == best.latency_ps)
      out.push_back(&r.schemes[i].candidates.front());
  return out;
}

nlohmann::json candidate_json(const SchemeTuneCandidate& c) {
  nlohmann::json j = {{"scheme", c.scheme}, {"params", c.params}, {"latency_us", us_from_ps(c.latency_ps)},
                      {"speedup_vs_baseline", c.speedup}, {"origin", c.origin}};
  if (!c.workload.empty()) j["workload"] = c.workload;  // the workload keys it changes (training steps)
  return j;
}

// Every candidate of every scheme, fastest first (ties: scheme order, then enumeration order).
std::vector<SchemeTuneCandidate> ranked(const SchemeTuneResult& r) {
  std::vector<SchemeTuneCandidate> all;
  for (const auto& e : r.schemes) all.insert(all.end(), e.candidates.begin(), e.candidates.end());
  std::stable_sort(all.begin(), all.end(),
                   [](const SchemeTuneCandidate& a, const SchemeTuneCandidate& b) { return a.latency_ps < b.latency_ps; });
  return all;
}

}  // namespace

nlohmann::json to_json(const SchemeTuneResult& r, const Scenario& sc, int top) {
  nlohmann::json j;
  j["scenario"] = sc.name;
  j["hardware"] = sc.hardware_name;
  j["workload"] = workload_json(sc.workload);
  j["fidelity"] = fidelity_name(sc.fidelity);
  j["baseline"] = r.baseline;
  j["baseline_us"] = us_from_ps(r.baseline_ps);
  const SchemeTuneEntry& best = r.schemes[r.best];
  j["best"] = candidate_json(best.candidates.front());
  nlohmann::json tied = nlohmann::json::array();
  for (const SchemeTuneCandidate* c : tied_bests(r)) tied.push_back({{"scheme", c->scheme}, {"params", c->params}});
  j["best"]["tied"] = tied;
  nlohmann::json schemes = nlohmann::json::array();
  for (const SchemeTuneEntry& e : r.schemes) {
    nlohmann::json s;
    s["scheme"] = e.scheme;
    s["best"] = candidate_json(e.candidates.front());
    s["best_metrics"] = to_json(e.best);
    nlohmann::json cands = nlohmann::json::array();
    for (const auto& c : e.candidates) cands.push_back(candidate_json(c));
    s["candidates"] = cands;
    schemes.push_back(std::move(s));
  }
  j["schemes"] = schemes;
  nlohmann::json tops = nlohmann::json::array();
  const auto all = ranked(r);
  for (std::size_t i = 0; i < all.size() && static_cast<int>(i) < top; ++i) tops.push_back(candidate_json(all[i]));
  j["top"] = tops;
  j["evaluated"] = r.evaluated;
  j["skipped"] = r.skipped;
  if (!r.left_out.empty()) j["left_out"] = r.left_out;
  j["search_ms"] = r.search_ms;
  return j;
}

std::string format_scheme_tune_table(const SchemeTuneResult& r, const Scenario& sc, int top) {
  std::string out;
  out += fmt::format("tune: scenario {}   hardware: {}   fidelity: {}\n", sc.name, sc.hardware_name,
                     fidelity_name(sc.fidelity));
  out += fmt::format("workload: {}\n", describe_workload(sc.workload));
  const SchemeTuneCandidate& best = r.schemes[r.best].candidates.front();
  // Every scheme whose best ties it in integer picoseconds is named (as run's best: line does).
  std::string who;
  for (const SchemeTuneCandidate* c : tied_bests(r))
    who += (who.empty() ? "" : " = ") + fmt::format("{} ({})", c->scheme, config_text(*c));
  out += fmt::format("best: {}: {:.2f} us, {:.3f}x vs {} ({:.2f} us); {} configurations in {:.0f} ms\n\n", who,
                     us_from_ps(best.latency_ps), best.speedup, r.baseline, us_from_ps(r.baseline_ps), r.evaluated, r.search_ms);
  // Best per scheme.
  const auto all = ranked(r);
  std::size_t w_scheme = 6, w_conf = 18;
  for (const auto& e : r.schemes) {
    w_scheme = std::max(w_scheme, e.scheme.size());
    w_conf = std::max(w_conf, config_text(e.candidates.front()).size());
  }
  for (std::size_t i = 0; i < all.size() && static_cast<int>(i) < top; ++i)
    w_conf = std::max(w_conf, config_text(all[i]).size());
  w_conf = std::min<std::size_t>(w_conf, 56);
  auto clip = [&](std::string s) { return s.size() > w_conf ? s.substr(0, w_conf - 3) + "..." : s; };
  out += fmt::format("{:<{}}  {:<{}}  {:>12}  {:>8}  {:>17}  {:>6}\n", "scheme", w_scheme, "best configuration", w_conf,
                     "latency (us)", "speedup", "exposed comm (us)", "tried");
  for (const auto& e : r.schemes) {
    const auto& c = e.candidates.front();
    out += fmt::format("{:<{}}  {:<{}}  {:>12.2f}  {:>7.3f}x  {:>17.2f}  {:>6}\n", e.scheme, w_scheme,
                       clip(config_text(c)), w_conf, us_from_ps(c.latency_ps), c.speedup, us_from_ps(e.best.exposed_comm_ps),
                       e.candidates.size());
  }
  out += fmt::format("\ntop {} configurations:\n", top);
  out += fmt::format("{:>3}  {:<{}}  {:<{}}  {:>12}  {:>8}  {}\n", "#", "scheme", w_scheme, "configuration", w_conf,
                     "latency (us)", "speedup", "origin");
  for (std::size_t i = 0; i < all.size() && static_cast<int>(i) < top; ++i)
    out += fmt::format("{:>3}  {:<{}}  {:<{}}  {:>12.2f}  {:>7.3f}x  {}\n", i + 1, all[i].scheme, w_scheme,
                       clip(config_text(all[i])), w_conf, us_from_ps(all[i].latency_ps), all[i].speedup, all[i].origin);
  if (workload_knob_grid(sc.workload).size() > 1)
    out += wrap_text("\nparallel.* = workload.parallel.*: on a data-parallel training step tune also tries these "
                     "workload keys with each scheme's settings (the scenario's own value is the one not named)",
                     kTableWidth, "  ");
  if (!r.skipped.empty()) {
    out += fmt::format("\nnot run here ({} grid settings the hardware or workload does not allow):\n", r.skipped.size());
    for (const std::string& s : r.skipped) out += "  " + s + "\n";
  }
  if (!r.left_out.empty()) {
    out += "\nleft out (settings the export's target cannot deploy as simulated):\n";
    for (const std::string& s : r.left_out) out += "  " + s + "\n";
  }
  return out;
}

}  // namespace overlap::sim
