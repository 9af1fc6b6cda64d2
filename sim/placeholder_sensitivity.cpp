#include "sim/placeholder_sensitivity.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "cost_model/input_error.hpp"
#include "cost_model/units.hpp"
#include "sim/engine.hpp"
#include "sim/report.hpp"
#include "sim/sweep_parallel.hpp"

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

}  // namespace

PlaceholderSensitivity placeholder_sensitivity(const Scenario& sc, const std::vector<SchemeRequest>& requests,
                                               const std::vector<SchemeResult>& results,
                                               const std::vector<std::string>& given_sets,
                                               const ScenarioReloader& reload) {
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
  parallel_for(reruns.size(), default_jobs(), [&](std::size_t k) {
    ReRun& r = reruns[k];
    if (!r.scenario) return;
    EvaluateOptions options;
    options.keep_going = true;
    options.latency_only = true;  // the ranking needs latencies and speedups only
    options.verify_bytes = false;
    try {
      r.results = evaluate_all(requests, r.scenario->workload, r.scenario->hardware, r.scenario->fidelity, options);
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
