#include "calibrate/core/profile_writer.hpp"

#include <algorithm>
#include <limits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "calibrate/core/calibration_plan.hpp"
#include "calibrate/core/scheme_config.hpp"
#include "cost_model/gemm_roofline.hpp"
#include "cost_model/profile_schema.hpp"
#include "cost_model/statistics.hpp"

namespace overlap::calibrate {
namespace {

using nlohmann::json;
namespace ps = overlap::profile_schema;

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.8g", v);
  return buf;
}

std::string points_text(const std::vector<CurvePointUs>& pts) {
  std::string s = "[";
  for (std::size_t i = 0; i < pts.size(); ++i) {
    s += (i ? ", [" : "[") + std::to_string(pts[i].bytes) + ", " + num(pts[i].time_us) + "]";
  }
  return s + "]";
}

// What the loader accepts for a key, for the writer's refusal.
template <class S>
std::string accepted_text(const ps::Key<S>& k) {
  if (k.check == ps::Check::fraction) return "a fraction in (0, 1]";
  if (!k.range) return "any value";
  std::string text = "[" + num(k.range->min) + ", " + num(k.range->max) + "]";
  if (!k.range->unit.empty()) text += " " + std::string(k.range->unit);
  if (k.check == ps::Check::zero_or_range) text = "0 (not given) or " + text;
  return text + " (" + std::string(k.range->why) + ")";
}

// The text a number is written as, after checking that the loader reads it back: a value the loader
// would refuse (a measurement gone wrong, e.g. a copy timed at a few MB/s) is refused here, naming
// the key, the value and the range, rather than written into a profile nothing can load.
template <class S>
std::string checked_text(const ps::Key<S>& k, const std::string& text, const std::string& path) {
  if (!ps::loader_accepts(k, std::strtod(text.c_str(), nullptr)))
    throw std::runtime_error("refusing to write " + path + " = " + text + ": the profile loader accepts " +
                             accepted_text(k));
  return text;
}
template <class S>
std::string checked(const ps::Key<S>& k, double v, const std::string& path) {
  return checked_text(k, num(v), path);
}
template <class S>
std::string checked_int(const ps::Key<S>& k, std::int64_t v, const std::string& path) {
  return checked_text(k, std::to_string(v), path);
}
// The key's path for a message: under `at` (a concrete map entry or list element) where given.
template <class S>
std::string path_of(const ps::Key<S>& k, const std::string& at) {
  return at.empty() ? std::string(k.path) : at + "." + k.name_str();
}

// A JSON string literal is a valid YAML double-quoted scalar.
std::string yaml_quoted(const std::string& s) { return json(s).dump(); }

// Lines of block YAML with end-of-line comments aligned at one column.
class YamlLines {
 public:
  void comment(int indent, const std::string& text) { out_ += std::string(indent, ' ') + "# " + text + "\n"; }
  void key(int indent, const std::string& k, const std::string& note = "") { add(indent, k + ":", note); }
  void value(int indent, const std::string& k, const std::string& v, const std::string& note = "") {
    add(indent, k + ": " + v, note);
  }
  void raw(const std::string& text) { out_ += text; }
  const std::string& str() const { return out_; }

  // Schema keys: the name from the schema row, a number checked against the loader's range. `entry`
  // writes a map's entry (peak_tflops: {bf16: ...}) instead of the key itself; `at` is the concrete
  // section for a path with a placeholder (fabric.links.d2d).
  template <class S>
  void number(int indent, const ps::Key<S>& k, double v, const std::string& note = "", const std::string& entry = "",
              const std::string& at = "") {
    const std::string path = entry.empty() ? path_of(k, at) : std::string(k.path) + "." + entry;
    value(indent, entry.empty() ? k.name_str() : entry, checked(k, v, path), note);
  }
  template <class S>
  void integer(int indent, const ps::Key<S>& k, std::int64_t v, const std::string& note = "") {
    value(indent, k.name_str(), checked_int(k, v, std::string(k.path)), note);
  }
  template <class S>
  void text(int indent, const ps::Key<S>& k, const std::string& v, const std::string& note = "") {
    value(indent, k.name_str(), v, note);
  }
  // "key: value" of a flow map, checked.
  template <class S>
  static std::string entry(const ps::Key<S>& k, double v, const std::string& at) {
    return k.name_str() + ": " + checked(k, v, path_of(k, at));
  }
  template <class S>
  static std::string entry_int(const ps::Key<S>& k, std::int64_t v, const std::string& at) {
    return k.name_str() + ": " + checked_int(k, v, path_of(k, at));
  }
  static std::string flow(const std::vector<std::string>& entries) {
    std::string s;
    for (const auto& e : entries) s += (s.empty() ? "" : ", ") + e;
    return "{" + s + "}";
  }
  // A curve under curves:, every point checked as the loader checks it.
  void curve(const std::string& key, const std::vector<CurvePointUs>& pts) {
    namespace ck = ps::curve_keys;
    const std::string path = std::string(ps::curves.path) + "." + key + "." + ck::points.name_str();
    if (!ps::loader_accepts(ck::points, static_cast<double>(pts.size())))
      throw std::runtime_error("refusing to write " + path + " with " + std::to_string(pts.size()) +
                               " points: the profile loader accepts " + accepted_text(ck::points));
    for (const auto& p : pts) {
      checked_int(ck::point_bytes, p.bytes, path + " bytes");
      if (!(p.time_us > 0)) throw std::runtime_error("refusing to write " + path + ": a point of " +
                                                     std::to_string(p.bytes) + " bytes takes " + num(p.time_us) +
                                                     " us (the profile loader accepts only positive times)");
      checked(ck::point_us, p.time_us, path + " time_us");
    }
    out_ += "  " + key + ": " + flow({ck::points.name_str() + ": " + points_text(pts)}) + "\n";
  }

 private:
  void add(int indent, const std::string& body, const std::string& note) {
    std::string line = std::string(indent, ' ') + body;
    if (!note.empty()) {
      if (line.size() < 40) line.resize(40, ' ');
      line += "  # " + note;
    }
    out_ += line + "\n";
  }
  std::string out_;
};

int env_int(const json& env, const char* key, int fallback) {
  const auto it = env.find(key);
  return it != env.end() && it->is_number() ? it->get<int>() : fallback;
}
double env_num(const json& env, const char* key, double fallback) {
  const auto it = env.find(key);
  return it != env.end() && it->is_number() ? it->get<double>() : fallback;
}
std::string env_str(const json& env, const char* key, const std::string& fallback) {
  const auto it = env.find(key);
  return it != env.end() && it->is_string() ? it->get<std::string>() : fallback;
}

const Measurement* launch_row(const MeasurementSet& set, const std::string& what) {
  for (const Measurement* m : set.of(bench::launch)) {
    if (m->config_string("what", std::string()) == what) return m;
  }
  return nullptr;
}

// Asymptotic one-way bandwidth of a curve: bytes / time of its largest sample, in GB/s.
double largest_gbps(const std::vector<CurvePointUs>& pts) {
  if (pts.empty()) return 0;
  const auto& p = pts.back();
  return static_cast<double>(p.bytes) / (p.time_us * 1e3);
}

}  // namespace

bool curve_sample_size(std::int64_t bytes) {
  const auto sizes = transfer_sizes();
  for (std::size_t i = 0; i < sizes.size(); i += 2) {
    if (sizes[i] == bytes) return true;
  }
  return false;
}

std::vector<CurvePointUs> transfer_points(const MeasurementSet& set, const std::string& path, int ctas,
                                          bool curve_samples_only) {
  std::map<std::int64_t, double> by_size;
  for (const Measurement* m : set.of(bench::transfer)) {
    if (m->config_string("path", std::string()) != path) continue;
    if (ctas > 0 && m->config_int("ctas", 0) != ctas) continue;
    const auto bytes = m->config_int("bytes", 0);
    if (bytes <= 0 || (curve_samples_only && !curve_sample_size(bytes))) continue;
    by_size[bytes] = m->time_us.median;
  }
  std::vector<CurvePointUs> out;
  for (const auto& [b, t] : by_size) out.push_back({b, t});
  return out;
}

double fitted_gemm_tile_us(const MeasurementSet& set, int sm_count) {
  std::vector<double> v;
  for (const Measurement* m : set.of(bench::gemm_tile)) {
    v.push_back(gemm_tile_us_from(m->time_us.median, static_cast<std::int64_t>(m->config_count("m")),
                                  static_cast<std::int64_t>(m->config_count("n")),
                                  static_cast<std::int64_t>(m->config_count("k")), sm_count));
  }
  return v.empty() ? 0 : median_of(v);
}

RooflineFit fit_gemm_roofline(const MeasurementSet& set, int sm_count, int ctas_per_sm) {
  struct Run {
    double waves, tile_m, tile_n, k, us;
  };
  std::vector<Run> runs;
  std::set<std::pair<int, int>> shapes;
  const std::int64_t slots = static_cast<std::int64_t>(sm_count) * std::max(1, ctas_per_sm);
  for (const char* b : {bench::gemm, bench::gemm_tile}) {
    for (const Measurement* m : set.of(b)) {
      const std::string dt = m->config_string("dtype", "bf16");
      const int tm = m->derived_int("tile_m", 0), tn = m->derived_int("tile_n", 0);
      const auto M = static_cast<std::int64_t>(m->config_count("m"));
      if ((dt != "bf16" && dt != "fp16") || tm < 1 || tn < 1 || M < 64 || !(m->time_us.median > 0)) continue;
      const auto N = static_cast<std::int64_t>(m->config_count("n"));
      const std::int64_t tiles = ((M + tm - 1) / tm) * ((N + tn - 1) / tn);
      runs.push_back({static_cast<double>((tiles + slots - 1) / slots), static_cast<double>(tm), static_cast<double>(tn),
                      static_cast<double>(m->config_count("k")), m->time_us.median});
      shapes.insert({tm, tn});
    }
  }
  RooflineFit fit;
  fit.rows = static_cast<int>(runs.size());
  if (runs.size() < 6 || shapes.size() < 2) return fit;
  // For fixed (tile_us, load_gbps) the prediction is a_i (t0 + c_i) with a_i = waves_i / y_i; the
  // relative residual a_i t0 + a_i c_i - 1 is linear in t0.
  auto evaluate = [&](double tile_us, double load_gbps, double* t0_out) {
    const GemmRoofline r{tile_us, load_gbps, 0};
    double num = 0, den = 0;
    std::vector<double> a(runs.size()), c(runs.size());
    for (std::size_t i = 0; i < runs.size(); ++i) {
      a[i] = runs[i].waves / runs[i].us;
      c[i] = gemm_cta_us(r, static_cast<int>(runs[i].tile_m), static_cast<int>(runs[i].tile_n),
                         static_cast<std::int64_t>(runs[i].k), 2, ctas_per_sm);
      num += a[i] * (1 - a[i] * c[i]);
      den += a[i] * a[i];
    }
    const double t0 = std::max(0.0, num / den);
    double sse = 0;
    for (std::size_t i = 0; i < runs.size(); ++i) sse += std::pow(a[i] * (t0 + c[i]) - 1, 2);
    *t0_out = t0;
    return sse;
  };
  double lo_t = std::log(0.01), hi_t = std::log(1000.0), lo_b = std::log(1.0), hi_b = std::log(1e5);
  double best = -1;
  for (int pass = 0; pass < 4; ++pass) {
    constexpr int kSteps = 120;
    double bt = 0, bb = 0;
    for (int i = 0; i <= kSteps; ++i) {
      for (int j = 0; j <= kSteps; ++j) {
        const double t = std::exp(lo_t + (hi_t - lo_t) * i / kSteps), b = std::exp(lo_b + (hi_b - lo_b) * j / kSteps);
        double t0 = 0;
        const double sse = evaluate(t, b, &t0);
        if (best < 0 || sse < best) {
          best = sse;
          bt = std::log(t);
          bb = std::log(b);
          fit.tile_us = t;
          fit.load_gbps = b;
          fit.overhead_us = t0;
        }
      }
    }
    const double wt = (hi_t - lo_t) / kSteps * 4, wb = (hi_b - lo_b) / kSteps * 4;
    lo_t = bt - wt, hi_t = bt + wt, lo_b = bb - wb, hi_b = bb + wb;
  }
  std::vector<double> err;
  for (const Run& run : runs) {
    const double pred = run.waves * gemm_cta_us(GemmRoofline{fit.tile_us, fit.load_gbps, fit.overhead_us}, static_cast<int>(run.tile_m),
                                                static_cast<int>(run.tile_n), static_cast<std::int64_t>(run.k), 2, ctas_per_sm);
    err.push_back(std::fabs(100.0 * (pred / run.us - 1.0)));
  }
  fit.median_abs_error_pct = median_of(err);
  fit.ok = true;
  return fit;
}

std::int64_t gemm_waves(std::int64_t m, std::int64_t n, int tile_m, int tile_n, int sms) {
  if (tile_m < 1 || tile_n < 1 || sms < 1) throw std::invalid_argument("gemm_waves: tile and SM counts must be positive");
  const std::int64_t tiles = ((m + tile_m - 1) / tile_m) * ((n + tile_n - 1) / tile_n);
  return (tiles + sms - 1) / sms;
}

int gemm_sm_effective_sms(const Measurement& m) {
  const int k = static_cast<int>(m.config_count("sms", kMaxUnitCount));
  const int reached = m.derived_int("cluster_sms_reached", 0);
  return reached > 0 ? std::min(k, reached) : k;
}

FullRateFit fit_gemm_full_rate_sms(const MeasurementSet& set, int sm_count) {
  FullRateFit fit;
  const auto rows = set.of(bench::gemm_sm);
  std::set<int> sizes;
  for (const Measurement* m : rows) {
    const int k = static_cast<int>(m->config_count("sms", kMaxUnitCount));
    if (k > 0 && k < sm_count) sizes.insert(k);
  }
  if (sizes.size() < 2) return fit;
  fit.fit_sms = {*sizes.begin(), *std::next(sizes.begin())};
  // Per shape: the wave times on the fit's partitions, and the whole GPU's duration.
  struct Shape {
    std::vector<double> low_wave_us;
    double whole_us = 0;
    std::int64_t tiles = 0;
  };
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::string>, Shape> shapes;
  for (const Measurement* m : rows) {
    const int k = static_cast<int>(m->config_count("sms", kMaxUnitCount));
    const auto M = static_cast<std::int64_t>(m->config_count("m"));
    const auto N = static_cast<std::int64_t>(m->config_count("n"));
    const auto key = std::make_tuple(M, N, static_cast<std::int64_t>(m->config_count("k")), m->config_string("dtype", "bf16"));
    const int tm = static_cast<int>(m->derived_int("tile_m", 128));
    const int tn = static_cast<int>(m->derived_int("tile_n", 128));
    Shape& sh = shapes[key];
    sh.tiles = gemm_waves(M, N, tm, tn, 1);
    if (k == sm_count) sh.whole_us = m->time_us.median;
    else if (k == fit.fit_sms[0] || k == fit.fit_sms[1])
      sh.low_wave_us.push_back(m->time_us.median / static_cast<double>(gemm_waves(M, N, tm, tn, gemm_sm_effective_sms(*m))));
  }
  std::vector<double> per_shape;
  for (const auto& [key, sh] : shapes) {
    if (sh.whole_us <= 0 || sh.low_wave_us.size() < 2) continue;
    const std::int64_t reference = std::min<std::int64_t>(sm_count, sh.tiles);
    if (reference <= fit.fit_sms[1]) continue;  // too few tiles to load the GPU more than the partitions
    // The model inverted: on the partitions (k <= S) a wave takes t0; on the whole GPU, w - 1 full
    // waves take t0 R / S each and the last, of L tiles, t0 max(S, L) / S. With q = D / t0:
    // S = R (w - 1) / (q - 1) when L <= S, else S = (R (w - 1) + L) / q.
    const double t0 = median(sh.low_wave_us);
    const double q = sh.whole_us / t0;
    const std::int64_t w = (sh.tiles + sm_count - 1) / sm_count;
    const double last = static_cast<double>(sh.tiles - (w - 1) * sm_count);
    const double full = static_cast<double>(reference) * static_cast<double>(w - 1);
    double s_fit = static_cast<double>(reference);  // no contention seen
    if (q > static_cast<double>(w)) {
      const double s1 = w > 1 ? full / (q - 1) : 0.0;
      s_fit = last <= s1 ? s1 : (full + last) / q;
    }
    per_shape.push_back(s_fit);
  }
  if (per_shape.empty()) return fit;
  fit.shapes = static_cast<int>(per_shape.size());
  fit.sms = median(per_shape);
  fit.ok = fit.sms < sm_count;
  return fit;
}

double fitted_gemm_comm_interference(const MeasurementSet& set, int sm_count, double full_rate_sms) {
  std::vector<double> fits;
  for (const Measurement* m : set.of(bench::interference_sm_copy)) {
    const int k = static_cast<int>(m->config_count("copy_ctas", kMaxUnitCount));
    if (k <= 0 || k >= sm_count) continue;
    const auto M = static_cast<std::int64_t>(m->config_count("m"));
    const auto N = static_cast<std::int64_t>(m->config_count("n"));
    const int tm = static_cast<int>(m->derived_int("tile_m", 128));
    const int tn = static_cast<int>(m->derived_int("tile_n", 128));
    const double alone = m->derived_number("alone_us");
    const double cta = alone / static_cast<double>(gemm_waves(M, N, tm, tn, sm_count));
    const double reference = static_cast<double>(std::min<std::int64_t>(sm_count, gemm_waves(M, N, tm, tn, 1)));
    const double busy = std::min<double>(sm_count - k, reference);
    const double sat = full_rate_sms > 0 ? std::max(full_rate_sms, busy) / std::max(full_rate_sms, reference) : 1.0;
    const double base = static_cast<double>(gemm_waves(M, N, tm, tn, sm_count - k)) * cta * sat;
    fits.push_back((m->time_us.median / base - 1.0) * sm_count / k);
  }
  if (fits.empty()) return -1;
  return std::max(0.0, median(fits));
}


HbmFit fit_hbm_stream(const MeasurementSet& set) {
  HbmFit f;
  const Measurement *small = nullptr, *large = nullptr, *fewest = nullptr;
  for (const Measurement* m : set.of(bench::hbm_stream)) {
    if (m->config.contains("sms")) {  // a partition's run: not the whole GPU's line
      if (!fewest || m->config_count("sms", kMaxUnitCount) < fewest->config_count("sms", kMaxUnitCount)) fewest = m;
      continue;
    }
    if (!small || m->config_count("bytes") < small->config_count("bytes")) small = m;
    if (!large || m->config_count("bytes") > large->config_count("bytes")) large = m;
  }
  if (!large) return f;
  f.ok = true;
  f.small_bytes = small->config_count("bytes");
  f.large_bytes = large->config_count("bytes");
  const double t_small = small->time_us.median, t_large = large->time_us.median;
  f.large_us = t_large;
  f.gbps = static_cast<double>(f.large_bytes) / t_large / 1e3;
  if (f.large_bytes > f.small_bytes && t_large > t_small) {
    const double gbps = static_cast<double>(f.large_bytes - f.small_bytes) / (t_large - t_small) / 1e3;
    const double latency = t_small - static_cast<double>(f.small_bytes) / gbps / 1e3;
    if (latency > 0) {
      f.gbps = gbps;
      f.latency_us = latency;
    }
  }
  if (fewest) {
    const double us = fewest->time_us.median - f.latency_us;
    const auto k = fewest->config_count("sms", kMaxUnitCount);
    const double rate = us > 0 ? static_cast<double>(fewest->config_count("bytes")) / us / 1e3 : 0;
    if (rate > 0 && rate < 0.8 * f.gbps) {
      f.sm_gbps = rate / static_cast<double>(k);
      f.sm_fit_sms = static_cast<int>(k);
    }
  }
  return f;
}

void physical_gpu_options(const std::string& dir, ProfileOptions& o) {
  if (!std::ifstream(dir + "/measurements.json").good()) return;
  const MeasurementSet host = load_measurement_dir(dir);
  const HbmFit hbm = fit_hbm_stream(host);
  if (hbm.sm_gbps > 0) {
    o.hbm_sm_gbps = hbm.sm_gbps;
    o.hbm_latency_us = hbm.latency_us;
    o.hbm_source = "the physical GPU's hbm_stream (../measurements.json): per SM on " + std::to_string(hbm.sm_fit_sms) +
                   " SMs, and the ramp of its line";
  }
  const FullRateFit fr = fit_gemm_full_rate_sms(host, host.environment.value("sm_count", 0));
  if (fr.ok) {
    o.full_rate_sms = fr.sms;
    o.full_rate_source = "the physical GPU's calibration (../measurements.json gemm_sm, " + std::to_string(fr.shapes) + " shapes)";
  }
  const auto h2d = transfer_points(host, "copy_engine.h2d", 0, false), d2h = transfer_points(host, "copy_engine.d2h", 0, false);
  if (!h2d.empty() && !d2h.empty()) {
    o.pcie_gbps = std::min(largest_gbps(h2d), largest_gbps(d2h));
    o.pcie_source = "the physical GPU's PCIe per direction (../measurements.json copy_engine.h2d / d2h, the slower's largest)";
  }
  o.physical_pull.clear();
  if (o.virtual_link == "d2d") {
    o.physical_pull = transfer_points(host, "copy_engine.d2d", 0, true);
    o.physical_pull_source = "the physical GPU's copy_engine.d2d (../measurements.json), timed alone";
  } else if (o.virtual_link == "host") {
    // A staged pull is a D2H copy, then an H2D copy on the same stream.
    const auto down = transfer_points(host, "copy_engine.d2h", 0, true), up = transfer_points(host, "copy_engine.h2d", 0, true);
    for (const auto& a : down) {
      for (const auto& b : up) {
        if (a.bytes == b.bytes) o.physical_pull.push_back({a.bytes, a.time_us + b.time_us});
      }
    }
    o.physical_pull_source = "the physical GPU's copy_engine.d2h + copy_engine.h2d per size (../measurements.json), timed alone";
  }
}

namespace {

// What every part of the profile reads: the measurements, the options and the environment's facts.
struct WriterInput {
  const MeasurementSet& set;
  const ProfileOptions& options;
  const json& env;
  int sm_count = 0;
  int world = 1;
  std::string dir{}, gpu_name{};
  std::vector<const Measurement*> gemms{};
  double tile_us = 0;
  double full_rate = 0;  // gpu.gemm_full_rate_sms as written (0 = not written)
};

void write_header(const WriterInput& in, YamlLines& y) {
  const json& env = in.env;
  y.comment(0, "Calibrated hardware profile, written by overlap-calibrate from measurements.json and");
  y.comment(0, "environment.json in this directory (schema 2: launch:, transports:, topology virtual).");
  y.comment(0, "GPU " + in.gpu_name + ", driver " + env_str(env, "driver_version", "?") + ", CUDA runtime " +
                   env_str(env, "cuda_runtime_version", "?") + ", cuBLASLt " + env_str(env, "cublaslt_version", "?") +
                   ", NCCL " + env_str(env, "nccl_version", "?") + ", " + env_str(env, "date_utc", "?") + ".");
  y.comment(0, "Each measured field names the benchmark (measurements.json \"benchmark\") that set it; fields");
  y.comment(0, "not written keep the loader's defaults (scenarios/hardware/README.md).");
  if (in.set.fixture) y.comment(0, "FIXTURE: made-up numbers for tests, not a measurement.");
  y.text(0, ps::name, yaml_quoted(in.options.name.empty() ? "calibrated-" + in.dir : in.options.name));
  y.text(0, ps::description,
         yaml_quoted(std::string(in.set.fixture ? "FIXTURE (not measured): " : "") + "measured " + in.gpu_name +
                (in.world > 1 ? " x" + std::to_string(in.world) : "") + ", results " + in.dir));
}

// The GEMM rate: the CTA roofline where it fits, else the gemm_tile median, else the fastest
// measured GEMM as peak with efficiency 1.
void write_gemm_rate(const WriterInput& in, YamlLines& y) {
  namespace gk = ps::gpu_keys;
  const RooflineFit roof = fit_gemm_roofline(in.set, in.sm_count, std::max(1, env_int(in.env, "gemm_ctas_per_sm", 1)));
  if (roof.ok) {
    const std::string src = "gemm, gemm_tile: CTA roofline fitted over " + std::to_string(roof.rows) +
                            " runs (median |error| " + num(roof.median_abs_error_pct) + " %)";
    y.number(2, gk::gemm_tile_us, roof.tile_us, src);
    y.number(2, gk::gemm_sm_load_gbps, roof.load_gbps, src);
    y.number(2, gk::gemm_cta_overhead_us, roof.overhead_us, src);
  } else if (in.tile_us > 0) {
    y.number(2, gk::gemm_tile_us, in.tile_us, "gemm_tile: median of duration x SMs / (MNK / 128*128*1024)");
  } else {
    // No full-wave run: the GEMM rate comes from gemm_profiles alone; the loader needs some rate, so
    // the largest bf16 GEMM's TFLOP/s stands in as peak with efficiency 1 (both measured).
    const Measurement* best = nullptr;
    for (const Measurement* m : in.gemms) {
      if (!best || m->derived_number("tflops", 0.0) > best->derived_number("tflops", 0.0)) best = m;
    }
    y.key(2, gk::peak_tflops.name_str(), "gemm: the fastest measured GEMM's TFLOP/s, used as the rate with efficiency 1");
    y.number(4, gk::peak_tflops, best->derived_number("tflops"), "", "bf16");
    y.value(2, gk::gemm_efficiency.name_str(), "1.0", "the rate above is already achieved, not datasheet");
  }
}

// A memory-bound kernel: the line through the smallest and largest reads (hbm_latency_us, and the
// slope as hbm_bandwidth_gbps), or the largest read's rate where the set has one size.
void write_memory_model(const WriterInput& in, YamlLines& y) {
  namespace gk = ps::gpu_keys;
  const ProfileOptions& options = in.options;
  const HbmFit hbm = fit_hbm_stream(in.set);
  if (!hbm.ok) return;
  if (options.hbm_sm_gbps > 0) {
    // A virtual node whose physical GPU measured the streaming rate per SM: the engine then caps each
    // rank's kernel at its partition, so the physical GPU's ramp applies, and this node's own read
    // (every rank streaming at once) gives HBM's rate once the ramp is taken off. Without that cap
    // (the else branch) a virtual node keeps its read's rate and no ramp: the ramp of one rank's
    // kernel would hide behind the other ranks' streaming, which the measured decode steps on 4
    // ranks say it does not.
    const double us = hbm.large_us - options.hbm_latency_us;
    y.number(2, gk::hbm_bandwidth_gbps, us > 0 ? static_cast<double>(hbm.large_bytes) / us / 1e3 : hbm.gbps,
             "hbm_stream: GEMV-like read of " + std::to_string(hbm.large_bytes >> 20) + " MiB on every rank at once" +
                 (us > 0 ? ", its median time less hbm_latency_us" : ", median GB/s"));
    y.value(2, gk::hbm_efficiency.name_str(), "1.0", "hbm_stream measured the achieved rate itself");
    if (us > 0 && options.hbm_latency_us > 0) y.number(2, gk::hbm_latency_us, options.hbm_latency_us, options.hbm_source);
    y.number(2, gk::hbm_sm_gbps, options.hbm_sm_gbps, options.hbm_source);
    return;
  }
  const bool line = hbm.small_bytes != hbm.large_bytes && hbm.latency_us > 0;
  const std::string reads = std::to_string(hbm.small_bytes >> 20) + " and " + std::to_string(hbm.large_bytes >> 20) + " MiB";
  y.number(2, gk::hbm_bandwidth_gbps, hbm.gbps,
           line ? "hbm_stream: GEMV-like reads, the line through " + reads + " (slope)"
                : "hbm_stream: GEMV-like read of " + std::to_string(hbm.large_bytes >> 20) + " MiB, median GB/s");
  y.value(2, gk::hbm_efficiency.name_str(), "1.0", "hbm_stream measured the achieved rate itself");
  if (line) y.number(2, gk::hbm_latency_us, hbm.latency_us, "hbm_stream: the same line's time at 0 bytes (ramp and drain)");
  if (hbm.sm_gbps > 0 && options.virtual_ranks == 0)
    y.number(2, gk::hbm_sm_gbps, hbm.sm_gbps,
             "hbm_stream on " + std::to_string(hbm.sm_fit_sms) + " SMs (green context): its rate less the ramp, per SM");
}

void write_gpu(WriterInput& in, YamlLines& y) {
  namespace gk = ps::gpu_keys;
  const json& env = in.env;
  y.key(0, ps::gpu.name_str());
  y.text(2, gk::name, yaml_quoted(in.gpu_name), "cudaGetDeviceProperties");
  y.integer(2, gk::sm_count, in.sm_count, "device attribute multiProcessorCount, as read");
  if (env_num(env, "l2_bytes", 0) > 0)
    y.integer(2, gk::l2_bytes, static_cast<std::int64_t>(env_num(env, "l2_bytes", 0)), "device attribute l2CacheSize, as read");
  if (env_int(env, "gemm_ctas_per_sm", 1) > 1) {
    y.integer(2, gk::gemm_ctas_per_sm, env_int(env, "gemm_ctas_per_sm", 1),
              "the runner's signalling GEMM: CTAs resident per SM (kRunnerGemmCtasPerSm)");
  }
  if (env_num(env, "clock_mhz", 0) > 0)
    y.number(2, gk::clock_mhz, env_num(env, "clock_mhz", 0), "device attribute clockRate, as read (never changed)");
  write_gemm_rate(in, y);
  write_memory_model(in, y);
  if (env.contains("async_engine_count"))
    y.integer(2, gk::copy_engines, env_int(env, "async_engine_count", 2), "device attribute asyncEngineCount, as read");
  if (env.contains("min_sm_partition"))
    y.integer(2, gk::min_sm_partition, env_int(env, "min_sm_partition", 1), "green context minSmPartitionSize, as read");
  // GPU-wide tile throughput limit: measured here (gemm_sm), or the physical GPU's for a virtual node.
  double full_rate = in.options.full_rate_sms;
  std::string full_rate_src = in.options.full_rate_source;
  if (full_rate <= 0) {
    const FullRateFit fr = fit_gemm_full_rate_sms(in.set, in.sm_count);
    if (fr.ok) {
      full_rate = fr.sms;
      full_rate_src = "gemm_sm: a wave's time on " + std::to_string(fr.fit_sms[0]) + " and " +
                      std::to_string(fr.fit_sms[1]) + " SMs vs all " + std::to_string(in.sm_count) + ", median over " +
                      std::to_string(fr.shapes) + " shapes";
    }
  }
  if (full_rate > 0) y.number(2, gk::gemm_full_rate_sms, full_rate, full_rate_src);
  in.full_rate = full_rate;
  const double interference =
      fitted_gemm_comm_interference(in.set, in.sm_count, in.options.virtual_ranks > 0 ? 0.0 : full_rate);
  if (interference >= 0)
    y.number(2, gk::gemm_comm_interference, interference, "interference_sm_copy: median fit over copy CTA counts");
}

void write_launch(const WriterInput& in, YamlLines& y) {
  namespace lk = ps::launch_keys;
  const MeasurementSet& set = in.set;
  const Measurement* gap = launch_row(set, "dependent_gap");
  // launch.host_us: a kernel with arguments launched inside a stream of work (launch_in_stream),
  // what schemes' kernels cost the host; else an empty kernel in a tight loop (host_launch).
  const Measurement* in_stream = launch_row(set, "launch_in_stream");
  const Measurement* host = in_stream ? in_stream : launch_row(set, "host_launch");
  const Measurement* graph = launch_row(set, "graph_gap");
  const Measurement* sync = launch_row(set, "stream_dependency");
  // A collective's host time per rank beyond its launch. Measured inside a stream of work
  // (collective_in_stream rows, per primitive) where present; else the queued collective rows'
  // enqueue time / ranks, the median over sizes and primitives.
  std::map<std::string, double> by_primitive;
  for (const Measurement* m : set.of(bench::launch)) {
    const double ranks = m->config_number("ranks", 0.0);
    if (m->config_string("what", std::string()) != "collective_in_stream" || ranks < 1) continue;
    const double launch_us = host ? host->time_us.median : 0.0;
    by_primitive[m->config_string("primitive", std::string())] = std::max(0.0, m->time_us.median / ranks - launch_us);
  }
  std::vector<double> enqueue;
  for (const auto& [prim, us] : by_primitive) enqueue.push_back(us);
  if (enqueue.empty()) {
    for (const Measurement* m : set.of(bench::collective)) {
      const double ranks = m->config_number("ranks", 0.0);
      if (m->derived.contains("host_enqueue_us") && ranks >= 1) enqueue.push_back(m->derived_number("host_enqueue_us") / ranks);
    }
  }
  const bool one_host = in.options.virtual_ranks > 0;
  if (!(host || gap || graph || sync || !enqueue.empty() || one_host)) return;
  y.key(0, ps::launch.name_str());
  if (host) {
    y.number(2, lk::host_us, host->time_us.median,
             in_stream ? "launch: launch_in_stream (a kernel with arguments, round-robin over ranks, GPU busy)"
                       : "launch: host_launch (cudaLaunchKernel, host clock)");
  }
  if (gap) y.number(2, lk::gap_us, gap->time_us.median, "launch: dependent_gap (empty kernels on one stream)");
  if (graph) y.number(2, lk::graph_gap_us, graph->time_us.median, "launch: graph_gap (the same, CUDA Graph replay)");
  if (!by_primitive.empty()) {
    y.number(2, lk::collective_host_us, median_of(enqueue),
             "launch: collective_in_stream, per rank beyond its launch, median over primitives");
    y.key(2, lk::collective_host_us_by_primitive.name_str());
    for (const auto& [prim, us] : by_primitive) {
      y.number(4, lk::collective_host_us_by_primitive, us,
               "launch: collective_in_stream " + prim + ": host time per call / ranks - host_us", prim);
    }
  } else if (!enqueue.empty()) {
    y.number(2, lk::collective_host_us, median_of(enqueue),
             "collective: host enqueue time of one call / ranks, median over " + std::to_string(enqueue.size()) + " runs");
  }
  if (sync) y.number(2, lk::sync_host_us, sync->time_us.median, "launch: stream_dependency (event record + wait, host clock)");
  if (one_host) y.value(2, lk::shared_host.name_str(), "true", "one runner thread issues every virtual rank's work");
}

// A virtual node's rank-to-rank pull: its own measurement where the pulls were timed on the GPU
// alone (queued behind a sleep); where the host was in the loop, the physical GPU's copies, timed
// alone, stand in (ProfileOptions::physical_pull).
struct Pull {
  std::vector<CurvePointUs> points;
  std::string note;
};
Pull virtual_pull(const WriterInput& in) {
  Pull pull;
  if (in.options.virtual_ranks <= 0) return pull;
  const std::string path = "copy_engine." + in.options.virtual_link;
  pull.points = transfer_points(in.set, path, 0, true);
  pull.note = "transfer " + path;
  bool timed_alone = !pull.points.empty();
  for (const Measurement* m : in.set.of(bench::transfer)) {
    if (m->config_string("path", std::string()) == path && !m->derived_bool("queued", false)) timed_alone = false;
  }
  if (!timed_alone && !in.options.physical_pull.empty()) {
    pull.points = in.options.physical_pull;
    pull.note = in.options.physical_pull_source;
  }
  return pull;
}

std::vector<int> sm_copy_ctas(const MeasurementSet& set, const std::string& path) {
  std::vector<int> ctas;
  for (const Measurement* m : set.of(bench::transfer)) {
    if (m->config_string("path", std::string()) == path) ctas.push_back(m->config_int("ctas", 0));
  }
  std::sort(ctas.begin(), ctas.end());
  ctas.erase(std::unique(ctas.begin(), ctas.end()), ctas.end());
  return ctas;
}

// Only the figures measured here.
void write_transports(const WriterInput& in, const Pull& pull, YamlLines& y) {
  namespace tk = ps::transport_keys;
  const auto d2d = transfer_points(in.set, "copy_engine.d2d", 0, true);
  const std::vector<int> ctas_seen = sm_copy_ctas(in.set, "sm_copy.d2d");
  // Per-CTA rate of the SM copy kernel: the median over small CTA counts (<= 8, where HBM does not
  // cap it) of GB/s / CTAs at the largest size.
  std::vector<double> per_cta;
  for (int k : ctas_seen) {
    if (k > 8) continue;
    const auto pts = transfer_points(in.set, "sm_copy.d2d", k, false);
    if (!pts.empty()) per_cta.push_back(largest_gbps(pts) / k);
  }
  if (d2d.empty() && per_cta.empty()) return;
  y.key(0, ps::transports.name_str());
  // transport_name()'s names (hardware_profile.cpp is not in the device-only build).
  const std::string ce = "copy_engine", sm = "sm_copy";
  if (in.options.virtual_ranks > 0 && in.options.virtual_link == "d2d" && !pull.points.empty()) {
    y.value(2, ce, y.flow({y.entry(tk::latency_us, pull.points.front().time_us, "transports." + ce)}),
            pull.note + ": time of the smallest pull");
  } else if (!d2d.empty()) {
    y.value(2, ce, y.flow({y.entry(tk::latency_us, d2d.front().time_us, "transports." + ce)}),
            "transfer copy_engine.d2d: time of the smallest copy");
  }
  if (!per_cta.empty()) {
    // Fixed cost: the shortest sm_copy.d2d time at any CTA count. The smallest copy of the
    // fewest CTAs is bandwidth-bound (1 MiB on 1 CTA took 29.6 us on an H100), not latency.
    double floor_us = std::numeric_limits<double>::infinity();
    for (int k : ctas_seen) {
      for (const auto& p : transfer_points(in.set, "sm_copy.d2d", k, false)) floor_us = std::min(floor_us, p.time_us);
    }
    y.value(2, sm,
            y.flow({y.entry(tk::latency_us, floor_us, "transports." + sm),
                    y.entry(tk::cta_gbps, median_of(per_cta), "transports." + sm)}),
            "transfer sm_copy.d2d: shortest copy at any CTA count; GB/s per CTA (CTAs <= 8)");
  }
}

// One link class: its bandwidth and latency, each checked against the loader's range.
void write_link(YamlLines& y, const std::string& cls, double gbps, const std::string& gbps_note, double latency_us,
                const std::string& latency_note) {
  const std::string at = std::string(ps::fabric_keys::links.path) + "." + cls;
  y.key(4, cls);
  y.number(6, ps::link_keys::bandwidth_gbps, gbps, gbps_note, "", at);
  y.number(6, ps::link_keys::latency_us, latency_us, latency_note, "", at);
}

void write_fabric(const WriterInput& in, const Pull& pull, YamlLines& y) {
  namespace fk = ps::fabric_keys;
  const ProfileOptions& options = in.options;
  const auto d2d = transfer_points(in.set, "copy_engine.d2d", 0, true);
  const auto h2d = transfer_points(in.set, "copy_engine.h2d", 0, true);
  const auto d2h = transfer_points(in.set, "copy_engine.d2h", 0, true);
  const auto p2p = transfer_points(in.set, "copy_engine.p2p", 0, true);
  const std::string topology = fk::topology.name_str(), num_gpus = fk::num_gpus.name_str();
  y.key(0, ps::fabric.name_str());
  if (options.virtual_ranks > 0) {
    if (pull.points.empty()) throw std::runtime_error("virtual node without copy_engine." + options.virtual_link + " transfers");
    const std::string T = std::to_string(options.virtual_ranks);
    y.value(2, topology, "virtual", T + " ranks on one GPU, each its own green-context SM partition");
    y.integer(2, fk::num_gpus, options.virtual_ranks);
    y.value(2, fk::virtual_link.name_str(), options.virtual_link);
    y.key(2, fk::links.name_str());
    const std::string cls = options.virtual_link == "host" ? "pcie" : "d2d";
    // Every rank's pulls share the one PCIe link, D2H on one direction and H2D on the other; a
    // pull alone moves what its curve (copy_engine.pcie) says.
    const bool shared_pcie = options.virtual_link == "host" && options.pcie_gbps > 0;
    write_link(y, cls, shared_pcie ? options.pcie_gbps : largest_gbps(pull.points),
               shared_pcie ? options.pcie_source : pull.note + ": rank-to-rank pull, largest", pull.points.front().time_us,
               pull.note + ": smallest pull");
  } else if (in.world > 1 || !p2p.empty()) {
    if (p2p.empty()) throw std::runtime_error("multi-GPU measurements without copy_engine.p2p transfers: no link bandwidth");
    y.value(2, topology, "nvswitch", "assumed (one switch); nvidia_smi_topo.txt beside this file shows the real one");
    y.integer(2, fk::num_gpus, env_int(in.env, "gpu_count", in.world), "GPUs of the host, as read");
    y.key(2, fk::links.name_str());
    write_link(y, env_str(in.env, "p2p_link_class", "nvlink"), largest_gbps(p2p),
               "transfer copy_engine.p2p: largest copy, GB/s one way", p2p.front().time_us,
               "transfer copy_engine.p2p: smallest copy");
  } else {
    if (d2d.empty()) throw std::runtime_error("a single-GPU profile needs copy_engine.d2d transfers");
    y.value(2, topology, "virtual", "one physical GPU");
    y.integer(2, fk::num_gpus, 1);
    y.value(2, fk::virtual_link.name_str(), "d2d");
    y.key(2, fk::links.name_str());
    write_link(y, "d2d", largest_gbps(d2d), "transfer copy_engine.d2d: largest copy, bytes copied / time",
               d2d.front().time_us, "transfer copy_engine.d2d: smallest copy");
    if (!h2d.empty() && !d2h.empty()) {
      write_link(y, "pcie", std::min(largest_gbps(h2d), largest_gbps(d2h)),
                 "transfer copy_engine.h2d / d2h: the slower direction's largest copy, GB/s",
                 std::max(h2d.front().time_us, d2h.front().time_us), "the slower smallest copy");
    }
  }
}

void write_curves(const WriterInput& in, const Pull& pull, YamlLines& y) {
  const ProfileOptions& options = in.options;
  const MeasurementSet& set = in.set;
  struct CurveOut {
    std::string key, path, note;
    int ctas = 0;
    const std::vector<CurvePointUs>* points = nullptr;  // instead of the set's measurements of `path`
  };
  std::vector<CurveOut> curves = {
      {"copy_engine.d2d", "copy_engine.d2d", "transfer copy_engine.d2d (cudaMemcpyAsync device to device)"},
      {"copy_engine.h2d", "copy_engine.h2d", "transfer copy_engine.h2d (pinned host to device)"},
      {"copy_engine.d2h", "copy_engine.d2h", "transfer copy_engine.d2h (device to pinned host)"},
  };
  if (options.virtual_ranks > 0 && options.virtual_link == "d2d") {
    // The rank-to-rank pull (the node's measurement has the same path as a physical D2D copy).
    curves[0] = {"copy_engine.d2d", "copy_engine.d2d", pull.note + " (a pull: cudaMemcpyAsync device to device)", 0,
                 &pull.points};
  }
  if (options.virtual_ranks > 0 && options.virtual_link == "host" && options.pcie_gbps > 0) {
    // The rank-to-rank pull staged through host memory, on the pcie class its fabric links have.
    curves.push_back({"copy_engine.pcie", "copy_engine.host", pull.note + " (a pull: D2H, then H2D, one stream)", 0,
                      &pull.points});
  }
  const std::vector<int> ctas_seen = sm_copy_ctas(set, "sm_copy.d2d");
  if (!ctas_seen.empty()) {
    curves.push_back({"sm_copy.d2d", "sm_copy.d2d", "transfer sm_copy.d2d with " + std::to_string(ctas_seen.back()) + " CTAs",
                      ctas_seen.back()});
  }
  const std::string cls = env_str(in.env, "p2p_link_class", "nvlink");
  curves.push_back({"copy_engine." + cls, "copy_engine.p2p", "transfer copy_engine.p2p (cudaMemcpyPeerAsync)"});
  const std::vector<int> p2p_ctas = sm_copy_ctas(set, "sm_copy.p2p");
  if (!p2p_ctas.empty()) {
    const int k = p2p_ctas.back();
    curves.push_back({"sm_copy." + cls, "sm_copy.p2p", "transfer sm_copy.p2p with " + std::to_string(k) + " CTAs", k});
  }
  YamlLines body;
  for (const auto& c : curves) {
    const auto pts = c.points ? *c.points : transfer_points(set, c.path, c.ctas, true);
    if (pts.empty()) continue;
    body.comment(2, c.note + ": median time per size, every other size of the sweep");
    body.curve(c.key, pts);
  }
  // NCCL collectives: points [bytes, median us] per primitive and rank count (nccl-tests S).
  std::map<std::string, std::vector<CurvePointUs>> coll;
  std::vector<const Measurement*> collectives = set.of(bench::nccl);
  for (const Measurement* m : set.of(bench::collective)) collectives.push_back(m);
  for (const Measurement* m : collectives) {
    const std::string key =
        m->config_string("primitive") + ".n" + std::to_string(static_cast<int>(m->config_count("ranks", kMaxUnitCount)));
    if (!curve_sample_size(static_cast<std::int64_t>(m->config_count("bytes")))) continue;  // held out for validate
    coll[key].push_back({static_cast<std::int64_t>(m->config_count("bytes")), m->time_us.median});
  }
  for (auto& [key, pts] : coll) {
    std::sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
    pts.erase(std::unique(pts.begin(), pts.end(), [](const auto& a, const auto& b) { return a.bytes == b.bytes; }), pts.end());
    body.comment(2, key + " (benchmark nccl / collective): median time per full array size S (nccl-tests convention)");
    body.curve(key, pts);
  }
  if (body.str().empty()) return;
  y.key(0, ps::curves.name_str());
  y.raw(body.str());
}

// Whole-GPU cuBLASLt durations with the tile its heuristic chose.
void write_gemm_profiles(const WriterInput& in, YamlLines& y) {
  namespace gk = ps::gemm_keys;
  if (in.gemms.empty()) return;
  y.comment(0, "gemm: cuBLASLt whole-GPU median durations; tile_m / tile_n from the heuristic's algorithm");
  y.comment(0, "(cublasLtMatmulAlgoConfigGetAttribute CUBLASLT_ALGO_CONFIG_TILE_ID)");
  y.key(0, ps::gemm_profiles.name_str());
  for (std::size_t i = 0; i < in.gemms.size(); ++i) {
    const Measurement* m = in.gemms[i];
    const std::string at = std::string(ps::gemm_profiles.path) + "." + std::to_string(i);
    y.raw("  - " + y.flow({y.entry(gk::m, m->config_count("m"), at), y.entry(gk::n, m->config_count("n"), at),
                           y.entry(gk::k, m->config_count("k"), at),
                           gk::dtype.name_str() + ": " + m->config_string("dtype", "bf16"),
                           y.entry_int(gk::tile_m, m->derived_int("tile_m", 128), at),
                           y.entry_int(gk::tile_n, m->derived_int("tile_n", 128), at),
                           y.entry(gk::duration_us, m->time_us.median, at)}) +
          "\n");
  }
}

}  // namespace

std::string write_profile_yaml(const MeasurementSet& set, const ProfileOptions& options) {
  if (options.schema != 2)
    throw std::runtime_error("profile schema must be 2 (schema 1, gpu.kernel_launch_us, is no longer read by the loader)");
  const json& env = set.environment;
  WriterInput in{set, options, env};
  in.sm_count = env_int(env, "sm_count", 0);
  if (in.sm_count < 1) throw std::runtime_error("environment.json has no sm_count: cannot write a profile");
  in.dir = env_str(env, "results_dir", "unknown");
  in.gpu_name = env_str(env, "gpu_name", "gpu");
  in.world = std::max(1, env_int(env, "world_size", 1));
  in.tile_us = fitted_gemm_tile_us(set, in.sm_count);
  in.gemms = set.of(bench::gemm);
  if (in.tile_us <= 0 && in.gemms.empty()) {
    throw std::runtime_error("no gemm_tile or gemm measurements: a profile needs a measured GEMM rate");
  }
  YamlLines y;
  write_header(in, y);
  write_gpu(in, y);
  write_launch(in, y);
  const Pull pull = virtual_pull(in);
  write_transports(in, pull, y);
  write_fabric(in, pull, y);
  write_curves(in, pull, y);
  write_gemm_profiles(in, y);
  return y.str();
}

std::string write_virtual_node_profile_yaml(const VirtualNodeRecord& node, const std::string& physical_dir,
                                            ProfileOptions options) {
  MeasurementSet set;
  set.environment = node.environment;
  set.measurements = node.measurements;
  options.virtual_ranks = node.ranks;
  options.virtual_link = node.link;
  // The virtual ranks share one physical GPU: its GEMM full-rate limit, PCIe rate, memory-kernel
  // rate and (for pulls the node timed with the host in the loop) its copies.
  physical_gpu_options(physical_dir, options);
  if (options.name.empty()) options.name = "virtual-t" + std::to_string(node.ranks) + "-" + node.link;
  return write_profile_yaml(set, options);
}

}  // namespace overlap::calibrate
