#include "tools/cmd_validate.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "calibrate/core/calibration_plan.hpp"
#include "calibrate/core/measurement.hpp"
#include "calibrate/core/profile_writer.hpp"
#include "calibrate/core/scheme_config.hpp"
#include "calibrate/core/statistics.hpp"
#include "cost_model/flashoverlap_predictor.hpp"
#include "cost_model/gemm_model.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/input_file.hpp"
#include "cost_model/profile_loader.hpp"
#include "sim/atomic_file.hpp"
#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "sim/node_builder.hpp"
#include "sim/scenario.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/tune_wave_groups.hpp"

namespace overlap::tools {
namespace {

namespace fs = std::filesystem;
namespace cal = overlap::calibrate;
using nlohmann::json;

DType dtype_of(const cal::Measurement& m) {
  const std::string s = m.config_string("dtype", "bf16");
  const auto d = parse_dtype(s);
  if (!d) m.fail("config.dtype", "unknown dtype '" + s + "'");
  return *d;
}

GemmShape shape_of(const cal::Measurement& m) {
  return GemmShape{static_cast<std::int64_t>(m.config_count("m")), static_cast<std::int64_t>(m.config_count("n")),
                   static_cast<std::int64_t>(m.config_count("k")), dtype_of(m)};
}

std::string shape_text(const GemmShape& s) { return fmt::format("{}x{}x{} {}", s.m, s.n, s.k, dtype_name(s.dtype)); }

bool has_gemm_profile(const HardwareProfile& p, const GemmShape& s) {
  for (const auto& e : p.gemm_profiles) {
    if (e.m == s.m && e.n == s.n && e.k == s.k && e.dtype == s.dtype) return true;
  }
  return false;
}

// The engine on one GPU of `sms` SMs running one GEMM kernel (the measured time is CUDA events
// around the kernel alone, so no launch gap); a memory-bound plan takes at least its weight bytes
// over HBM, as cost_model's gemm_time_ps does.
// One tiled GEMM kernel of `plan` on `stream`.
sim::Op gemm_kernel(const GemmPlan& plan, sim::StreamId stream) {
  sim::Op op;
  op.name = "gemm";
  op.kind = sim::OpKind::tiled;
  op.stream = stream;
  op.ctas = plan.tiles;
  op.ctas_per_sm = plan.ctas_per_sm;
  op.cta_ps = plan.cta_ps;
  op.reference_sms = plan.reference_sms;
  return op;
}

double simulate_gemm_us(const HardwareProfile& p, const GemmShape& s, int sms) {
  const GemmPlan plan = plan_gemm(p, s);
  sim::TaskGraph g(1);
  g.add(gemm_kernel(plan, g.add_stream(0, "gemm")));
  sim::NodeConfig node = sim::make_node(p, 1);
  node.gpus[0].sm_count = sms;
  node.launch_gap_ps = 0;
  node.launch_host_ps = 0;
  const sim::Timeline tl = sim::run(g, node);
  return us_from_ps(std::max(tl.makespan_ps, plan.memory_ps));
}

// The benchmark's loop (bench_interference.cpp through timing.cpp time_on_stream_us), simulated as
// it runs: `warmup` repetitions, the host waiting for the timed stream only, then `reps` timed ones,
// none waited for in between. A repetition is a copy-engine copy of `copy_bytes` inside the GPU's
// memory on a side stream and the GEMM on the timed stream, so the copies queue back to back on
// their stream (the first timed copy no earlier than the host enqueues it, after the last warm-up
// GEMM), the GEMMs on theirs. The copy reads and writes HBM at the calibrated D2D rate, the GEMM's
// tiles stream their HBM traffic (gemm_tile_hbm_bytes), and the engine shares the HBM between them.
// Returns the median timed GEMM, as the benchmark reports it. (One copy beside one GEMM, what this
// predicted before, ends half-way through the GEMM: 889 us against the measured 1024 us.)
//
// timed_copy: the other row of the benchmark, the copy timed (on the timed stream) with
// `gemms_beside` GEMMs per repetition on the side stream; returns the median timed copy.
double simulate_gemm_beside_copies_us(const HardwareProfile& p, const GemmShape& s, Bytes copy_bytes, int warmup, int reps,
                                      bool timed_copy = false, int gemms_beside = 1) {
  const GemmPlan plan = plan_gemm(p, s);
  sim::TaskGraph g(1);
  const int side = g.add_stream(0, "side");
  const int timed = g.add_stream(0, "timed");
  auto copy_op = [&](int stream) {
    sim::Op copy;
    copy.name = "copy";
    copy.kind = sim::OpKind::copy;
    copy.stream = stream;
    copy.src_gpu = copy.dst_gpu = 0;
    copy.bytes = copy_bytes;
    copy.comm = true;
    return copy;
  };
  auto gemm_op = [&](int stream) {
    sim::Op gemm = gemm_kernel(plan, stream);
    gemm.hbm_bytes_per_cta = sim::gemm_tile_hbm_bytes(p, s, plan);
    return gemm;
  };
  std::vector<sim::OpId> measured;  // the timed stream's op of each repetition
  for (int i = 0; i < warmup + reps; ++i) {
    // The host enqueues the timed repetitions after waiting for the warm-up's timed stream.
    const std::vector<sim::OpId> after_wait = i == warmup && !measured.empty() ? std::vector<sim::OpId>{measured.back()} : std::vector<sim::OpId>{};
    for (int j = 0; j < (timed_copy ? gemms_beside : 1); ++j) {
      sim::Op o = timed_copy ? gemm_op(side) : copy_op(side);
      if (j == 0) o.deps = after_wait;
      g.add(o);
    }
    measured.push_back(g.add(timed_copy ? copy_op(timed) : gemm_op(timed)));
  }
  sim::NodeConfig node = sim::make_node(p, 1);
  node.launch_gap_ps = 0;
  node.launch_host_ps = 0;
  const sim::Timeline tl = sim::run(g, node);
  std::vector<double> us;
  for (std::size_t i = static_cast<std::size_t>(warmup); i < measured.size(); ++i) {
    const auto& r = tl.ops[static_cast<std::size_t>(measured[i])];
    us.push_back(us_from_ps(r.end_ps - r.start_ps));
  }
  return cal::median_of_values(us);
}

ValidationRow row(std::string config, const cal::Measurement& m, double predicted_us, bool fitted) {
  ValidationRow r;
  r.config = std::move(config);
  r.measured_us = m.time_us.median;
  r.predicted_us = predicted_us;
  r.error_pct = 100.0 * (predicted_us - r.measured_us) / r.measured_us;
  r.spread = m.time_us.spread;
  r.fitted = fitted;
  return r;
}

void finish(ValidationGroup& g) {
  std::vector<double> errs;
  for (const auto& r : g.rows) {
    if (!r.fitted) errs.push_back(std::fabs(r.error_pct));
  }
  g.scored = static_cast<int>(errs.size());
  if (!errs.empty()) {
    g.median_abs_error_pct = cal::median_of_values(errs);
    g.max_abs_error_pct = *std::max_element(errs.begin(), errs.end());
  }
  std::vector<double> exposed_us, exposed_pct;
  for (const auto& r : g.rows) {
    if (r.fitted || !r.exposed_measured_us || !r.exposed_predicted_us) continue;
    const double e = std::fabs(*r.exposed_predicted_us - *r.exposed_measured_us);
    exposed_us.push_back(e);
    exposed_pct.push_back(100.0 * e / r.measured_us);
  }
  g.exposed_rows = static_cast<int>(exposed_us.size());
  if (!exposed_us.empty()) {
    g.exposed_median_abs_error_us = cal::median_of_values(exposed_us);
    g.exposed_median_abs_error_pct_of_latency = cal::median_of_values(exposed_pct);
  }
}

std::string curve_key_for(const std::string& path, const json& env, bool have_sm_copy_key) {
  const std::string cls = env.value("p2p_link_class", std::string("nvlink"));
  if (path == "copy_engine.p2p") return "copy_engine." + cls;
  if (path == "sm_copy.p2p") return (have_sm_copy_key ? "sm_copy." : "p2p.") + cls;
  return path;
}

// A GEMM's time grows with K at fixed M, N and SMs (the same tiles, each with more K steps), so a
// measurement slower than the same GEMM with at least 4x its K contradicts the other one: one of
// the two was disturbed (clocks, a neighbour), and a profile fitted from it inherits the error.
void flag_slower_than_longer_k(ValidationGroup& g, const std::vector<GemmShape>& shapes, const std::vector<int>& sms,
                               ValidationReport& rep) {
  for (std::size_t i = 0; i < g.rows.size() && i < shapes.size(); ++i) {
    for (std::size_t j = 0; j < g.rows.size() && j < shapes.size(); ++j) {
      const GemmShape& a = shapes[i];
      const GemmShape& b = shapes[j];
      if (a.m != b.m || a.n != b.n || a.dtype != b.dtype || sms[i] != sms[j] || b.k < 4 * a.k) continue;
      if (g.rows[i].measured_us <= g.rows[j].measured_us) continue;
      const std::string why = fmt::format("measured {:.1f} us, slower than {} with {}x its K ({:.1f} us)", g.rows[i].measured_us,
                                          shape_text(b), b.k / a.k, g.rows[j].measured_us);
      if (!g.rows[i].suspicious.empty()) continue;  // one contradiction is enough to say
      g.rows[i].suspicious = why;
      rep.suspicious.push_back(fmt::format("{} {}{}: {}", g.benchmark, g.rows[i].config, g.rows[i].fitted ? " (fitted)" : "", why));
    }
  }
}

void gemm_groups(const cal::MeasurementSet& set, const HardwareProfile& p, ValidationReport& rep) {
  const int S = p.gpu.sm_count;
  ValidationGroup whole{cal::bench::gemm, "engine: one tiled kernel on every SM (profile gemm_profiles)", {}, 0, 0, 0};
  std::vector<GemmShape> whole_shapes;
  for (const auto* m : set.of(cal::bench::gemm)) {
    const GemmShape s = shape_of(*m);
    whole.rows.push_back(row(shape_text(s), *m, simulate_gemm_us(p, s, S), has_gemm_profile(p, s)));
    whole_shapes.push_back(s);
  }
  flag_slower_than_longer_k(whole, whole_shapes, std::vector<int>(whole_shapes.size(), S), rep);
  // With gpu.gemm_full_rate_sms, the rows on the two smallest partitions fitted it (with the whole GPU's).
  const bool full_rate = p.gpu.gemm_full_rate_sms > 0;
  const std::vector<int> fit_sms = full_rate ? cal::fit_gemm_full_rate_sms(set, S).fit_sms : std::vector<int>{};
  ValidationGroup on_k{cal::bench::gemm_sm,
                       full_rate ? fmt::format("engine: one tiled kernel on k SMs (green context), calibrated CTA time "
                                               "x max(F, k) / max(F, R), F = gemm_full_rate_sms = {:g}, R = the whole GPU's busy SMs",
                                               p.gpu.gemm_full_rate_sms)
                                 : std::string("engine: one tiled kernel on k SMs (green context), calibrated CTA time"),
                       {}, 0, 0, 0};
  std::vector<GemmShape> on_k_shapes;
  std::vector<int> on_k_sms;
  for (const auto* m : set.of(cal::bench::gemm_sm)) {
    const GemmShape s = shape_of(*m);
    const int k = static_cast<int>(m->config_count("sms", S));
    on_k_shapes.push_back(s);
    on_k_sms.push_back(k);
    const bool fitted = (k == S && has_gemm_profile(p, s)) || std::find(fit_sms.begin(), fit_sms.end(), k) != fit_sms.end();
    // A partition that hosts the kernel's clusters on fewer SMs runs it on those (measured by the
    // calibration where it recorded cluster_sms_reached).
    const int usable = k == S ? k : cal::gemm_sm_effective_sms(*m);
    on_k.rows.push_back(row(usable == k ? fmt::format("{} on {} SMs", shape_text(s), k)
                                        : fmt::format("{} on {} SMs ({} reached by its clusters)", shape_text(s), k, usable),
                            *m, simulate_gemm_us(p, s, usable), fitted));
  }
  flag_slower_than_longer_k(on_k, on_k_shapes, on_k_sms, rep);
  // With the CTA roofline the profile's fit saw the whole-GPU grid only: these rows are out of sample.
  ValidationGroup waves{cal::bench::gemm_waves,
                        p.gpu.gemm_sm_load_gbps > 0
                            ? "engine: one tiled kernel; tile and CTA time from the CTA roofline (fitted on the gemm grid)"
                            : "engine: one tiled kernel; tile from the heuristic, rate gemm_tile_us",
                        {}, 0, 0, 0};
  std::vector<GemmShape> wave_shapes;
  for (const auto* m : set.of(cal::bench::gemm_waves)) {
    const GemmShape s = shape_of(*m);
    waves.rows.push_back(row(shape_text(s), *m, simulate_gemm_us(p, s, S), has_gemm_profile(p, s)));
    wave_shapes.push_back(s);
  }
  flag_slower_than_longer_k(waves, wave_shapes, std::vector<int>(wave_shapes.size(), S), rep);
  ValidationGroup tile{cal::bench::gemm_tile, "the full-wave GEMMs behind the GEMM rate (fitted, not scored)", {}, 0, 0, 0};
  std::vector<GemmShape> tile_shapes;
  for (const auto* m : set.of(cal::bench::gemm_tile)) {
    const GemmShape s = shape_of(*m);
    tile.rows.push_back(row(shape_text(s), *m, simulate_gemm_us(p, s, S), true));
    tile_shapes.push_back(s);
  }
  flag_slower_than_longer_k(tile, tile_shapes, std::vector<int>(tile_shapes.size(), S), rep);
  ValidationGroup icopy{cal::bench::interference_sm_copy,
                        "cost_model gemm_time_ps on S - k SMs x (1 + gemm_comm_interference k / S); the one "
                        "coefficient is fitted over these rows",
                        {}, 0, 0, 0};
  for (const auto* m : set.of(cal::bench::interference_sm_copy)) {
    const GemmShape s = shape_of(*m);
    // The GEMM keeps at least one SM: a copy of S or more CTAs would leave it none.
    const int k = static_cast<int>(m->config_count("copy_ctas", S - 1));
    icopy.rows.push_back(row(fmt::format("{} beside an SM copy of {} CTAs", shape_text(s), k), *m,
                             us_from_ps(gemm_time_ps(p, s, S - k)), false));
  }
  ValidationGroup ice{cal::bench::interference_copy_engine,
                      "engine: d2d, the benchmark's warm-up and repetitions replayed (copies queued back to back beside the GEMMs, "
                      "sharing HBM; the GEMM's tile traffic from the L2 model), median GEMM, or median copy where the copy is "
                      "timed beside GEMMs; "
                      "h2d / d2h, the GEMM alone (the profile has no host memory; PCIe moves ~2 % of HBM's rate)",
                      {}, 0, 0, 0};
  for (const auto* m : set.of(cal::bench::interference_copy_engine)) {
    const GemmShape s = shape_of(*m);
    const std::string dir = m->config_string("direction");
    if (dir != "d2d" && dir != "h2d" && dir != "d2h") m->fail("config.direction", "must be d2d, h2d or d2h (got '" + dir + "')");
    // Older results recorded no copy size for h2d / d2h (0: only the GEMM alone is predicted).
    const auto copy_bytes = static_cast<Bytes>(m->config.contains("copy_bytes") ? m->config_count("copy_bytes") : 0);
    const bool local = dir == "d2d" && copy_bytes > 0 && p.gpu.hbm_bandwidth_gbps > 0;
    // Warm-up: as the benchmark recorded it; the driver's default (5) before it did.
    const std::int64_t warmup_reps = m->derived_int("warmup", 5);
    if (warmup_reps < 0 || warmup_reps > 1000) m->fail("derived.warmup", "must be 0 to 1000 (got " + std::to_string(warmup_reps) + ")");
    const int warmup = static_cast<int>(warmup_reps);
    const int reps = std::max(1, m->time_us.count);
    if (m->config_string("timed", "gemm") == "copy") {
      if (!local) continue;  // only d2d is timed this way
      const std::int64_t gemms = m->config_int("gemms_beside", 1);
      if (gemms < 1 || gemms > 64) m->fail("config.gemms_beside", "must be 1 to 64 (got " + std::to_string(gemms) + ")");
      const int beside = static_cast<int>(gemms);
      ice.rows.push_back(row(fmt::format("copy-engine d2d {} B beside {} GEMMs", copy_bytes, shape_text(s)), *m,
                             simulate_gemm_beside_copies_us(p, s, copy_bytes, warmup, reps, true, beside), false));
      continue;
    }
    ice.rows.push_back(row(fmt::format("{} beside copy-engine {}", shape_text(s), dir), *m,
                           local ? simulate_gemm_beside_copies_us(p, s, copy_bytes, warmup, reps) : simulate_gemm_us(p, s, S),
                           false));
  }
  for (auto* g : {&whole, &on_k, &waves, &tile, &icopy, &ice}) {
    if (!g->rows.empty()) rep.groups.push_back(std::move(*g));
  }
}

void transfer_groups(const cal::MeasurementSet& set, const HardwareProfile& p, ValidationReport& rep) {
  const bool v2_keys = p.curves.count("sm_copy.d2d") > 0;
  std::map<std::string, int> max_ctas;
  for (const auto* m : set.of(cal::bench::transfer)) {
    const std::string path = m->config_string("path", std::string());
    max_ctas[path] = std::max(max_ctas[path], static_cast<int>(m->config_int("ctas", 0)));
  }
  std::set<std::string> no_curve;  // measured paths the profile cannot predict, said once each
  ValidationGroup tr{cal::bench::transfer, "the profile's curve of that path at that size (what an isolated transfer takes)", {}, 0, 0, 0};
  for (const auto* m : set.of(cal::bench::transfer)) {
    const std::string path = m->config_string("path", std::string());
    const int ctas = m->config_int("ctas", 0);
    if (ctas > 0 && ctas != max_ctas[path]) continue;  // the curve is the largest CTA count's
    const std::string key = curve_key_for(path, set.environment, v2_keys);
    const auto it = p.curves.find(key);
    if (it == p.curves.end()) {
      no_curve.insert(fmt::format("transfer {}: the profile has no curve '{}', not validated", path, key));
      continue;
    }
    const auto bytes = static_cast<Bytes>(m->config_count("bytes"));
    tr.rows.push_back(row(fmt::format("{} {} B{}", path, bytes, ctas > 0 ? fmt::format(" ({} CTAs)", ctas) : ""), *m,
                          us_from_ps(it->second.time_ps(bytes)), cal::curve_sample_size(bytes)));
  }
  ValidationGroup nccl{cal::bench::nccl, "the profile's collective curve (primitive.n<ranks>) at that size", {}, 0, 0, 0};
  for (const auto* m : set.of(cal::bench::nccl)) {
    const int ranks = static_cast<int>(m->config_count("ranks", cal::kMaxUnitCount));
    const std::string key = m->config_string("primitive") + ".n" + std::to_string(ranks);
    const auto it = p.curves.find(key);
    if (it == p.curves.end()) {
      no_curve.insert(fmt::format("nccl {}: the profile has no such curve, not validated", key));
      continue;
    }
    const auto bytes = static_cast<Bytes>(m->config_count("bytes"));
    nccl.rows.push_back(row(fmt::format("{} {} B", key, bytes), *m, us_from_ps(it->second.time_ps(bytes)),
                            cal::curve_sample_size(bytes)));
  }
  ValidationGroup hbm{cal::bench::hbm_stream,
                      p.gpu.hbm_latency_us > 0
                          ? "hbm_latency_us + bytes / min(hbm_bandwidth_gbps x hbm_efficiency, SMs x hbm_sm_gbps), a "
                            "memory-bound kernel (the line through the smallest and largest reads; per SM from the "
                            "smallest partition)"
                          : "bytes / (hbm_bandwidth_gbps x hbm_efficiency), a memory-bound kernel",
                      {}, 0, 0, 0};
  // The reads the profile's figures came from (cal::fit_hbm_stream): shown, not scored.
  const cal::HbmFit fit = cal::fit_hbm_stream(set);
  for (const auto* m : set.of(cal::bench::hbm_stream)) {
    if (p.gpu.hbm_bandwidth_gbps <= 0) break;
    const auto bytes = static_cast<Bytes>(m->config_count("bytes"));
    if (m->config.contains("sms")) {  // on k SMs (a green context): capped at k x hbm_sm_gbps
      const int k = static_cast<int>(m->config_count("sms", p.gpu.sm_count));
      hbm.rows.push_back(row(fmt::format("GEMV read of {} B on {} SMs", bytes, k), *m,
                             us_from_ps(streaming_kernel_ps(p, bytes, k)), p.gpu.hbm_sm_gbps > 0 && k == fit.sm_fit_sms));
      continue;
    }
    const bool fitted = bytes == fit.large_bytes || (p.gpu.hbm_latency_us > 0 && bytes == fit.small_bytes);
    hbm.rows.push_back(row(fmt::format("GEMV read of {} B", bytes), *m, us_from_ps(streaming_kernel_ps(p, bytes)), fitted));
  }
  for (auto* g : {&tr, &nccl, &hbm}) {
    if (!g->rows.empty()) rep.groups.push_back(std::move(*g));
  }
  rep.skipped.insert(rep.skipped.end(), no_curve.begin(), no_curve.end());
}

std::string groups_text(const json& params) {
  return params.contains("groups") ? params["groups"].dump() : params.dump();
}

// The engine on a virtual node: the same GEMM on each of its T ranks at once (own operands), the
// ranks sharing the GPU's HBM through their tiles' HBM demand (gemm_tile_hbm_bytes).
double simulate_concurrent_gemm_us(const HardwareProfile& p, const GemmShape& s, int ranks) {
  const GemmPlan plan = plan_gemm(p, s);
  sim::TaskGraph g(ranks);
  for (int r = 0; r < ranks; ++r) {
    sim::Op op = gemm_kernel(plan, g.add_stream(r, "gemm"));
    op.hbm_bytes_per_cta = sim::gemm_tile_hbm_bytes(p, s, plan);
    g.add(op);
  }
  sim::NodeConfig node = sim::make_node(p, ranks);
  node.launch_gap_ps = 0;
  node.launch_host_ps = 0;
  return us_from_ps(sim::run(g, node).makespan_ps);
}

void concurrent_gemm_group(const cal::SchemeRunSet& runs, const fs::path& schemes_dir, ValidationReport& rep) {
  ValidationGroup g{cal::bench::gemm_concurrent,
                    "engine: the GEMM on every virtual rank at once, sharing HBM (gemm_l2_reuse); virtual-node profile",
                    {}, 0, 0, 0};
  // load_scheme_runs checked every node: its profile is a file beside schemes.json.
  for (const cal::VirtualNodeRecord& node : runs.virtual_nodes) {
    cal::MeasurementSet set;
    set.measurements = node.measurements;
    const auto conc = set.of(cal::bench::gemm_concurrent);
    if (conc.empty()) continue;
    const HardwareProfile p = load_profile_file((schemes_dir / node.profile).string());
    for (const auto* m : conc) {
      const GemmShape s = shape_of(*m);
      const int ranks = static_cast<int>(m->config_count("ranks", cal::kMaxUnitCount));
      ValidationRow vr = row(fmt::format("{} on {} ranks at once ({})", shape_text(s), ranks, node.profile),
                             *m, simulate_concurrent_gemm_us(p, s, ranks), false);
      for (const auto* alone : set.of(cal::bench::gemm)) {
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

void scheme_group(const std::string& dir, ValidationReport& rep) {
  const fs::path file = fs::path(dir) / "schemes" / "schemes.json";
  if (!fs::exists(file)) return;
  const cal::SchemeRunSet runs = cal::load_scheme_runs(file.string());
  concurrent_gemm_group(runs, file.parent_path(), rep);
  ValidationGroup g{"schemes", "sim::evaluate_all on the run's workload and scheme with the run's virtual-node profile", {}, 0, 0, 0};
  struct FoCandidate {
    json params;
    double measured_us = 0, predicted_us = 0;
  };
  std::map<std::string, std::vector<FoCandidate>> fo;  // workload -> candidates
  struct FoContext {
    fs::path profile;
    cal::SchemeRunConfig config;
    sim::Workload workload;
    HardwareProfile hardware;
    sim::Fidelity fidelity = sim::Fidelity::curve;
  };
  std::map<std::string, FoContext> fo_context;
  for (const auto& r : runs.runs) {
    const std::string profile_name = r.profile.empty() ? runs.profile : r.profile;
    if (profile_name.empty()) throw InputError(file.string(), 0, "runs." + r.config.id + ".profile", "names no profile to simulate with");
    const fs::path profile = fs::absolute(fs::path(file).parent_path() / profile_name);
    if (!r.passed) {
      rep.skipped.push_back(fmt::format("schemes {}: failed its reference check (rel_error {:.3g}), not validated", r.config.id, r.rel_error));
      continue;
    }
    // ctas_per_sm is the runner's kernel configuration, which the simulator reads from the virtual
    // node's profile (gpu.gemm_ctas_per_sm), not a scheme parameter: checked against it, not passed.
    json sim_params = r.config.params;
    const int run_ctas = sim_params.is_object() ? sim_params.value("ctas_per_sm", 1) : 1;
    if (sim_params.is_object()) sim_params.erase("ctas_per_sm");
    const std::string yaml = fmt::format("name: validate-{}\nhardware: {}\nworkload: {}\nschemes: [{{name: {}, params: {}}}]\n",
                                         r.config.id, json(profile.string()).dump(), r.config.workload.dump(), r.config.scheme,
                                         sim_params.dump());
    try {
      const sim::Scenario sc = sim::load_scenario_text(yaml, file.string());
      if (r.config.params.contains("ctas_per_sm") && sc.hardware.gpu.gemm_ctas_per_sm != run_ctas) {
        throw std::invalid_argument(fmt::format("params.ctas_per_sm {} is not the profile's gpu.gemm_ctas_per_sm {}", run_ctas,
                                                sc.hardware.gpu.gemm_ctas_per_sm));
      }
      // CommFuse's exchanges were what the node has (the runner refuses another transport): copy-engine
      // pulls on virtual ranks, NCCL send/recv on a real node. Runs recorded before the parameter
      // existed do not name it.
      if (r.config.scheme == "commfuse" && sim_params.is_object() && !sim_params.contains("transport"))
        sim_params["transport"] = sc.hardware.fabric.topology == "virtual" ? "copy_engine" : "nccl";
      const auto results = sim::evaluate_all({sim::SchemeRequest{r.config.scheme, sim_params}}, sc.workload, sc.hardware, sc.fidelity);
      if (results.empty()) throw std::invalid_argument("the simulator's scheme does not apply to this workload");
      const auto& res = results.front();
      ValidationRow vr;
      vr.config = fmt::format("{} {}", r.config.id, r.config.params.empty() ? "" : r.config.params.dump());
      vr.measured_us = r.latency_us.median;
      vr.predicted_us = us_from_ps(res.latency_ps);
      vr.error_pct = 100.0 * (vr.predicted_us - vr.measured_us) / vr.measured_us;
      vr.spread = r.latency_us.spread;
      vr.exposed_measured_us = r.latency_us.median - r.compute_only_us.median;
      vr.exposed_predicted_us = us_from_ps(res.exposed_comm_ps);
      vr.note = fmt::format("exposed comm measured {:.1f} us, predicted {:.1f} us; rel_error {:.2g}", *vr.exposed_measured_us,
                            *vr.exposed_predicted_us, r.rel_error);
      if (r.host_enqueue_us > 0) vr.note += fmt::format("; host enqueue {:.0f} us", r.host_enqueue_us);
      if (r.config.scheme == "flashoverlap") {
        // Candidates compete on one node: the same workload over a host-staged link is another check.
        const std::string key = r.config.workload.dump() + "\n" + profile.filename().string();
        fo[key].push_back({r.config.params, vr.measured_us, vr.predicted_us});
        fo_context[key] = {profile, r.config, sc.workload, sc.hardware, sc.fidelity};
      }
      g.rows.push_back(std::move(vr));
    } catch (const std::exception& e) {
      rep.skipped.push_back(fmt::format("schemes {}: not simulated: {}", r.config.id, e.what()));
    }
  }
  for (const auto& entry : fo) {
    // Not a structured binding: clang before 16 (the fuzz build's) cannot capture one in a lambda.
    const auto& key = entry.first;
    const auto& cands = entry.second;
    if (cands.size() < 2) continue;
    auto best_by = [&](auto by) {
      return std::min_element(cands.begin(), cands.end(), [&](const auto& a, const auto& b) { return by(a) < by(b); });
    };
    const auto by_measured = best_by([](const FoCandidate& c) { return c.measured_us; });
    const auto by_predicted = best_by([](const FoCandidate& c) { return c.predicted_us; });
    PartitionCheck pc;
    const FoContext& fc = fo_context.at(key);
    pc.workload = fc.config.workload.dump();
    pc.profile = fc.profile.filename().string();
    pc.measured_best = groups_text(by_measured->params);
    pc.simulated_best = groups_text(by_predicted->params);
    pc.measured_best_us = by_measured->measured_us;
    pc.simulated_pick_measured_us = by_predicted->measured_us;
    pc.regret_pct = 100.0 * (pc.simulated_pick_measured_us / pc.measured_best_us - 1.0);
    // FlashOverlap's predictor on the same candidates: the runner's 128x128 tiles, waves of
    // wave_sms x ctas_per_sm tiles.
    const cal::SchemeRunConfig& cfg = fc.config;
    const HardwareProfile& hw = fc.hardware;
    const auto curve = hw.curves.find(cfg.primitive + ".n" + std::to_string(cfg.ranks));
    if (curve != hw.curves.end()) {
      WaveGroupProblem prob;
      prob.tiles = (cfg.m / 128) * (cfg.n / 128);
      const int wave_sms = by_measured->params.value("wave_sms", hw.gpu.sm_count);
      prob.tiles_per_wave = static_cast<std::int64_t>(wave_sms) * by_measured->params.value("ctas_per_sm", 1);
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
      const std::int64_t per_wave = static_cast<std::int64_t>(c.params.value("wave_sms", hw.gpu.sm_count)) *
                                    c.params.value("ctas_per_sm", 1);
      std::vector<std::int64_t> tiles;
      for (const int w : c.params.at("groups").get<std::vector<int>>()) tiles.push_back(w * per_wave);
      if (tiles == t.groups_tiles) pc.tune_pick_measured_us = c.measured_us;
    }
    rep.partitions.push_back(pc);
  }
  if (!g.rows.empty()) rep.groups.push_back(std::move(g));
}

// The targets: each group's accuracy target and the medians recorded beside the results
// (validation.json, as --record wrote it); each group's tolerance for single rows; the verdict.
void judge(ValidationReport& rep, const fs::path& recorded) {
  json records;
  if (fs::exists(recorded)) {
    const auto text = read_input_file_if_exists(recorded.string(), "validation record", 1 << 20);
    try {
      records = json::parse(text.value_or("{}")).value("median_abs_error_pct", json::object());
    } catch (const json::exception& e) {
      throw InputError(recorded.string(), 0, "", std::string("not JSON: ") + e.what());
    }
    if (!records.is_object()) throw InputError(recorded.string(), 0, "median_abs_error_pct", "must be a map of group -> %");
  }
  auto record_of = [&](const std::string& key) -> std::optional<double> {
    if (!records.is_object() || !records.contains(key) || !records[key].is_number()) return std::nullopt;
    return records[key].get<double>();
  };
  rep.recorded_median_pct = record_of("all");
  std::vector<std::string> missed, regressed;
  int judged = 0;
  for (ValidationGroup& g : rep.groups) {
    g.target_median_pct = accuracy_target_pct(g.benchmark);
    g.recorded_median_pct = record_of(g.benchmark);
    const double base = g.target_median_pct.value_or(g.recorded_median_pct.value_or(g.median_abs_error_pct));
    g.tolerance_pct = std::max(kOffFactor * base, kOffFloorPct);
    g.off_rows = 0;
    for (ValidationRow& r : g.rows) {
      r.off = !r.fitted && std::fabs(r.error_pct) > g.tolerance_pct;
      g.off_rows += r.off ? 1 : 0;
    }
    g.result = "-";
    if (g.scored == 0 || (!g.target_median_pct && !g.recorded_median_pct)) continue;
    ++judged;
    g.result = "ok";
    if (g.recorded_median_pct && g.median_abs_error_pct > *g.recorded_median_pct + kValidationMarginPct) {
      g.result = "REGRESSED";
      regressed.push_back(fmt::format("{} {:.2f} % > recorded {:.2f} % + {:.1f}", g.benchmark, g.median_abs_error_pct,
                                      *g.recorded_median_pct, kValidationMarginPct));
    }
    if (g.target_median_pct && g.median_abs_error_pct > *g.target_median_pct) {
      g.result = g.result == "REGRESSED" ? "MISS, REGRESSED" : "MISS";
      missed.push_back(fmt::format("{} {:.2f} % > target {:g} %", g.benchmark, g.median_abs_error_pct, *g.target_median_pct));
    }
  }
  if (rep.recorded_median_pct && rep.scored > 0 && rep.median_abs_error_pct > *rep.recorded_median_pct + kValidationMarginPct)
    regressed.push_back(fmt::format("all rows {:.2f} % > recorded {:.2f} % + {:.1f}", rep.median_abs_error_pct,
                                    *rep.recorded_median_pct, kValidationMarginPct));
  auto join = [](const std::vector<std::string>& parts) {
    std::string s;
    for (const auto& p : parts) s += (s.empty() ? "" : "; ") + p;
    return s;
  };
  if (judged == 0) {
    rep.verdict = "NO TARGET";
    rep.verdict_detail = "no group has an accuracy target or a recorded median (record one with --record)";
  } else if (missed.empty() && regressed.empty()) {
    rep.verdict = "PASS";
    rep.verdict_detail = fmt::format("{} groups judged: every one within its accuracy target and its recorded median (+{:.1f})",
                                     judged, kValidationMarginPct);
  } else {
    rep.verdict = !missed.empty() && !regressed.empty() ? "MISS, REGRESSED" : !missed.empty() ? "MISS" : "REGRESSED";
    rep.verdict_detail = join(missed);
    if (!regressed.empty()) rep.verdict_detail += (missed.empty() ? "" : "; ") + join(regressed);
  }
}

}  // namespace

std::optional<double> accuracy_target_pct(const std::string& benchmark) {
  static const std::set<std::string> kFivePct = {"gemm", "gemm_tile", "gemm_waves", "gemm_sm", "gemm_concurrent",
                                                 "transfer", "schemes"};
  if (kFivePct.count(benchmark)) return 5.0;
  return std::nullopt;
}

ValidationReport validate_dir(const std::string& dir) {
  ValidationReport rep;
  rep.dir = dir;
  const fs::path measurements = fs::path(dir) / "measurements.json";
  if (fs::exists(measurements)) {
    const cal::MeasurementSet set = cal::load_measurement_dir(dir);
    rep.fixture = set.fixture;
    rep.profile_file = (fs::path(dir) / "profile.yaml").string();
    if (!fs::exists(rep.profile_file)) throw InputError(rep.profile_file, 0, "", "missing: run overlap-calibrate-profile DIR");
    const HardwareProfile p = load_profile_file(rep.profile_file);
    gemm_groups(set, p, rep);
    transfer_groups(set, p, rep);
  } else if (!fs::exists(fs::path(dir) / "schemes" / "schemes.json")) {
    throw InputError(dir, 0, "", "neither measurements.json nor schemes/schemes.json: not a results directory");
  }
  scheme_group(dir, rep);
  std::vector<double> all;
  for (auto& g : rep.groups) {
    finish(g);
    for (const auto& r : g.rows) {
      if (!r.fitted) all.push_back(std::fabs(r.error_pct));
    }
  }
  rep.scored = static_cast<int>(all.size());
  if (!all.empty()) {
    rep.median_abs_error_pct = cal::median_of_values(all);
    rep.max_abs_error_pct = *std::max_element(all.begin(), all.end());
  }
  judge(rep, fs::path(dir) / "validation.json");
  return rep;
}

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

void print_validation_table(const ValidationReport& rep, std::ostream& out) {
  // The verdict first: per group against its accuracy target and its recorded median, then the rows.
  out << fmt::format("verdict: {}: {}{}\n", rep.verdict, rep.verdict_detail,
                     rep.fixture ? "   (FIXTURE: made-up numbers, not a measurement)" : "");
  out << fmt::format("  median |error| {:.2f} % over {} scored rows{}\n", rep.median_abs_error_pct, rep.scored,
                     rep.recorded_median_pct ? fmt::format(" (recorded {:.2f} %)", *rep.recorded_median_pct) : "");
  std::size_t width = 5;
  for (const auto& g : rep.groups) width = std::max(width, g.benchmark.size());
  out << fmt::format("  {:<{}}  {:>15}  {:>14}  {:>8}  {:>10}  {:>9}  {}\n", "group", width, "result", "median |err| %",
                     "target %", "recorded %", "tolerance", "rows off / scored");
  for (const auto& g : rep.groups) {
    out << fmt::format("  {:<{}}  {:>15}  {:>14.2f}  {:>8}  {:>10}  {:>8.1f}%  {} / {}\n", g.benchmark, width, g.result,
                       g.median_abs_error_pct, g.target_median_pct ? fmt::format("{:g}", *g.target_median_pct) : "-",
                       g.recorded_median_pct ? fmt::format("{:.2f}", *g.recorded_median_pct) : "-", g.tolerance_pct,
                       g.off_rows, g.scored);
  }
  for (const auto& s : rep.suspicious) out << "  suspicious: " << s << "\n";
  out << fmt::format("(target: the accuracy promised per group; recorded: DIR/validation.json, held to +{:.1f}; rows with "
                     "|error| above {:g} x the target (else the recorded or own median), at least {:g} %, are marked OFF)\n\n",
                     kValidationMarginPct, kOffFactor, kOffFloorPct);
  out << fmt::format("validate: {}{}\nprofile: {}\nerror = 100 x (predicted - measured) / measured; rows marked "
                     "'fitted' built the profile and are not scored\n",
                     rep.dir, rep.fixture ? "   (FIXTURE: made-up numbers, not a measurement)" : "", rep.profile_file);
  for (const auto& g : rep.groups) {
    out << fmt::format("\n== {}: {}\n", g.benchmark, g.model);
    out << fmt::format("{:<64} {:>14} {:>15} {:>10} {:>8}\n", "configuration", "measured (us)", "predicted (us)", "error (%)", "spread");
    for (const auto& r : g.rows) {
      out << fmt::format("{:<64} {:>14.3f} {:>15.3f} {:>10.2f} {:>8.3f}{}{}{}{}\n", r.config, r.measured_us, r.predicted_us,
                         r.error_pct, r.spread, r.fitted ? "  fitted" : "", r.off ? "  OFF" : "",
                         r.suspicious.empty() ? "" : "  SUSPICIOUS: " + r.suspicious, r.note.empty() ? "" : "  " + r.note);
    }
    out << fmt::format("median |error| {:.2f} %, max {:.2f} % over {} scored rows\n", g.median_abs_error_pct,
                       g.max_abs_error_pct, g.scored);
    if (g.exposed_rows > 0) {
      out << fmt::format("exposed communication: median |predicted - measured| {:.1f} us, {:.2f} % of the measured latency, "
                         "over {} runs\n",
                         g.exposed_median_abs_error_us, g.exposed_median_abs_error_pct_of_latency, g.exposed_rows);
    }
  }
  if (!rep.partitions.empty()) {
    out << "\n== flashoverlap partitions: measured best vs the simulator's best among the measured candidates, "
           "FlashOverlap's predictor's, and tune's over every partition\n";
    for (const auto& p : rep.partitions) {
      out << fmt::format("{} on {}: measured best {} ({:.1f} us), simulator's pick {} (measured {:.1f} us, regret {:.2f} %)", p.workload, p.profile,
                         p.measured_best, p.measured_best_us, p.simulated_best, p.simulated_pick_measured_us, p.regret_pct);
      if (!p.predictor_best.empty()) {
        out << fmt::format(", FlashOverlap's predictor's pick {} (measured {:.1f} us)", p.predictor_best, p.predictor_pick_measured_us);
      }
      if (!p.tune_best_tiles.empty()) {
        out << fmt::format("; tune over every partition: groups of {} tiles (simulated {:.1f} us, {})",
                           json(p.tune_best_tiles).dump(), p.tune_simulated_us,
                           p.tune_pick_measured_us > 0 ? fmt::format("measured {:.1f} us", p.tune_pick_measured_us)
                                                       : std::string("not among the measured runs"));
      }
      out << "\n";
    }
  }
  for (const auto& s : rep.skipped) out << "skipped: " << s << "\n";
  out << fmt::format("\noverall: median |error| {:.2f} %, max {:.2f} % over {} scored rows\n", rep.median_abs_error_pct,
                     rep.max_abs_error_pct, rep.scored);
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

void cmd_validate(const std::string& dir, const std::string& format, bool record, std::ostream& out, std::ostream& err) {
  const ValidationReport rep = validate_dir(dir);
  if (format == "json") {
    out << to_json(rep).dump(2) << "\n";
  } else {
    print_validation_table(rep, out);
  }
  if (record) {
    const std::string file = (fs::path(dir) / "validation.json").string();
    write_file_atomically(file, recorded_figures(rep).dump(2) + "\n");
    err << "wrote " << file << "\n";
  }
}

}  // namespace overlap::tools
