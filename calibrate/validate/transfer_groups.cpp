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

using nlohmann::json;

namespace {

std::string curve_key_for(const std::string& path, const json& env, bool have_sm_copy_key) {
  const std::string cls = env.value("p2p_link_class", std::string("nvlink"));
  if (path == "copy_engine.p2p") return "copy_engine." + cls;
  if (path == "sm_copy.p2p") return (have_sm_copy_key ? "sm_copy." : "p2p.") + cls;
  return path;
}

}  // namespace

void transfer_groups(const MeasurementSet& set, const HardwareProfile& p, ValidationReport& rep) {
  const bool v2_keys = p.curves.count("sm_copy.d2d") > 0;
  std::map<std::string, int> max_ctas;
  for (const auto* m : set.of(bench::transfer)) {
    const std::string path = m->config_string("path", std::string());
    max_ctas[path] = std::max(max_ctas[path], static_cast<int>(m->config_int("ctas", 0)));
  }
  std::set<std::string> no_curve;  // measured paths the profile cannot predict, said once each
  ValidationGroup tr = new_group(bench::transfer, "the profile's curve of that path at that size (what an isolated transfer takes)");
  for (const auto* m : set.of(bench::transfer)) {
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
                          us_from_ps(it->second.time_ps(bytes)), curve_sample_size(bytes)));
  }
  ValidationGroup nccl = new_group(bench::nccl, "the profile's collective curve (primitive.n<ranks>) at that size");
  for (const auto* m : set.of(bench::nccl)) {
    const int ranks = static_cast<int>(m->config_count("ranks", kMaxUnitCount));
    const std::string key = m->config_string("primitive") + ".n" + std::to_string(ranks);
    const auto it = p.curves.find(key);
    if (it == p.curves.end()) {
      no_curve.insert(fmt::format("nccl {}: the profile has no such curve, not validated", key));
      continue;
    }
    const auto bytes = static_cast<Bytes>(m->config_count("bytes"));
    nccl.rows.push_back(row(fmt::format("{} {} B", key, bytes), *m, us_from_ps(it->second.time_ps(bytes)),
                            curve_sample_size(bytes)));
  }
  ValidationGroup hbm = new_group(
      bench::hbm_stream,
      p.gpu.hbm_latency_us > 0
          ? "hbm_latency_us + bytes / min(hbm_bandwidth_gbps x hbm_efficiency, SMs x hbm_sm_gbps), a "
            "memory-bound kernel (the line through the smallest and largest reads; per SM from the "
            "smallest partition)"
          : "bytes / (hbm_bandwidth_gbps x hbm_efficiency), a memory-bound kernel");
  // The reads the profile's figures came from (fit_hbm_stream): shown, not scored.
  const HbmFit fit = fit_hbm_stream(set);
  for (const auto* m : set.of(bench::hbm_stream)) {
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
  add_groups(rep, {&tr, &nccl, &hbm});
  rep.skipped.insert(rep.skipped.end(), no_curve.begin(), no_curve.end());
}

}  // namespace overlap::calibrate
