#include "calibrate/validate/groups.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "calibrate/core/calibration_plan.hpp"
#include "calibrate/core/profile_writer.hpp"

namespace overlap::calibrate {

namespace {

// One row per `benchmark` GEMM run on the whole GPU, fitted where the profile holds its measurement
// (every row when `all_fitted`), flagged where it ran slower than the same GEMM with a longer k.
ValidationGroup on_whole_gpu(const MeasurementSet& set, const HardwareProfile& p, const char* benchmark, std::string model,
                             bool all_fitted, ValidationReport& rep) {
  const int S = p.gpu.sm_count;
  ValidationGroup g = new_group(benchmark, std::move(model));
  std::vector<GemmShape> shapes;
  for (const auto* m : set.of(benchmark)) {
    const GemmShape s = shape_of(*m);
    g.rows.push_back(row(shape_text(s), *m, simulate_gemm_us(p, s, S), all_fitted || has_gemm_profile(p, s)));
    shapes.push_back(s);
  }
  flag_slower_than_longer_k(g, shapes, std::vector<int>(shapes.size(), S), rep);
  return g;
}

// The GEMM durations: on the whole GPU, on k SMs, over the wave counts, and the full-wave GEMMs the
// rate came from.
void gemm_duration_groups(const MeasurementSet& set, const HardwareProfile& p, ValidationReport& rep) {
  const int S = p.gpu.sm_count;
  ValidationGroup whole = on_whole_gpu(set, p, bench::gemm, "engine: one tiled kernel on every SM (profile gemm_profiles)", false, rep);
  // With gpu.gemm_full_rate_sms, the rows on the two smallest partitions fitted it (with the whole GPU's).
  const bool full_rate = p.gpu.gemm_full_rate_sms > 0;
  const std::vector<int> fit_sms = full_rate ? fit_gemm_full_rate_sms(set, S).fit_sms : std::vector<int>{};
  ValidationGroup on_k = new_group(
      bench::gemm_sm,
      full_rate ? fmt::format("engine: one tiled kernel on k SMs (green context), calibrated CTA time "
                              "x max(F, k) / max(F, R), F = gemm_full_rate_sms = {:g}, R = the whole GPU's busy SMs",
                              p.gpu.gemm_full_rate_sms)
                : std::string("engine: one tiled kernel on k SMs (green context), calibrated CTA time"));
  std::vector<GemmShape> on_k_shapes;
  std::vector<int> on_k_sms;
  for (const auto* m : set.of(bench::gemm_sm)) {
    const GemmShape s = shape_of(*m);
    const int k = static_cast<int>(m->config_count("sms", S));
    on_k_shapes.push_back(s);
    on_k_sms.push_back(k);
    const bool fitted = (k == S && has_gemm_profile(p, s)) || std::find(fit_sms.begin(), fit_sms.end(), k) != fit_sms.end();
    // A partition that hosts the kernel's clusters on fewer SMs runs it on those (measured by the
    // calibration where it recorded cluster_sms_reached).
    const int usable = k == S ? k : gemm_sm_effective_sms(*m);
    on_k.rows.push_back(row(usable == k ? fmt::format("{} on {} SMs", shape_text(s), k)
                                        : fmt::format("{} on {} SMs ({} reached by its clusters)", shape_text(s), k, usable),
                            *m, simulate_gemm_us(p, s, usable), fitted));
  }
  flag_slower_than_longer_k(on_k, on_k_shapes, on_k_sms, rep);
  // With the CTA roofline the profile's fit saw the whole-GPU grid only: these rows are out of sample.
  ValidationGroup waves =
      on_whole_gpu(set, p, bench::gemm_waves,
                   p.gpu.gemm_sm_load_gbps > 0
                       ? "engine: one tiled kernel; tile and CTA time from the CTA roofline (fitted on the gemm grid)"
                       : "engine: one tiled kernel; tile from the heuristic, rate gemm_tile_us",
                   false, rep);
  ValidationGroup tile =
      on_whole_gpu(set, p, bench::gemm_tile, "the full-wave GEMMs behind the GEMM rate (fitted, not scored)", true, rep);
  add_groups(rep, {&whole, &on_k, &waves, &tile});
}

// A GEMM beside an SM copy or a copy-engine copy.
void interference_groups(const MeasurementSet& set, const HardwareProfile& p, ValidationReport& rep) {
  const int S = p.gpu.sm_count;
  ValidationGroup icopy = new_group(
      bench::interference_sm_copy,
      "cost_model gemm_time_ps on S - k SMs x (1 + gemm_comm_interference k / S); the one "
      "coefficient is fitted over these rows");
  for (const auto* m : set.of(bench::interference_sm_copy)) {
    const GemmShape s = shape_of(*m);
    // The GEMM keeps at least one SM: a copy of S or more CTAs would leave it none.
    const int k = static_cast<int>(m->config_count("copy_ctas", S - 1));
    icopy.rows.push_back(row(fmt::format("{} beside an SM copy of {} CTAs", shape_text(s), k), *m,
                             us_from_ps(gemm_time_ps(p, s, S - k)), false));
  }
  ValidationGroup ice = new_group(
      bench::interference_copy_engine,
      "engine: d2d, the benchmark's warm-up and repetitions replayed (copies queued back to back beside the GEMMs, "
      "sharing HBM; the GEMM's tile traffic from the L2 model), median GEMM, or median copy where the copy is "
      "timed beside GEMMs; "
      "h2d / d2h, the GEMM alone (the profile has no host memory; PCIe moves ~2 % of HBM's rate)");
  for (const auto* m : set.of(bench::interference_copy_engine)) {
    const GemmShape s = shape_of(*m);
    const std::string dir = m->config_string("direction");
    if (dir != "d2d" && dir != "h2d" && dir != "d2h") m->fail("config.direction", "must be d2d, h2d or d2h (got '" + dir + "')");
    // A row without a copy size (h2d / d2h may have none): 0, only the GEMM alone is predicted.
    const auto copy_bytes = static_cast<Bytes>(m->config.contains("copy_bytes") ? m->config_count("copy_bytes") : 0);
    const bool local = dir == "d2d" && copy_bytes > 0 && p.gpu.hbm_bandwidth_gbps > 0;
    // Warm-up: as the benchmark recorded it, else the driver's default (5).
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
  add_groups(rep, {&icopy, &ice});
}

// A training step's GEMMs in their layouts (gemm_backward), and one rank's MoE expert GEMMs
// (grouped_gemm) as a per-expert loop and as one grouped cuBLAS call.
void training_groups(const MeasurementSet& set, const HardwareProfile& p, ValidationReport& rep) {
  const int S = p.gpu.sm_count;
  ValidationGroup backward = new_group(
      bench::gemm_backward,
      "engine: one tiled kernel on every SM, priced by its shape alone (the layout, nn / nt / tn, "
      "is not an input: sim/backward_shapes.hpp)");
  for (const auto* m : set.of(bench::gemm_backward)) {
    const GemmShape s = shape_of(*m);
    const std::string layout = m->config_string("layout");
    if (layout != "nn" && layout != "nt" && layout != "tn") m->fail("config.layout", "must be nn, nt or tn (got '" + layout + "')");
    backward.rows.push_back(row(fmt::format("{} {} {}", m->config_string("role"), layout, shape_text(s)), *m,
                                simulate_gemm_us(p, s, S), has_gemm_profile(p, s)));
  }
  ValidationGroup loop = new_group(
      "grouped_gemm.per_expert",
      "engine: one tiled kernel per expert back to back on one stream, issued at the profile's launch cost");
  ValidationGroup grouped = new_group(
      "grouped_gemm.grouped",
      "engine: the MoE schemes' grouped GEMM (GraphBuilder::add_grouped_gemm: one kernel, waves over "
      "every expert's tiles) against cuBLAS's grouped call (cublasGemmGroupedBatchedEx)");
  for (const auto* m : set.of(bench::grouped_gemm)) {
    const std::int64_t n = m->config_count("n"), k = m->config_count("k");
    const DType dtype = dtype_of(*m);
    std::vector<GemmShape> experts;
    for (std::int64_t rows : m->config_counts("rows", 4096)) experts.push_back(GemmShape{rows, n, k, dtype});
    const std::string form = m->config_string("form");
    const std::string text = fmt::format("{} ({} experts, x{}x{})", m->config_string("case"), experts.size(), n, k);
    if (form == "per_expert") {
      loop.rows.push_back(row(text, *m, simulate_gemm_sequence_us(p, experts), false));
    } else if (form == "grouped") {
      grouped.rows.push_back(row(text, *m, simulate_grouped_gemm_us(p, experts), false));
    } else {
      m->fail("config.form", "must be per_expert or grouped (got '" + form + "')");
    }
  }
  add_groups(rep, {&backward, &loop, &grouped});
}

}  // namespace

void gemm_groups(const MeasurementSet& set, const HardwareProfile& p, ValidationReport& rep) {
  gemm_duration_groups(set, p, rep);
  interference_groups(set, p, rep);
  training_groups(set, p, rep);
}

}  // namespace overlap::calibrate
