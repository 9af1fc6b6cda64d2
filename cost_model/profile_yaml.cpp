#include "cost_model/profile_yaml.hpp"

#include <algorithm>
#include <cstdint>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "cost_model/profile_json.hpp"
#include "cost_model/profile_schema.hpp"

namespace overlap {
namespace {

namespace ps = profile_schema;

void emit_yaml(YAML::Emitter& em, const nlohmann::json& j) {
  if (j.is_object()) {
    em << YAML::BeginMap;
    for (const auto& [k, v] : j.items()) {
      em << YAML::Key << k << YAML::Value;
      emit_yaml(em, v);
    }
    em << YAML::EndMap;
  } else if (j.is_array()) {
    const bool flat = std::all_of(j.begin(), j.end(), [](const nlohmann::json& e) { return e.is_primitive(); });
    em << (flat ? YAML::Flow : YAML::Block) << YAML::BeginSeq;
    for (const auto& v : j) emit_yaml(em, v);
    em << YAML::EndSeq;
  } else if (j.is_string()) {
    em << j.get<std::string>();
  } else if (j.is_boolean()) {
    em << j.get<bool>();
  } else if (j.is_number_integer()) {
    em << j.get<std::int64_t>();
  } else if (j.is_number()) {
    em << j.get<double>();
  } else {
    em << YAML::Null;
  }
}

// The resolved profile as a profile file the loader reads back: where it came from goes into a
// comment, each curve is its points, a GEMM without wave timestamps has no wave_end_us, and the
// fabric graph the loader builds from the topology is left to it (only an `explicit` topology writes its nodes and edges).
nlohmann::json loadable_profile_json(const HardwareProfile& p) {
  nlohmann::json j = profile_to_json(p);
  j.erase("source_file");
  // A curve's fit is derived from its points (the loader takes one form of a curve).
  for (auto& [key, curve] : j[ps::curves.name_str()].items()) curve.erase("fit");
  // No per-wave timestamps is no list (the loader takes a list of at least one).
  for (auto& entry : j[ps::gemm_profiles.name_str()]) {
    const std::string waves = ps::gemm_keys::wave_end_us.name_str();
    if (entry[waves].empty()) entry.erase(waves);
  }
  nlohmann::json& fabric = j[ps::fabric.name_str()];
  if (fabric.value(ps::fabric_keys::topology.name_str(), std::string()) != "explicit") {
    fabric.erase(ps::fabric_keys::nodes.name_str());
    fabric.erase(ps::fabric_keys::edges.name_str());
  }
  return j;
}

}  // namespace

std::string profile_yaml(const HardwareProfile& p) {
  YAML::Emitter em;
  em.SetDoublePrecision(15);
  emit_yaml(em, loadable_profile_json(p));
  std::string out = "# overlap-sim profile show --format yaml: the resolved profile, every default written out";
  out += p.source_file.empty() ? std::string("\n") : "; from " + p.source_file + "\n";
  out += "# Load it back as a profile: hardware: this-file.yaml, or --hardware this-file.yaml\n";
  return out + em.c_str() + "\n";
}

}  // namespace overlap
