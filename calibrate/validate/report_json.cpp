#include "calibrate/validate/groups.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>


namespace overlap::calibrate {

using nlohmann::json;

json to_json(const ValidationReport& rep) {
  json j{{"verdict", rep.verdict},
         {"verdict_detail", rep.verdict_detail},
         {"recorded_median_abs_error_pct", rep.recorded_median_pct ? json(*rep.recorded_median_pct) : json()},
         {"suspicious", rep.suspicious},
         {"dir", rep.dir},
         {"profile", rep.profile_file},
         {"fixture", rep.fixture},
         {"rows_scored", rep.scored},
         {"median_abs_error_pct", rep.median_abs_error_pct},
         {"max_abs_error_pct", rep.max_abs_error_pct},
         {"error_definition", "100 * (predicted - measured) / measured; fitted rows (the profile was built from them) are not scored"},
         {"groups", json::array()},
         {"flashoverlap_partitions", json::array()},
         {"skipped", rep.skipped}};
  for (const auto& g : rep.groups) {
    json jg{{"benchmark", g.benchmark},
            {"model", g.model},
            {"rows_scored", g.scored},
            {"median_abs_error_pct", g.median_abs_error_pct},
            {"max_abs_error_pct", g.max_abs_error_pct},
            {"target_median_abs_error_pct", g.target_median_pct ? json(*g.target_median_pct) : json()},
            {"recorded_median_abs_error_pct", g.recorded_median_pct ? json(*g.recorded_median_pct) : json()},
            {"result", g.result},
            {"tolerance_pct", g.tolerance_pct},
            {"rows_off", g.off_rows},
            {"rows", json::array()}};
    if (g.exposed_rows > 0) {
      jg["exposed_comm"] = json{{"rows", g.exposed_rows},
                                {"median_abs_error_us", g.exposed_median_abs_error_us},
                                {"median_abs_error_pct_of_latency", g.exposed_median_abs_error_pct_of_latency}};
    }
    for (const auto& r : g.rows) {
      json jr{{"config", r.config},     {"measured_us", r.measured_us}, {"predicted_us", r.predicted_us},
              {"error_pct", r.error_pct}, {"spread", r.spread},       {"fitted", r.fitted}, {"off", r.off}};
      if (!r.suspicious.empty()) jr["suspicious"] = r.suspicious;
      if (r.exposed_measured_us && r.exposed_predicted_us) {
        jr["exposed_comm_measured_us"] = *r.exposed_measured_us;
        jr["exposed_comm_predicted_us"] = *r.exposed_predicted_us;
        jr["exposed_comm_error_us"] = *r.exposed_predicted_us - *r.exposed_measured_us;
      }
      if (!r.note.empty()) jr["note"] = r.note;
      jg["rows"].push_back(std::move(jr));
    }
    j["groups"].push_back(std::move(jg));
  }
  for (const auto& p : rep.partitions) {
    j["flashoverlap_partitions"].push_back(json{{"workload", json::parse(p.workload)},
                                                {"profile", p.profile},
                                                {"measured_best", json::parse(p.measured_best)},
                                                {"simulated_best", json::parse(p.simulated_best)},
                                                {"measured_best_us", p.measured_best_us},
                                                {"simulated_pick_measured_us", p.simulated_pick_measured_us},
                                                {"regret_pct", p.regret_pct},
                                                {"flashoverlap_predictor_best", p.predictor_best.empty() ? json() : json::parse(p.predictor_best)},
                                                {"flashoverlap_predictor_pick_measured_us", p.predictor_pick_measured_us},
                                                {"tune_best_tiles", p.tune_best_tiles},
                                                {"tune_simulated_us", p.tune_simulated_us},
                                                {"tune_pick_measured_us", p.tune_pick_measured_us > 0 ? json(p.tune_pick_measured_us) : json()}});
  }
  return j;
}


json recorded_figures(const ValidationReport& rep) {
  json med{{"all", rep.median_abs_error_pct}};
  json rows{{"all", rep.scored}};
  for (const auto& g : rep.groups) {
    if (g.scored == 0) continue;
    med[g.benchmark] = g.median_abs_error_pct;
    rows[g.benchmark] = g.scored;
  }
  return json{{"recorded_by", "overlap-sim validate --record"}, {"median_abs_error_pct", med}, {"rows_scored", rows}};
}

}  // namespace overlap::calibrate
