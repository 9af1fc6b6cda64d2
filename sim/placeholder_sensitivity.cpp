#include "sim/placeholder_sensitivity.hpp"

#include <algorithm>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "cost_model/input_error.hpp"
#include "cost_model/profile_json.hpp"
#include "cost_model/units.hpp"
#include "sim/engine.hpp"
#include "sim/layer_composition.hpp"
#include "sim/node_builder.hpp"
#include "sim/report.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/sweep_parallel.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {
namespace {

// The rows that ran, by their request index (a row of the re-run pairs with the row of the same
// request as run).
std::map<int, const SchemeResult*> rows_by_request(const std::vector<SchemeResult>& results) {
  std::map<int, const SchemeResult*> out;
  for (const SchemeResult& r : results)
    if (!r.failed() && r.speedup_vs_no_overlap > 0) out.emplace(r.request, &r);
  return out;
}

// True when the run's --set assignments give `key` a value ("hardware.KEY=..." or the shortcut's
// "hardware.KEY" spelt in full).
bool set_by_user(const std::string& key, const std::vector<std::string>& sets) {
  const std::string full = "hardware." + key + "=";
  return std::any_of(sets.begin(), sets.end(), [&](const std::string& s) { return s.rfind(full, 0) == 0; });
}

// The best rows' request indices.
std::vector<int> best_requests(const std::vector<SchemeResult>& results) {
  std::vector<int> out;
  for (const SchemeResult* r : best_results(results)) out.push_back(r->request);
  return out;
}

// What the ranking at `value` changes against the run as given; nullopt when no decision changes.
std::optional<RankingChange> compare(const std::vector<SchemeResult>& as_run, const std::vector<SchemeResult>& at,
                                     double value) {
  RankingChange c;
  c.value = value;
  const auto before = rows_by_request(as_run);
  const auto after = rows_by_request(at);
  for (const auto& [request, r] : before) {
    const auto it = after.find(request);
    if (it == after.end()) continue;
    const bool faster_before = r->speedup_vs_no_overlap > 1;
    const bool slower_before = r->speedup_vs_no_overlap < 1;
    const bool faster_after = it->second->speedup_vs_no_overlap > 1;
    const bool slower_after = it->second->speedup_vs_no_overlap < 1;
    if ((faster_before && slower_after) || (slower_before && faster_after))
      c.crossings.push_back({result_label(*r), r->speedup_vs_no_overlap, it->second->speedup_vs_no_overlap});
  }
  // The best changes when the tied best sets share no scheme (a tie that opens or closes is no change
  // of what to run).
  const std::vector<int> best_before = best_requests(as_run);
  const std::vector<int> best_after = best_requests(at);
  const bool shared = std::any_of(best_before.begin(), best_before.end(), [&](int r) {
    return std::find(best_after.begin(), best_after.end(), r) != best_after.end();
  });
  c.best_before = best_label(as_run);
  c.best_after = shared ? c.best_before : best_label(at);
  if (const SchemeResult* b = best_result(as_run)) c.best_speedup_before = b->speedup_vs_no_overlap;
  if (const SchemeResult* b = best_result(at)) c.best_speedup_after = b->speedup_vs_no_overlap;
  if (c.crossings.empty() && !c.best_changed()) return std::nullopt;
  return c;
}

// "25" for a whole value, else the shortest form that reads back exactly (a --set value is decimal).
std::string number_text(double v) { return fmt::format("{}", v); }

// ---- which schemes a changed value can reach ----

// What a scheme's latency is a function of, besides the node: the digests of the graphs evaluate_all
// simulates for it (one, or one per depth of a composed run), and the transports whose costs the
// engine reads for its ops (network_side.cpp: a copy op is costed as the copy engine, a phase
// transfer as its op's transport; nothing else reads a transport's costs).
struct SchemeInputs {
  bool applies = true;
  std::vector<TaskGraph::Digest> graphs;
  std::set<Transport> transports;
};

// The scheme's inputs on `sc` with `node`; nullopt when a graph cannot be built (the scheme then fails
// or is refused, which only a re-run can say).
std::optional<SchemeInputs> scheme_inputs(const SchemeRequest& request, const Scenario& sc, const NodeConfig& node) {
  const SchemeInfo* info = find_scheme(request.name);
  if (!info) return std::nullopt;
  SchemeInputs in;
  in.applies = !info->applies || info->applies(sc.workload);
  if (!in.applies) return in;
  std::vector<Workload> workloads;
  const std::vector<int> depths = composition_depths(sc.workload);
  for (const int depth : depths) workloads.push_back(with_layers(sc.workload, depth));
  if (depths.empty()) workloads.push_back(sc.workload);
  try {
    for (const Workload& w : workloads) {
      validate_workload(w);
      if (check_params_apply(info->params, request.params, w)) return std::nullopt;
      const BuiltScheme built = info->build(BuildContext{w, sc.hardware, request.params, sc.fidelity, &node});
      in.graphs.push_back(built.graph.digest());
      for (const Op& op : built.graph.ops()) {
        if (op.kind == OpKind::copy) in.transports.insert(Transport::copy_engine);
        if (op.transport) in.transports.insert(*op.transport);
      }
    }
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return in;
}

bool same_gpu(const GpuConfig& a, const GpuConfig& b) {
  return a.sm_count == b.sm_count && a.copy_engines == b.copy_engines && a.physical == b.physical &&
         a.comm_interference == b.comm_interference && a.full_rate_sms == b.full_rate_sms &&
         a.hbm_latency_ps == b.hbm_latency_ps && a.hbm_sm_bytes_per_ps == b.hbm_sm_bytes_per_ps;
}

bool same_link(const Link& a, const Link& b) {
  return a.name == b.name && a.from == b.from && a.to == b.to && a.capacity_bytes_per_ps == b.capacity_bytes_per_ps &&
         a.latency_ps == b.latency_ps && a.link_class == b.link_class;
}

bool same_curve(const BandwidthCurve& a, const BandwidthCurve& b) {
  if (a.empty() != b.empty() || a.fit().alpha_us != b.fit().alpha_us || a.fit().beta_gbps != b.fit().beta_gbps) return false;
  return std::equal(a.points().begin(), a.points().end(), b.points().begin(), b.points().end(),
                    [](const CurvePoint& x, const CurvePoint& y) { return x.bytes == y.bytes && x.time_ps == y.time_ps; });
}

// The transports whose costs differ between the nodes make_node builds from two profiles, when the
// rest of the nodes (GPUs, launch, fabric nodes, links, HBM) is the same; nullopt when the rest
// differs. The fabric's transport costs are the profile's (TransportSpec and the curves
// "<transport>.<class>", node_builder.cpp), compared there; the fabric's switch ports, which the node
// does not show, are compared as the profiles' fabric sections.
std::optional<std::set<Transport>> transports_differing(const HardwareProfile& a, const NodeConfig& na,
                                                        const HardwareProfile& b, const NodeConfig& nb) {
  const bool gpus = std::equal(na.gpus.begin(), na.gpus.end(), nb.gpus.begin(), nb.gpus.end(), same_gpu);
  const bool launch = na.launch_gap_ps == nb.launch_gap_ps && na.launch_host_ps == nb.launch_host_ps &&
                      na.shared_host == nb.shared_host && na.sync_host_ps == nb.sync_host_ps;
  const Fabric& fa = na.fabric;
  const Fabric& fb = nb.fabric;
  bool fabric = fa.num_gpus() == fb.num_gpus() && fa.node_count() == fb.node_count() &&
                std::equal(fa.links().begin(), fa.links().end(), fb.links().begin(), fb.links().end(), same_link) &&
                profile_to_json(a)["fabric"] == profile_to_json(b)["fabric"];
  for (int n = 0; fabric && n < fa.node_count(); ++n) fabric = fa.node_name(n) == fb.node_name(n);
  for (int g = 0; fabric && g < fa.num_gpus(); ++g) fabric = fa.hbm_link(g) == fb.hbm_link(g);
  if (!gpus || !launch || !fabric) return std::nullopt;
  std::set<Transport> out;
  for (const Transport t : kAllTransports) {
    const TransportSpec& x = a.transports.of(t);
    const TransportSpec& y = b.transports.of(t);
    if (x.latency_us != y.latency_us || x.efficiency != y.efficiency || x.cta_gbps != y.cta_gbps) out.insert(t);
  }
  // A curve of one profile the other lacks, or unequal: its transport's costs differ.
  for (const auto* curves : {&a.curves, &b.curves})
    for (const auto& [key, curve] : *curves) {
      const auto dot = key.find('.');
      const auto t = dot == std::string::npos ? std::nullopt : parse_transport(key.substr(0, dot));
      if (!t) continue;  // make_node reads no other curve into the fabric
      const auto ia = a.curves.find(key), ib = b.curves.find(key);
      if (ia == a.curves.end() || ib == b.curves.end() || !same_curve(ia->second, ib->second)) out.insert(*t);
    }
  return out;
}

// The run as given, what the cheap re-runs compare against: its node and each request's inputs.
struct AsRun {
  const Scenario& sc;
  NodeConfig node;
  std::vector<std::optional<SchemeInputs>> inputs;  // per request
  std::optional<SchemeInputs> baseline;
};

AsRun as_run_inputs(const Scenario& sc, const std::vector<SchemeRequest>& requests, SensitivityRuns runs) {
  AsRun a{sc, make_node(sc.hardware, std::max(1, sc.workload.tp)), {}, {}};
  if (runs == SensitivityRuns::all) return a;
  a.inputs.resize(requests.size());
  parallel_for(requests.size(), default_jobs(), [&](std::size_t i) { a.inputs[i] = scheme_inputs(requests[i], sc, a.node); });
  a.baseline = scheme_inputs(SchemeRequest{baseline_scheme_for(sc.workload), nlohmann::json::object()}, sc, a.node);
  return a;
}

bool reaches(const std::optional<SchemeInputs>& before, const std::optional<SchemeInputs>& after,
             const std::set<Transport>& costs_changed) {
  if (!before || !after || before->applies != after->applies || before->graphs != after->graphs) return true;
  return std::any_of(after->transports.begin(), after->transports.end(),
                     [&](Transport t) { return costs_changed.count(t) > 0; });
}

std::vector<SchemeResult> rerun_with(const AsRun& as_run, const Scenario& at, const std::vector<SchemeRequest>& requests,
                                     const std::vector<SchemeResult>& results, SensitivityRuns runs, int* evaluated) {
  EvaluateOptions options;
  options.keep_going = true;
  options.latency_only = true;  // the ranking needs latencies and speedups only
  options.verify_bytes = false;
  const std::string base_name = baseline_scheme_for(at.workload);
  auto all = [&] {
    std::vector<SchemeResult> out = evaluate_all(requests, at.workload, at.hardware, at.fidelity, options);
    const bool base_requested = std::any_of(requests.begin(), requests.end(), [&](const SchemeRequest& r) {
      return r.name == base_name && r.params.empty();
    });
    if (evaluated) *evaluated = static_cast<int>(requests.size()) + (base_requested ? 0 : 1);
    return out;
  };
  if (runs == SensitivityRuns::all) return all();

  // Which requests the changed value reaches.
  const NodeConfig node = make_node(at.hardware, std::max(1, at.workload.tp));
  const auto costs_changed = transports_differing(as_run.sc.hardware, as_run.node, at.hardware, node);
  std::vector<std::size_t> reached;
  bool base_reached = !costs_changed.has_value();
  for (std::size_t i = 0; i < requests.size(); ++i)
    if (!costs_changed || reaches(as_run.inputs[i], scheme_inputs(requests[i], at, node), *costs_changed))
      reached.push_back(i);
  if (costs_changed)
    base_reached = reaches(as_run.baseline,
                           scheme_inputs(SchemeRequest{base_name, nlohmann::json::object()}, at, node), *costs_changed);
  if (evaluated) *evaluated = 0;
  if (reached.empty() && !base_reached) return results;  // every latency as run, so every speedup
  // A composed run's speedups are interpolated from its runs of fewer layers, and the depth it is
  // composed from is chosen over every scheme: only a whole re-run gives the rows it would give.
  if (!composition_depths(at.workload).empty() || reached.size() == requests.size()) return all();

  // The reached requests and the baseline, evaluated; the rest keep their rows as run.
  std::vector<SchemeRequest> subset;
  for (const std::size_t i : reached) subset.push_back(requests[i]);
  subset.push_back(SchemeRequest{base_name, nlohmann::json::object()});
  std::vector<SchemeResult> fresh = evaluate_all(subset, at.workload, at.hardware, at.fidelity, options);
  if (evaluated) *evaluated = static_cast<int>(subset.size());
  std::optional<Ps> baseline_ps;
  std::map<std::size_t, SchemeResult*> by_request;
  for (SchemeResult& r : fresh) {
    const auto k = static_cast<std::size_t>(r.request);
    if (k + 1 == subset.size()) {
      if (!r.failed()) baseline_ps = r.latency_ps;
    } else {
      by_request[reached[k]] = &r;
    }
  }
  // A failed baseline leaves no speedup to compare: only a whole re-run says what evaluate_all does then.
  if (!baseline_ps) return all();
  std::vector<SchemeResult> out;
  std::map<std::size_t, const SchemeResult*> as_run_rows;
  for (const SchemeResult& r : results) as_run_rows[static_cast<std::size_t>(r.request)] = &r;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (std::binary_search(reached.begin(), reached.end(), i)) {
      const auto it = by_request.find(i);
      if (it == by_request.end()) continue;  // does not apply at this value
      out.push_back(std::move(*it->second));
      out.back().request = static_cast<int>(i);
      continue;
    }
    const auto it = as_run_rows.find(i);
    if (it == as_run_rows.end()) continue;
    out.push_back(*it->second);
    SchemeResult& r = out.back();
    // As evaluate_all fills it.
    if (!r.failed())
      r.speedup_vs_no_overlap =
          r.latency_ps > 0 ? static_cast<double>(*baseline_ps) / static_cast<double>(r.latency_ps) : 0.0;
  }
  return out;
}

}  // namespace

std::vector<SchemeResult> rerun_schemes(const Scenario& as_run, const Scenario& at, const std::vector<SchemeRequest>& requests,
                                        const std::vector<SchemeResult>& results, SensitivityRuns runs, int* evaluated) {
  return rerun_with(as_run_inputs(as_run, requests, runs), at, requests, results, runs, evaluated);
}

PlaceholderSensitivity placeholder_sensitivity(const Scenario& sc, const std::vector<SchemeRequest>& requests,
                                               const std::vector<SchemeResult>& results,
                                               const std::vector<std::string>& given_sets,
                                               const ScenarioReloader& reload, SensitivityRuns runs) {
  PlaceholderSensitivity out;
  // One re-run per end of each range that is not the value as run. The scenarios are loaded here, one
  // after another (loading notes every file read); the re-runs then go side by side (parallel_for:
  // each builds its own graph and engine), each writing only its own slot.
  struct ReRun {
    std::size_t placeholder;
    double value;
    std::optional<Scenario> scenario;
    std::vector<SchemeResult> results;
    std::string error;
  };
  std::vector<ReRun> reruns;
  for (std::size_t i = 0; i < sc.hardware.placeholders.size(); ++i) {
    const PlaceholderRange& ph = sc.hardware.placeholders[i];
    if (set_by_user(ph.key, given_sets)) {
      out.unchecked.push_back(ph.key + ": set by --set");
      continue;
    }
    out.checked.push_back(ph.key);
    for (const double value : {ph.low, ph.high}) {
      if (value == ph.value) continue;  // the run as given
      ReRun r{i, value, std::nullopt, {}, {}};
      try {
        r.scenario = reload({"hardware." + ph.key + "=" + number_text(value)});
      } catch (const InputError& e) {
        r.error = e.message();
      }
      reruns.push_back(std::move(r));
    }
  }
  if (reruns.empty()) return out;
  const AsRun as_run = as_run_inputs(sc, requests, runs);
  std::vector<int> evaluated(reruns.size(), 0);
  parallel_for(reruns.size(), default_jobs(), [&](std::size_t k) {
    ReRun& r = reruns[k];
    if (!r.scenario) return;
    try {
      r.results = rerun_with(as_run, *r.scenario, requests, results, runs, &evaluated[k]);
    } catch (const InputError& e) {
      r.error = e.message();
    } catch (const std::invalid_argument& e) {
      r.error = e.what();
    } catch (const RangeError& e) {
      r.error = e.what();
    } catch (const SimError& e) {
      r.error = e.what();
    }
    r.scenario.reset();  // its graphs' memory back before the next re-run on this thread
  });
  const auto base_name = baseline_scheme_for(sc.workload);
  const bool base_requested = std::any_of(requests.begin(), requests.end(), [&](const SchemeRequest& q) {
    return q.name == base_name && q.params.empty();
  });
  for (std::size_t k = 0; k < reruns.size(); ++k) {
    out.scheme_runs += evaluated[k];
    out.scheme_runs_if_all += static_cast<int>(requests.size()) + (base_requested ? 0 : 1);
  }
  for (std::size_t i = 0; i < sc.hardware.placeholders.size(); ++i) {
    const PlaceholderRange& ph = sc.hardware.placeholders[i];
    DecidingPlaceholder d{ph, {}};
    for (const ReRun& r : reruns) {
      if (r.placeholder != i) continue;
      if (!r.error.empty()) {
        out.unchecked.push_back(fmt::format("{} = {}: {}", ph.key, number_text(r.value), r.error));
        continue;
      }
      if (auto change = compare(results, r.results, r.value)) d.changes.push_back(std::move(*change));
    }
    if (!d.changes.empty()) out.deciding.push_back(std::move(d));
  }
  return out;
}

std::string format_placeholder_sensitivity(const PlaceholderSensitivity& s) {
  constexpr std::size_t kShownCrossings = 4;
  std::string out;
  if (s.deciding.empty() && !s.checked.empty()) {
    std::string keys;
    for (std::size_t i = 0; i < s.checked.size(); ++i)
      keys += (i == 0 ? "" : i + 1 == s.checked.size() ? " and " : ", ") + s.checked[i];
    return wrap_text(fmt::format("placeholders: no guess decides the ranking ({} {} checked at both ends of {} "
                                 "plausible range{}; `profile show` gives them)",
                                 keys, s.checked.size() == 1 ? "is" : "are", s.checked.size() == 1 ? "its" : "their",
                                 s.checked.size() == 1 ? "" : "s"),
                     kTableWidth, "  ");
  }
  for (const DecidingPlaceholder& d : s.deciding) {
    const PlaceholderRange& ph = d.placeholder;
    std::string line = fmt::format("placeholder decides the ranking: {} = {:g} is a guess (plausible {:g} .. {:g}; "
                                   "`profile show` says why)",
                                   ph.key, ph.value, ph.low, ph.high);
    for (const RankingChange& c : d.changes) {
      std::vector<std::string> parts;
      if (c.best_changed())
        parts.push_back(fmt::format("best {} {:.3f}x -> {} {:.3f}x", c.best_before, c.best_speedup_before, c.best_after,
                                    c.best_speedup_after));
      for (std::size_t i = 0; i < c.crossings.size() && i < kShownCrossings; ++i) {
        const auto& x = c.crossings[i];
        parts.push_back(fmt::format("{} {:.3f}x -> {:.3f}x ({} no_overlap)", x.scheme, x.speedup_before, x.speedup_after,
                                    x.speedup_after > 1 ? "passes" : "falls behind"));
      }
      if (c.crossings.size() > kShownCrossings)
        parts.push_back(fmt::format("{} more cross no_overlap", c.crossings.size() - kShownCrossings));
      std::string joined;
      for (const std::string& p : parts) joined += (joined.empty() ? "" : ", ") + p;
      line += fmt::format("; at {:g}: {}", c.value, joined);
    }
    out += wrap_text(line, kTableWidth, "  ");
  }
  return out;
}

nlohmann::json placeholder_sensitivity_json(const PlaceholderSensitivity& s) {
  nlohmann::json deciding = nlohmann::json::array();
  for (const DecidingPlaceholder& d : s.deciding) {
    nlohmann::json changes = nlohmann::json::array();
    for (const RankingChange& c : d.changes) {
      nlohmann::json crossings = nlohmann::json::array();
      for (const auto& x : c.crossings)
        crossings.push_back({{"scheme", x.scheme}, {"speedup_before", x.speedup_before}, {"speedup_after", x.speedup_after}});
      changes.push_back({{"value", c.value},
                         {"best_before", c.best_before},
                         {"best_after", c.best_after},
                         {"best_speedup_before", c.best_speedup_before},
                         {"best_speedup_after", c.best_speedup_after},
                         {"crossings", crossings}});
    }
    const PlaceholderRange& ph = d.placeholder;
    deciding.push_back({{"key", ph.key},
                        {"value", ph.value},
                        {"low", ph.low},
                        {"high", ph.high},
                        {"source", ph.source},
                        {"changes", changes}});
  }
  return {{"checked", s.checked}, {"unchecked", s.unchecked}, {"deciding", deciding}};
}

}  // namespace overlap::sim
