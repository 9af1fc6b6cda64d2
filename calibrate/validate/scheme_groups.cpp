#include "calibrate/validate/groups.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "calibrate/core/calibration_plan.hpp"
#include "cost_model/flashoverlap_predictor.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/prediction_error.hpp"
#include "cost_model/profile_loader.hpp"
#include "sim/metrics.hpp"
#include "sim/scenario.hpp"
#include "sim/tune_wave_groups.hpp"

namespace overlap::calibrate {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string groups_text(const json& params) {
  return params.contains("groups") ? params["groups"].dump() : params.dump();
}

void concurrent_gemm_group(const SchemeRunSet& runs, const fs::path& schemes_dir, ValidationReport& rep) {
  ValidationGroup g = new_group(
      bench::gemm_concurrent,
      "engine: the GEMM on every virtual rank at once, sharing HBM (gemm_l2_reuse); virtual-node profile");
  // load_scheme_runs checked every node: its profile is a file beside schemes.json.
  for (const VirtualNodeRecord& node : runs.virtual_nodes) {
    MeasurementSet set;
    set.measurements = node.measurements;
    const auto conc = set.of(bench::gemm_concurrent);
    if (conc.empty()) continue;
    const HardwareProfile p = load_profile_file((schemes_dir / node.profile).string());
    for (const auto* m : conc) {
      const GemmShape s = shape_of(*m);
      const int ranks = static_cast<int>(m->config_count("ranks", kMaxUnitCount));
      ValidationRow vr = row(fmt::format("{} on {} ranks at once ({})", shape_text(s), ranks, node.profile),
                             *m, simulate_concurrent_gemm_us(p, s, ranks), false);
      for (const auto* alone : set.of(bench::gemm)) {
        if (shape_of(*alone).m == s.m && shape_of(*alone).n == s.n && shape_of(*alone).k == s.k)
          vr.note = fmt::format("alone {:.1f} us: measured {:.2f}x alone", alone->time_us.median, m->time_us.median / alone->time_us.median);
      }
      g.rows.push_back(std::move(vr));
    }
  }
  if (g.rows.empty()) return;
  finish(g);
  rep.groups.push_back(std::move(g));
}

struct FoCandidate {
  json params;
  double measured_us = 0, predicted_us = 0;
};
// What a FlashOverlap partition check needs of its workload's runs.
struct FoContext {
  fs::path profile;
  SchemeRunConfig config;
  sim::Workload workload;
  HardwareProfile hardware;
  sim::Fidelity fidelity = sim::Fidelity::curve;
};
// Candidates compete on one node: the same workload over a host-staged link is another check.
struct FoRuns {
  std::map<std::string, std::vector<FoCandidate>> candidates;  // workload + profile -> candidates
  std::map<std::string, FoContext> context;
};

// The scenario `overlap-sim run` would load for the run: its workload and scheme with its profile.
std::string run_scenario_yaml(const SchemeRunResult& r, const fs::path& profile, const json& sim_params) {
  return fmt::format("name: validate-{}\nhardware: {}\nworkload: {}\nschemes: [{{name: {}, params: {}}}]\n", r.config.id,
                     json(profile.string()).dump(), r.config.workload.dump(), r.config.scheme, sim_params.dump());
}

// One run simulated with its own profile: its row in `g` (FlashOverlap's also among `fo`'s
// candidates), or a line in rep.skipped saying why not.
void simulate_run(const SchemeRunSet& runs, const SchemeRunResult& r, const fs::path& file, ValidationGroup& g, FoRuns& fo,
                  ValidationReport& rep) {
  const std::string profile_name = r.profile.empty() ? runs.profile : r.profile;
  if (profile_name.empty()) throw InputError(file.string(), 0, "runs." + r.config.id + ".profile", "names no profile to simulate with");
  const fs::path profile = fs::absolute(fs::path(file).parent_path() / profile_name);
  if (!r.passed) {
    rep.skipped.push_back(fmt::format("schemes {}: failed its reference check (rel_error {:.3g}), not validated", r.config.id, r.rel_error));
    return;
  }
  // ctas_per_sm is the runner's kernel configuration, which the simulator reads from the virtual
  // node's profile (gpu.gemm_ctas_per_sm), not a scheme parameter: checked against it, not passed.
  json sim_params = r.config.params;
  const int run_ctas = run_ctas_per_sm(sim_params);
  if (sim_params.is_object()) sim_params.erase("ctas_per_sm");
  const std::string yaml = run_scenario_yaml(r, profile, sim_params);
  try {
    const sim::Scenario sc = sim::load_scenario_text(yaml, file.string());
    if (r.config.params.contains("ctas_per_sm") && sc.hardware.gpu.gemm_ctas_per_sm != run_ctas) {
      throw std::invalid_argument(fmt::format("params.ctas_per_sm {} is not the profile's gpu.gemm_ctas_per_sm {}", run_ctas,
                                              sc.hardware.gpu.gemm_ctas_per_sm));
    }
    // A CommFuse run that names no transport exchanged over what the node has (the runner refuses
    // another one): copy-engine pulls on virtual ranks, NCCL send/recv on a real node.
    if (r.config.scheme == "commfuse" && sim_params.is_object() && !sim_params.contains("transport"))
      sim_params["transport"] = sc.hardware.fabric.topology == "virtual" ? "copy_engine" : "nccl";
    const auto results = sim::evaluate_all({sim::SchemeRequest{r.config.scheme, sim_params}}, sc.workload, sc.hardware, sc.fidelity);
    if (results.empty()) throw std::invalid_argument("the simulator's scheme does not apply to this workload");
    const auto& res = results.front();
    ValidationRow vr;
    vr.config = fmt::format("{} {}", r.config.id, r.config.params.empty() ? "" : r.config.params.dump());
    vr.measured_us = r.latency_us.median;
    vr.predicted_us = us_from_ps(res.latency_ps);
    vr.error_pct = relative_error_pct(vr.predicted_us, vr.measured_us);
    vr.spread = r.latency_us.spread;
    vr.exposed_measured_us = r.latency_us.median - r.compute_only_us.median;
    vr.exposed_predicted_us = us_from_ps(res.exposed_comm_ps);
    vr.note = fmt::format("exposed comm measured {:.1f} us, predicted {:.1f} us; rel_error {:.2g}", *vr.exposed_measured_us,
                          *vr.exposed_predicted_us, r.rel_error);
    if (r.host_enqueue_us > 0) vr.note += fmt::format("; host enqueue {:.0f} us", r.host_enqueue_us);
    if (r.config.scheme == "flashoverlap") {
      const std::string key = r.config.workload.dump() + "\n" + profile.filename().string();
      fo.candidates[key].push_back({r.config.params, vr.measured_us, vr.predicted_us});
      fo.context[key] = {profile, r.config, sc.workload, sc.hardware, sc.fidelity};
    }
    g.rows.push_back(std::move(vr));
  } catch (const std::exception& e) {
    rep.skipped.push_back(fmt::format("schemes {}: not simulated: {}", r.config.id, e.what()));
  }
}

// FlashOverlap: among one workload's measured partitions, the measured best against the simulator's
// pick, FlashOverlap's own predictor's pick and `overlap-sim tune`'s partition.
PartitionCheck partition_check(const FoContext& fc, const std::vector<FoCandidate>& cands) {
  auto best_by = [&](auto by) {
    return std::min_element(cands.begin(), cands.end(), [&](const auto& a, const auto& b) { return by(a) < by(b); });
  };
  const auto by_measured = best_by([](const FoCandidate& c) { return c.measured_us; });
  const auto by_predicted = best_by([](const FoCandidate& c) { return c.predicted_us; });
  PartitionCheck pc;
  pc.workload = fc.config.workload.dump();
  pc.profile = fc.profile.filename().string();
  pc.measured_best = groups_text(by_measured->params);
  pc.simulated_best = groups_text(by_predicted->params);
  pc.measured_best_us = by_measured->measured_us;
  pc.simulated_pick_measured_us = by_predicted->measured_us;
  pc.regret_pct = 100.0 * (pc.simulated_pick_measured_us / pc.measured_best_us - 1.0);
  // FlashOverlap's predictor on the same candidates: the runner's 128x128 tiles, waves of
  // wave_sms x ctas_per_sm tiles.
  const SchemeRunConfig& cfg = fc.config;
  const HardwareProfile& hw = fc.hardware;
  const auto curve = hw.curves.find(cfg.primitive + ".n" + std::to_string(cfg.ranks));
  if (curve != hw.curves.end()) {
    WaveGroupProblem prob;
    prob.tiles = (cfg.m / 128) * (cfg.n / 128);
    // wave_sms is required of every FlashOverlap run (parse_scheme_runs).
    const int wave_sms = by_measured->params.at("wave_sms").get<int>();
    prob.tiles_per_wave = static_cast<std::int64_t>(wave_sms) * run_ctas_per_sm(by_measured->params);
    prob.bytes_per_tile = 128 * 128 * 2;
    prob.gemm_ps = gemm_time_ps(hw, GemmShape{cfg.m, cfg.n, cfg.k, DType::bf16}, wave_sms);
    const BandwidthCurve c = curve->second;
    prob.comm_ps = [c](Bytes b) { return c.time_ps(b); };
    const auto by_alg1 = best_by([&](const FoCandidate& x) {
      return predict_wave_groups_ps(prob, x.params.at("groups").get<std::vector<int>>());
    });
    pc.predictor_best = groups_text(by_alg1->params);
    pc.predictor_pick_measured_us = by_alg1->measured_us;
  }
  // `overlap-sim tune`'s own answer, over every partition (its default search, the engine's), in
  // tiles: its waves are the published tuner's (SMs - 2), the runner's whole-partition ones.
  const sim::WaveGroupTuneResult t = sim::tune_wave_groups(fc.workload, hw, fc.fidelity);
  pc.tune_best_tiles = t.groups_tiles;
  pc.tune_simulated_us = us_from_ps(t.simulated_ps);
  for (const FoCandidate& c : cands) {
    const std::int64_t per_wave =
        static_cast<std::int64_t>(c.params.at("wave_sms").get<int>()) * run_ctas_per_sm(c.params);
    std::vector<std::int64_t> tiles;
    for (const int w : c.params.at("groups").get<std::vector<int>>()) tiles.push_back(w * per_wave);
    if (tiles == t.groups_tiles) pc.tune_pick_measured_us = c.measured_us;
  }
  return pc;
}

}  // namespace

void scheme_groups(const std::string& dir, ValidationReport& rep) {
  const fs::path file = fs::path(dir) / "schemes" / "schemes.json";
  if (!fs::exists(file)) return;
  const SchemeRunSet runs = load_scheme_runs(file.string());
  concurrent_gemm_group(runs, file.parent_path(), rep);
  ValidationGroup g = new_group("schemes", "sim::evaluate_all on the run's workload and scheme with the run's virtual-node profile");
  FoRuns fo;
  for (const auto& r : runs.runs) simulate_run(runs, r, file, g, fo, rep);
  for (const auto& [key, cands] : fo.candidates) {
    if (cands.size() >= 2) rep.partitions.push_back(partition_check(fo.context.at(key), cands));
  }
  add_groups(rep, {&g});
}

}  // namespace overlap::calibrate
