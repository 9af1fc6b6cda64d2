#include "calibrate/validate/groups.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "cost_model/input_error.hpp"
#include "cost_model/prediction_error.hpp"
#include "cost_model/statistics.hpp"

namespace overlap::calibrate {

DType dtype_of(const Measurement& m) {
  const std::string s = m.config_string("dtype", "bf16");
  const auto d = parse_dtype(s);
  if (!d) m.fail("config.dtype", "unknown dtype '" + s + "'");
  return *d;
}

GemmShape shape_of(const Measurement& m) {
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

ValidationRow row(std::string config, const Measurement& m, double predicted_us, bool fitted) {
  ValidationRow r;
  r.config = std::move(config);
  r.measured_us = m.time_us.median;
  r.predicted_us = predicted_us;
  r.error_pct = relative_error_pct(predicted_us, r.measured_us);
  r.spread = m.time_us.spread;
  r.fitted = fitted;
  return r;
}

ValidationGroup new_group(std::string benchmark, std::string model) {
  ValidationGroup g;
  g.benchmark = std::move(benchmark);
  g.model = std::move(model);
  return g;
}

void add_groups(ValidationReport& rep, std::initializer_list<ValidationGroup*> groups) {
  for (ValidationGroup* g : groups) {
    if (!g->rows.empty()) rep.groups.push_back(std::move(*g));
  }
}

void append_scored_errors(const std::vector<ValidationRow>& rows, std::vector<double>& errs) {
  for (const auto& r : rows) {
    if (!r.fitted) errs.push_back(std::fabs(r.error_pct));
  }
}

void finish(ValidationGroup& g) {
  std::vector<double> errs;
  append_scored_errors(g.rows, errs);
  set_error_figures(g, errs);
  std::vector<double> exposed_us, exposed_pct;
  for (const auto& r : g.rows) {
    if (r.fitted || !r.exposed_measured_us || !r.exposed_predicted_us) continue;
    const double e = std::fabs(*r.exposed_predicted_us - *r.exposed_measured_us);
    exposed_us.push_back(e);
    exposed_pct.push_back(100.0 * e / r.measured_us);
  }
  g.exposed_rows = static_cast<int>(exposed_us.size());
  if (!exposed_us.empty()) {
    g.exposed_median_abs_error_us = median(exposed_us);
    g.exposed_median_abs_error_pct_of_latency = median(exposed_pct);
  }
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

}  // namespace overlap::calibrate
