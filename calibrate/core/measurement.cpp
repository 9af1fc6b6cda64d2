#include "calibrate/core/measurement.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "calibrate/core/json_reader.hpp"
#include "cost_model/atomic_file.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/json_lines.hpp"

namespace overlap::calibrate {
namespace {

using nlohmann::json;

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

bool has_key(const json& obj, const std::string& key) { return obj.is_object() && obj.contains(key); }

// obj[key] as a finite number; refused through m.fail (file, line, key) otherwise.
double number_in(const Measurement& m, const json& obj, const std::string& part, const std::string& key) {
  if (!has_key(obj, key)) m.fail(part + "." + key, "missing (a number is needed here)");
  const json& v = obj[key];
  if (!v.is_number()) m.fail(part + "." + key, "must be a number (got " + v.dump() + ")");
  const double x = v.get<double>();
  if (!std::isfinite(x)) m.fail(part + "." + key, "must be a finite number");
  return x;
}

// As number_in, and whole (JSON numbers may arrive as 20.0), within +-2^53 where doubles are exact.
std::int64_t whole_in(const Measurement& m, const json& obj, const std::string& part, const std::string& key) {
  const double v = number_in(m, obj, part, key);
  if (v != std::floor(v) || std::fabs(v) > static_cast<double>(kMaxConfigCount)) {
    m.fail(part + "." + key, "must be a whole number (got " + obj[key].dump() + ")");
  }
  return static_cast<std::int64_t>(v);
}

}  // namespace

namespace bench {
const std::vector<std::string>& all() {
  static const std::vector<std::string> names = {
      gemm,     gemm_sm, gemm_waves, gemm_tile, gemm_concurrent, interference_sm_copy, interference_copy_engine,
      interference_nccl, transfer, nccl, collective, launch, hbm_stream, signal_gemm, gemm_backward, grouped_gemm};
  return names;
}
}  // namespace bench

void Measurement::fail(const std::string& key, const std::string& message) const {
  if (source_file.empty() && !source_text) throw std::runtime_error(benchmark + " " + key + ": " + message);
  const std::string path = source_path.empty() ? key : source_path + "." + key;
  throw InputError(source_file, source_text ? json_line_of(*source_text, path) : 0, path, message);
}

double Measurement::config_number(const std::string& key) const { return number_in(*this, config, "config", key); }
std::string Measurement::config_string(const std::string& key) const {
  if (!has_key(config, key)) fail("config." + key, "missing (a string is needed here)");
  if (!config[key].is_string()) fail("config." + key, "must be a string (got " + config[key].dump() + ")");
  return config[key].get<std::string>();
}
double Measurement::derived_number(const std::string& key) const { return number_in(*this, derived, "derived", key); }

double Measurement::config_number(const std::string& key, double fallback) const {
  return has_key(config, key) ? config_number(key) : fallback;
}
std::int64_t Measurement::config_int(const std::string& key, std::int64_t fallback) const {
  return has_key(config, key) ? whole_in(*this, config, "config", key) : fallback;
}
std::int64_t Measurement::config_count(const std::string& key, std::int64_t max) const {
  const std::int64_t v = whole_in(*this, config, "config", key);
  if (v < 1 || v > max) {
    fail("config." + key, "must be a whole number from 1 to " + std::to_string(max) + " (got " + config[key].dump() + ")");
  }
  return v;
}
std::vector<std::int64_t> Measurement::config_counts(const std::string& key, std::size_t max_items, std::int64_t max) const {
  if (!has_key(config, key) || !config[key].is_array() || config[key].empty() || config[key].size() > max_items) {
    fail("config." + key, "must be a list of 1 to " + std::to_string(max_items) + " whole numbers" +
                              (has_key(config, key) ? " (got " + config[key].dump() + ")" : " (missing)"));
  }
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < config[key].size(); ++i) {
    const nlohmann::json& v = config[key][i];
    const std::string at = "config." + key + "[" + std::to_string(i) + "]";
    if (!v.is_number() || !(v.get<double>() >= 0) || v.get<double>() > static_cast<double>(max) ||
        v.get<double>() != std::floor(v.get<double>())) {
      fail(at, "must be a whole number from 0 to " + std::to_string(max) + " (got " + v.dump() + ")");
    }
    out.push_back(static_cast<std::int64_t>(v.get<double>()));
  }
  return out;
}
std::string Measurement::config_string(const std::string& key, const std::string& fallback) const {
  return has_key(config, key) ? config_string(key) : fallback;
}
double Measurement::derived_number(const std::string& key, double fallback) const {
  return has_key(derived, key) ? derived_number(key) : fallback;
}
std::int64_t Measurement::derived_int(const std::string& key, std::int64_t fallback) const {
  return has_key(derived, key) ? whole_in(*this, derived, "derived", key) : fallback;
}
bool Measurement::derived_bool(const std::string& key, bool fallback) const {
  if (!has_key(derived, key)) return fallback;
  if (!derived[key].is_boolean()) fail("derived." + key, "must be true or false (got " + derived[key].dump() + ")");
  return derived[key].get<bool>();
}

std::vector<const Measurement*> MeasurementSet::of(const std::string& benchmark) const {
  std::vector<const Measurement*> out;
  for (const auto& m : measurements) {
    if (m.benchmark == benchmark) out.push_back(&m);
  }
  return out;
}

json to_json(const SampleStats& s) {
  return json{{"count", s.count}, {"median", s.median}, {"min", s.min},
              {"max", s.max},     {"mean", s.mean},     {"spread", s.spread}};
}

json to_json(const Measurement& m) {
  return json{{"benchmark", m.benchmark}, {"config", m.config}, {"time_us", to_json(m.time_us)}, {"derived", m.derived}};
}

json measurements_document(const MeasurementSet& set) {
  json doc{{"schema", kMeasurementsSchema}, {"fixture", set.fixture}, {"measurements", json::array()}};
  for (const auto& m : set.measurements) doc["measurements"].push_back(to_json(m));
  return doc;
}

Measurement measurement_from_json(const json& j, const std::string& file, const std::string& where,
                                  std::shared_ptr<const std::string> text) {
  const JsonReader r(j, file, where, text);
  r.allow_keys({"benchmark", "config", "time_us", "derived"});
  Measurement m;
  m.benchmark = r.get_string("benchmark");
  const auto& known = bench::all();
  if (std::find(known.begin(), known.end(), m.benchmark) == known.end()) {
    r.fail_at("benchmark", "unknown benchmark '" + m.benchmark + "' (known: " + joined(known) + ")");
  }
  // config and derived hold what each benchmark writes (calibrate/cuda/bench_*.cpp); their keys are
  // checked where they are read (config_number & co.), each with this file, line and key.
  if (r.has("config")) {
    r.child("config").expect_object();
    m.config = r.child("config").value();
  }
  if (r.has("derived")) {
    r.child("derived").expect_object();
    m.derived = r.child("derived").value();
  }
  const JsonReader t = r.child("time_us");
  t.allow_keys({"count", "median", "min", "max", "mean", "spread"});
  // A timing run takes tens to thousands of samples; validate replays that many (interference).
  const std::int64_t count = t.get_positive_int("count");
  if (count > kMaxSampleCount) t.fail_at("count", "must be at most " + std::to_string(kMaxSampleCount) + " (got " + std::to_string(count) + ")");
  m.time_us.count = static_cast<int>(count);
  m.time_us.median = t.get_positive_number("median");
  m.time_us.min = t.get_positive_number("min");
  m.time_us.max = t.get_positive_number("max");
  if (m.time_us.min > m.time_us.median || m.time_us.median > m.time_us.max) t.fail("needs 0 < min <= median <= max");
  m.time_us.mean = t.has("mean") ? t.get_positive_number("mean") : m.time_us.median;
  m.time_us.spread = t.has("spread") ? t.get_positive_number("spread") : m.time_us.max / m.time_us.min;
  for (const double v : {m.time_us.median, m.time_us.min, m.time_us.max, m.time_us.mean, m.time_us.spread}) {
    if (!std::isfinite(v)) t.fail("statistics must be finite numbers");
  }
  m.source_file = file;
  m.source_path = where;
  m.source_text = std::move(text);
  return m;
}

MeasurementSet load_measurement_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string file = (fs::path(dir) / "measurements.json").string();
  const JsonDocument doc = read_json_document(file);
  const JsonReader r = doc.reader();
  r.allow_keys({"schema", "fixture", "measurements"});
  if (r.get_string("schema") != kMeasurementsSchema) {
    r.fail_at("schema", std::string("must be \"") + kMeasurementsSchema + "\"");
  }
  MeasurementSet set;
  set.fixture = r.get_bool("fixture", false);
  const JsonReader list = r.child("measurements");
  list.expect_array();
  for (std::size_t i = 0; i < list.size(); ++i) {
    set.measurements.push_back(
        measurement_from_json(list.element(i).value(), file, "measurements[" + std::to_string(i) + "]", doc.text));
  }
  const fs::path env = fs::path(dir) / "environment.json";
  if (fs::exists(env)) {
    const JsonDocument e = read_json_document(env.string());
    e.reader().expect_object();
    set.environment = e.value;
  }
  return set;
}

void write_measurement_dir(const std::string& dir, const MeasurementSet& set) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);  // a missing directory is reported by the write that needs it
  write_file_atomically((fs::path(dir) / "environment.json").string(), set.environment.dump(2) + "\n");
  write_file_atomically((fs::path(dir) / "measurements.json").string(), measurements_document(set).dump(2) + "\n");
}

}  // namespace overlap::calibrate
