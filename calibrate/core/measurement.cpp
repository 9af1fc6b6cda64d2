#include "calibrate/core/measurement.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "calibrate/core/json_reader.hpp"
#include "calibrate/core/output_file.hpp"
#include "cost_model/input_error.hpp"

namespace overlap::calibrate {
namespace {

using nlohmann::json;

double number_at(const json& obj, const std::string& key, const std::string& who) {
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) throw std::runtime_error(who + ": no number '" + key + "'");
  return it->get<double>();
}

}  // namespace

double Measurement::config_number(const std::string& key) const {
  return number_at(config, key, benchmark + " config");
}
std::string Measurement::config_string(const std::string& key) const {
  const auto it = config.find(key);
  if (it == config.end() || !it->is_string()) throw std::runtime_error(benchmark + " config: no string '" + key + "'");
  return it->get<std::string>();
}
double Measurement::derived_number(const std::string& key) const {
  return number_at(derived, key, benchmark + " derived");
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

Measurement measurement_from_json(const json& j, const std::string& file, const std::string& where) {
  auto fail = [&](const std::string& key, const std::string& msg) -> void {
    throw InputError(file, 0, where + (key.empty() ? "" : "." + key), msg);
  };
  if (!j.is_object()) fail("", "must be an object");
  Measurement m;
  if (!j.contains("benchmark") || !j["benchmark"].is_string()) fail("benchmark", "missing or not a string");
  m.benchmark = j["benchmark"].get<std::string>();
  if (j.contains("config")) {
    if (!j["config"].is_object()) fail("config", "must be an object");
    m.config = j["config"];
  }
  if (j.contains("derived")) {
    if (!j["derived"].is_object()) fail("derived", "must be an object");
    m.derived = j["derived"];
  }
  if (!j.contains("time_us") || !j["time_us"].is_object()) fail("time_us", "missing or not an object");
  const json& t = j["time_us"];
  for (const char* key : {"count", "median", "min", "max"}) {
    if (!t.contains(key) || !t[key].is_number()) fail(std::string("time_us.") + key, "missing or not a number");
  }
  m.time_us.count = t["count"].get<int>();
  m.time_us.median = t["median"].get<double>();
  m.time_us.min = t["min"].get<double>();
  m.time_us.max = t["max"].get<double>();
  m.time_us.mean = t.value("mean", m.time_us.median);
  m.time_us.spread = t.value("spread", m.time_us.min > 0 ? m.time_us.max / m.time_us.min : 0.0);
  if (m.time_us.count < 1) fail("time_us.count", "must be at least 1");
  if (!(m.time_us.min > 0) || m.time_us.min > m.time_us.median || m.time_us.median > m.time_us.max) {
    fail("time_us", "needs 0 < min <= median <= max");
  }
  return m;
}

MeasurementSet load_measurement_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string file = (fs::path(dir) / "measurements.json").string();
  const json doc = read_json_file(file);
  if (!doc.is_object()) throw InputError(file, 0, "", "must be a JSON object");
  if (doc.value("schema", std::string()) != kMeasurementsSchema) {
    throw InputError(file, 0, "schema", std::string("must be \"") + kMeasurementsSchema + "\"");
  }
  MeasurementSet set;
  set.fixture = doc.value("fixture", false);
  if (!doc.contains("measurements") || !doc["measurements"].is_array()) {
    throw InputError(file, 0, "measurements", "missing or not a list");
  }
  const json& list = doc["measurements"];
  for (std::size_t i = 0; i < list.size(); ++i) {
    set.measurements.push_back(measurement_from_json(list[i], file, "measurements[" + std::to_string(i) + "]"));
  }
  const fs::path env = fs::path(dir) / "environment.json";
  if (fs::exists(env)) set.environment = read_json_file(env.string());
  return set;
}

void write_measurement_dir(const std::string& dir, const MeasurementSet& set) {
  namespace fs = std::filesystem;
  write_output_file((fs::path(dir) / "environment.json").string(), set.environment.dump(2) + "\n");
  write_output_file((fs::path(dir) / "measurements.json").string(), measurements_document(set).dump(2) + "\n");
}

}  // namespace overlap::calibrate
