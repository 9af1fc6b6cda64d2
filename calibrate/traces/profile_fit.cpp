// A profile fitted to a trace's kernels (calibrate/traces/profile_fit.hpp).
#include "calibrate/traces/profile_fit.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "cost_model/bandwidth_curve.hpp"
#include "cost_model/collective_model.hpp"
#include "cost_model/gemm_model.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/prediction_error.hpp"
#include "cost_model/statistics.hpp"

namespace overlap::traces {

std::optional<DType> model_dtype(std::string name) {
  if (name.rfind("c10::", 0) == 0) name = name.substr(5);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (name == "bfloat16") return DType::bf16;
  if (name == "half" || name == "float16") return DType::fp16;
  if (name == "float" || name == "float32") return DType::fp32;
  if (name.rfind("float8", 0) == 0) return DType::fp8;
  return std::nullopt;
}

namespace {

// The median of integer durations, in us.
double median_us(const std::vector<std::int64_t>& durations_ns) {
  return median(std::vector<double>(durations_ns.begin(), durations_ns.end())) / 1000.0;
}

struct GemmPool {
  overlap::GemmShape shape;
  std::string dtype_name;  // as the trace names it
  std::vector<std::int64_t> durations_ns;
};

struct CommPool {
  std::string collective;
  std::int64_t bytes = 0, group = 0;
  std::vector<std::int64_t> durations_ns;
};

std::optional<double> gemm_us(const HardwareProfile& hw, const overlap::GemmShape& s) {
  try {
    return us_from_ps(gemm_time_ps(hw, s));
  } catch (const std::invalid_argument&) {
    return std::nullopt;  // no peak_tflops for the dtype
  }
}

std::string gemm_text(const overlap::GemmShape& s) { return fmt::format("{}x{}x{} {}", s.m, s.n, s.k, dtype_name(s.dtype)); }

using GemmPools = std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, int>, GemmPool>;

// The traces' GEMM kernels pooled by shape and dtype, counting those the fit cannot use (shape unknown,
// batched, a dtype the cost model lacks: a row each).
GemmPools pool_gemms(const std::vector<RankReport>& ranks, FitResult& r) {
  GemmPools pools;
  std::map<std::string, std::int64_t> unmodelled_dtypes;  // dtype -> kernels
  for (const RankReport& rank : ranks) {
    for (const GemmGroup& g : rank.gemms) {
      r.gemm_kernels += g.count;
      if (!g.shape) {
        r.gemm_shape_unknown += g.count;
        continue;
      }
      if (g.shape->batch != 1) {
        r.gemm_batched += g.count;  // a profile entry is one GEMM; the model has no batched kernel
        continue;
      }
      const auto dt = model_dtype(g.shape->dtype);
      if (!dt) {
        unmodelled_dtypes[g.shape->dtype] += g.count;
        continue;
      }
      GemmPool& p = pools[{g.shape->m, g.shape->n, g.shape->k, static_cast<int>(*dt)}];
      p.shape = overlap::GemmShape{g.shape->m, g.shape->n, g.shape->k, *dt};
      p.dtype_name = g.shape->dtype;
      p.durations_ns.insert(p.durations_ns.end(), g.durations_ns.begin(), g.durations_ns.end());
    }
  }
  for (const auto& [dtype, n] : unmodelled_dtypes)
    r.rows.push_back({"gemm", "dtype " + dtype, n, 0, std::nullopt, std::nullopt, std::nullopt,
                      "dtype '" + dtype + "' has no cost-model counterpart: not used"});
  return pools;
}

// The fitted profile's rate: the base's GEMM rate (tile time or efficiency, and the roofline with it)
// scaled by the median of base prediction / measured over the compute-bound shapes (`ratios`).
void fit_gemm_rate(const HardwareProfile& base, const std::vector<double>& ratios, const FitOptions& o, FitResult& r) {
  GpuSpec& gpu = r.profile.gpu;
  const bool roofline = base.gpu.gemm_sm_load_gbps > 0;
  const char* rate_key = base.gpu.gemm_tile_us > 0 ? "gpu.gemm_tile_us" : "gpu.gemm_efficiency";
  if (ratios.size() < 2) {
    r.notes.push_back({rate_key, false,
                       fmt::format("kept the base's: {} compute-bound GEMM shape(s) with --min-samples {} kernels and no "
                                   "entry in the base; the rate needs 2",
                                   ratios.size(), o.min_samples)});
    return;
  }
  const double f = median(ratios);
  const std::string how = fmt::format("x {:.6g} = the median over {} shapes of base prediction / measured", f, ratios.size());
  if (base.gpu.gemm_tile_us > 0) {
    gpu.gemm_tile_us = base.gpu.gemm_tile_us / f;
    r.notes.push_back({rate_key, true, fmt::format("{:.6g} -> {:.6g} us (rate {})", base.gpu.gemm_tile_us, gpu.gemm_tile_us, how)});
  } else if (base.gpu.gemm_efficiency * f > 1.0) {
    r.notes.push_back({rate_key, false,
                       fmt::format("kept the base's {:.6g}: the trace's GEMMs ran at {:.6g} of the base's peak_tflops, "
                                   "above 1 (a peak too low for this GPU? set gpu.peak_tflops)",
                                   base.gpu.gemm_efficiency, base.gpu.gemm_efficiency * f)});
  } else {
    gpu.gemm_efficiency = base.gpu.gemm_efficiency * f;
    r.notes.push_back({rate_key, true, fmt::format("{:.6g} -> {:.6g} ({})", base.gpu.gemm_efficiency, gpu.gemm_efficiency, how)});
  }
  const bool rate_written = gpu.gemm_efficiency != base.gpu.gemm_efficiency || gpu.gemm_tile_us != base.gpu.gemm_tile_us;
  if (roofline && rate_written) {
    gpu.gemm_sm_load_gbps = base.gpu.gemm_sm_load_gbps * f;
    gpu.gemm_cta_overhead_us = base.gpu.gemm_cta_overhead_us / f;
    r.notes.push_back({"gpu.gemm_sm_load_gbps", true,
                       fmt::format("{:.6g} -> {:.6g} GB/s, gpu.gemm_cta_overhead_us {:.6g} -> {:.6g} (the roofline "
                                   "scaled with the rate)",
                                   base.gpu.gemm_sm_load_gbps, gpu.gemm_sm_load_gbps, base.gpu.gemm_cta_overhead_us,
                                   gpu.gemm_cta_overhead_us)});
  }
}

void fit_gemms(const std::vector<RankReport>& ranks, const HardwareProfile& base, const FitOptions& o, FitResult& r) {
  const GemmPools pools = pool_gemms(ranks, r);

  // Entries and the rate's ratios.
  HardwareProfile& fitted = r.profile;
  std::vector<double> ratios;
  std::vector<std::size_t> row_of_pool;
  std::vector<const GemmPool*> used;
  for (const auto& [key, p] : pools) {
    FitRow row;
    row.cls = "gemm";
    row.what = gemm_text(p.shape);
    row.samples = static_cast<std::int64_t>(p.durations_ns.size());
    row.measured_us = median_us(p.durations_ns);
    row.base_us = gemm_us(base, p.shape);
    if (!row.base_us) {
      row.status = fmt::format("the base profile has no gpu.peak_tflops.{}: not used", dtype_name(p.shape.dtype));
    } else if (row.samples < o.min_samples) {
      row.status = fmt::format("{} kernel(s), fewer than --min-samples {}: not used", row.samples, o.min_samples);
    } else if (!(row.measured_us > 0)) {
      row.status = "measured 0 ns: not used";
    } else {
      const GemmPlan plan = plan_gemm(base, p.shape);
      GemmProfileEntry e;
      e.m = p.shape.m;
      e.n = p.shape.n;
      e.k = p.shape.k;
      e.dtype = p.shape.dtype;
      e.tile_m = plan.tile_m;
      e.tile_n = plan.tile_n;
      e.duration_us = row.measured_us;
      auto& entries = fitted.gemm_profiles;
      entries.erase(std::remove_if(entries.begin(), entries.end(),
                                   [&](const GemmProfileEntry& x) {
                                     return x.m == e.m && x.n == e.n && x.k == e.k && x.dtype == e.dtype;
                                   }),
                    entries.end());
      entries.push_back(e);
      row.status = "fitted";
      if (!plan.calibrated && !plan.memory_bound) ratios.push_back(*row.base_us / row.measured_us);
      used.push_back(&p);
    }
    r.rows.push_back(row);
    row_of_pool.push_back(r.rows.size() - 1);
  }
  if (pools.empty())
    r.notes.push_back({"gemm_profiles", false, "kept the base's: no GEMM with a known shape and a modelled dtype"});
  else
    r.notes.push_back({"gemm_profiles", !used.empty(),
                       used.empty() ? fmt::format("kept the base's: no GEMM shape has --min-samples {} kernels", o.min_samples)
                                    : fmt::format("{} shape(s) written with their measured median", used.size())});

  fit_gemm_rate(base, ratios, o, r);
  // Predictions: the fitted profile, and its rate alone (without the trace's entries).
  HardwareProfile rate_only = fitted;
  rate_only.gemm_profiles = base.gemm_profiles;
  std::size_t i = 0;
  for (const auto& [key, p] : pools) {
    FitRow& row = r.rows[row_of_pool[i++]];
    if (!row.base_us) continue;
    row.fitted_us = gemm_us(fitted, p.shape);
    row.fitted_rate_us = gemm_us(rate_only, p.shape);
    // An entry faster than its weights can stream from HBM: the model keeps the memory bound
    // (cost_model/gemm_model.hpp), so the profile cannot reproduce it; say so rather than hide it.
    if (row.status == "fitted" && row.fitted_us && std::abs(*row.fitted_us - row.measured_us) > 0.01 * row.measured_us) {
      const GemmPlan plan = plan_gemm(fitted, p.shape);
      row.status = plan.memory_bound
                       ? fmt::format("fitted, but measured below the {:.3f} us its weights take from HBM: the model keeps that bound",
                                     us_from_ps(plan.memory_ps))
                       : "fitted, but the fitted profile predicts it differently";
    }
  }
}

void fit_collectives(const std::vector<RankReport>& ranks, const HardwareProfile& base, const FitOptions& o,
                     FitResult& r) {
  std::map<std::tuple<std::string, std::int64_t, std::int64_t>, CommPool> pools;
  std::map<std::string, std::int64_t> unknown;  // what is missing -> kernels
  for (const RankReport& rank : ranks) {
    for (const CommGroup& g : rank.comms) {
      r.comm_kernels += g.count;
      if (!g.bytes || !g.group_size) {
        r.comm_size_unknown += g.count;
        unknown[g.collective.empty() ? std::string("collective unknown") : g.collective] += g.count;
        continue;
      }
      CommPool& p = pools[{g.collective, *g.bytes, *g.group_size}];
      p.collective = g.collective;
      p.bytes = *g.bytes;
      p.group = *g.group_size;
      // Matched across ranks: the transfer alone, which is what the model predicts.
      const auto& d = g.matched == g.count && g.count > 0 ? g.transfer_durations_ns : g.durations_ns;
      p.durations_ns.insert(p.durations_ns.end(), d.begin(), d.end());
    }
  }
  for (const auto& [what, n] : unknown)
    r.rows.push_back({"collective", what + " size unknown", n, 0, std::nullopt, std::nullopt, std::nullopt,
                      "message size or group size not in the trace: not used"});

  HardwareProfile& fitted = r.profile;
  // Points per curve key.
  struct Curve {
    CollectivePrimitive prim;
    int n = 0;
    std::vector<CurvePoint> points;
    std::vector<std::size_t> rows;
  };
  std::map<std::string, Curve> curves;
  for (const auto& [key, p] : pools) {
    FitRow row;
    row.cls = "collective";
    row.what = fmt::format("{} {} B group {}", p.collective, p.bytes, p.group);
    row.samples = static_cast<std::int64_t>(p.durations_ns.size());
    row.measured_us = median_us(p.durations_ns);
    const auto prim = parse_collective_primitive(p.collective);
    if (!prim) {
      row.status = "collective '" + p.collective + "' has no cost-model primitive: not used";
    } else if (p.group < 2 || p.group > base.fabric.num_gpus) {
      row.status = fmt::format("group of {} outside the base profile's 2..{} GPUs: not used", p.group, base.fabric.num_gpus);
    } else {
      const int n = static_cast<int>(p.group);
      row.base_us = us_from_ps(collective_time_ps(base, *prim, p.bytes, n, o.link_class(base, n)));
      Curve& c = curves[collective_curve_keys(*prim, n, std::nullopt).front()];
      c.prim = *prim;
      c.n = n;
      c.rows.push_back(r.rows.size());
      if (row.samples < o.min_samples) {
        row.status = fmt::format("{} kernel(s), fewer than --min-samples {}: not used", row.samples, o.min_samples);
      } else if (!(row.measured_us > 0)) {
        row.status = "measured 0 ns: not used";
      } else {
        c.points.push_back({p.bytes, ps_from_us(row.measured_us)});
        row.status = "fitted";
      }
    }
    r.rows.push_back(row);
  }
  if (curves.empty())
    r.notes.push_back({"curves", false, "kept the base's: no collective with a known size, group and primitive"});
  for (auto& [key, c] : curves) {
    if (c.points.size() < 2) {
      r.notes.push_back({"curves." + key, false,
                         fmt::format("kept the base's {}: {} message size(s) with --min-samples {} kernels; a curve needs 2",
                                     base.curves.count(key) ? "curve" : "model", c.points.size(), o.min_samples)});
      for (std::size_t i : c.rows)
        if (r.rows[i].status == "fitted") r.rows[i].status = "too few sizes for a curve: not used";
      continue;
    }
    // A protocol's curve of the same primitive and group stands in front of the primitive's.
    for (auto it = fitted.curves.begin(); it != fitted.curves.end();)
      it = it->first.rfind(key + ".", 0) == 0 ? fitted.curves.erase(it) : std::next(it);
    fitted.curves[key] = BandwidthCurve(c.points);
    std::sort(c.points.begin(), c.points.end(), [](const CurvePoint& a, const CurvePoint& b) { return a.bytes < b.bytes; });
    r.notes.push_back({"curves." + key, true,
                       fmt::format("{} sizes, {} .. {} B (measured medians; fit {:.4g} us + S / {:.4g} GB/s)", c.points.size(),
                                   c.points.front().bytes, c.points.back().bytes, fitted.curves[key].fit().alpha_us,
                                   fitted.curves[key].fit().beta_gbps)});
  }
  // Predictions of the fitted profile.
  for (const auto& [key, p] : pools) {
    const auto prim = parse_collective_primitive(p.collective);
    if (!prim || p.group < 2 || p.group > base.fabric.num_gpus) continue;
    const int n = static_cast<int>(p.group);
    const std::string what = fmt::format("{} {} B group {}", p.collective, p.bytes, p.group);
    for (FitRow& row : r.rows)
      if (row.cls == "collective" && row.what == what) {
        row.fitted_us = us_from_ps(collective_time_ps(fitted, *prim, p.bytes, n, o.link_class(fitted, n)));
        if (row.status == "fitted" && !within_tolerance(relative_error_pct(*row.fitted_us, row.measured_us), 1.0))
          row.status = "fitted, but the fitted profile predicts it differently (a curve of the base's stands in front?)";
      }
  }
}

}  // namespace

FitResult fit_profile(const std::vector<RankReport>& ranks, const HardwareProfile& base, const FitOptions& o) {
  FitResult r;
  r.profile = base;
  std::int64_t gemms = 0, shaped = 0;
  for (const RankReport& rank : ranks) {
    gemms += rank.gemm_kernels;
    shaped += rank.gemm_kernels - rank.gemm_shape_unknown;
  }
  const std::string first = ranks.empty() ? std::string() : ranks.front().file;
  const std::string files = ranks.size() > 1 ? fmt::format(" (and the {} other file(s))", ranks.size() - 1) : "";
  if (gemms == 0)
    throw InputError(first, 0, ranks.empty() || ranks.front().format != "nsys" ? "traceEvents[cat=kernel]" : "CUPTI_ACTIVITY_KIND_KERNEL",
                     "no GEMM kernels" + files + ": nothing to fit the GEMM rate to (profile a step that runs the model's "
                                                 "matmuls)");
  if (shaped == 0)
    throw InputError(first, 0, ranks.front().format != "nsys" ? "Input Dims" : "NVTX_EVENTS",
                     fmt::format("no GEMM kernel with a known shape{} ({} GEMM kernels, every shape unknown): record with "
                                 "torch.profiler(record_shapes=True), or under nsys with "
                                 "torch.autograd.profiler.emit_nvtx(record_shapes=True)",
                                 files, gemms));
  fit_gemms(ranks, base, o, r);
  fit_collectives(ranks, base, o, r);
  return r;
}

}  // namespace overlap::traces
