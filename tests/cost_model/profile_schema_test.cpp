// cost_model/profile_schema: the one table the loader, the JSON and YAML writers and the reference
// read. Every profile round-trips through it; every key the JSON writer writes has a row; the
// calibration's writer refuses a value the loader would refuse.
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include "calibrate/core/calibration_plan.hpp"
#include "calibrate/core/measurement.hpp"
#include "calibrate/core/profile_writer.hpp"
#include "calibrate/core/scheme_config.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/profile_json.hpp"
#include "cost_model/profile_loader.hpp"
#include "cost_model/profile_schema.hpp"
#include "cost_model/profile_yaml.hpp"

namespace fs = std::filesystem;
namespace ps = overlap::profile_schema;
using nlohmann::json;

namespace {

overlap::HardwareProfile load_text(const std::string& yaml, const std::string& file) {
  const YAML::Node root = YAML::Load(yaml);
  return overlap::profile_from_yaml(overlap::YamlReader(root, "", file), ".");
}

// profile show --format yaml without the header's "from FILE" (the only line that names the file).
std::string yaml_of(overlap::HardwareProfile p) {
  p.source_file.clear();
  return overlap::profile_yaml(p);
}

json json_of(overlap::HardwareProfile p) {
  p.source_file.clear();
  return overlap::profile_to_json(p);
}

// load -> write YAML -> load -> write YAML: the two writes are byte-identical and the two loads'
// resolved JSON is the same.
void check_round_trip(const overlap::HardwareProfile& original) {
  const std::string first = yaml_of(original);
  const overlap::HardwareProfile reloaded = load_text(first, "first.yaml");
  const std::string second = yaml_of(reloaded);
  CHECK(second == first);
  CHECK(json_of(reloaded).dump(2) == json_of(original).dump(2));
}

std::vector<fs::path> calibrated_profiles() {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(fs::path(OVERLAP_SOURCE_DIR) / "calibrate/results")) {
    if (fs::exists(entry.path() / "profile.yaml")) out.push_back(entry.path());
  }
  return out;
}

// Leaves (and map entries) of the resolved JSON, as dotted paths with list indices.
void leaves(const json& j, const std::string& at, std::set<std::string>& out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) leaves(v, at.empty() ? k : at + "." + k, out);
  } else if (j.is_array() && !j.empty() && j.front().is_object()) {
    for (std::size_t i = 0; i < j.size(); ++i) leaves(j[i], at + "." + std::to_string(i), out);
  } else {
    out.insert(at);
  }
}

}  // namespace

TEST_CASE("profile schema: every built-in profile round-trips through profile show --format yaml", "[profile][schema]") {
  const auto names = overlap::builtin_profile_names();
  REQUIRE(names.size() >= 5);
  for (const std::string& name : names) {
    INFO(name);
    check_round_trip(overlap::load_profile(name));
  }
}

TEST_CASE("profile schema: the calibrated profiles round-trip, committed and regenerated", "[profile][schema]") {
  const auto dirs = calibrated_profiles();
  REQUIRE(!dirs.empty());
  for (const fs::path& dir : dirs) {
    INFO(dir.string());
    check_round_trip(overlap::load_profile_file((dir / "profile.yaml").string()));
    // The calibration's own writer, from the measurements, loads to the same profile.
    const std::string written = overlap::calibrate::write_profile_yaml(overlap::calibrate::load_measurement_dir(dir.string()));
    const overlap::HardwareProfile regenerated = load_text(written, "regenerated.yaml");
    check_round_trip(regenerated);
    CHECK(json_of(regenerated) == json_of(overlap::load_profile_file((dir / "profile.yaml").string())));
  }
}

TEST_CASE("profile schema: every key the JSON writer writes has a schema row", "[profile][schema]") {
  std::set<std::string> keys;
  for (const std::string& name : overlap::builtin_profile_names()) leaves(overlap::profile_to_json(overlap::load_profile(name)), "", keys);
  for (const fs::path& dir : calibrated_profiles())
    leaves(overlap::profile_to_json(overlap::load_profile_file((dir / "profile.yaml").string())), "", keys);
  REQUIRE(keys.count("gpu.sm_count") == 1);
  for (const std::string& key : keys) {
    INFO(key);
    // Output only: where the profile came from, and the curve's fit beside its points.
    if (key == "source_file" || key.find(".fit.") != std::string::npos) continue;
    CHECK(ps::find_key(key) != nullptr);
  }
  // A row's place holders match one component; a list element's index is skipped.
  REQUIRE(ps::find_key("fabric.links.nvlink.bandwidth_gbps") != nullptr);
  CHECK(ps::find_key("fabric.links.nvlink.bandwidth_gbps")->path == "fabric.links.<class>.bandwidth_gbps");
  REQUIRE(ps::find_key("fabric.edges.3.latency_us") != nullptr);
  CHECK(ps::find_key("fabric.edges.3.latency_us")->path == "fabric.edges[].latency_us");
  CHECK(ps::find_key("gpu.peak_tflops.bf16")->path == "gpu.peak_tflops");
  CHECK(ps::find_key("curves.all_reduce.n8.LL.points")->path == "curves.<curve>.points");
  CHECK(ps::find_key("gpu.no_such_key") == nullptr);
}

TEST_CASE("profile schema: the loader's allowed keys are the schema's, in its order", "[profile][schema][errors]") {
  const std::string base = "gpu: {sm_count: 132, peak_tflops: {bf16: 989}}\n"
                           "fabric: {num_gpus: 8, links: {nvlink: {bandwidth_gbps: 450}}}\n";
  try {
    (void)load_text(base + "launch: {no_such_key: 1}\n", "p.yaml");
    FAIL("an unknown key loaded");
  } catch (const overlap::InputError& e) {
    std::string list;
    for (const std::string& n : ps::names_of(ps::kLaunch)) list += (list.empty() ? "" : ", ") + n;
    CHECK(e.key_path() == "launch.no_such_key");
    CHECK(e.message() == "unknown key (allowed: " + list + ")");
  }
}

TEST_CASE("profile schema: loader_accepts is the loader's check", "[profile][schema]") {
  const std::string base = "gpu: {sm_count: 132, peak_tflops: {bf16: 989}}\nfabric: {num_gpus: 8, links: {nvlink: {bandwidth_gbps: ";
  for (double gbps : {0.0, 0.0008, 0.001, 450.0, 1e6, 2e6}) {
    INFO(gbps);
    bool loads = true;
    try {
      (void)load_text(base + std::to_string(gbps) + "}}}\n", "p.yaml");
    } catch (const overlap::InputError&) {
      loads = false;
    }
    CHECK(loads == ps::loader_accepts(ps::link_keys::bandwidth_gbps, gbps));
  }
  CHECK(ps::loader_accepts(ps::gpu_keys::hbm_sm_gbps, 0.0));  // 0 = not given
  CHECK_FALSE(ps::loader_accepts(ps::gpu_keys::hbm_sm_gbps, 1e-4));
  CHECK_FALSE(ps::loader_accepts(ps::gpu_keys::gemm_efficiency, 0.0));
  CHECK(ps::loader_accepts(ps::gpu_keys::gemm_efficiency, 1.0));
  CHECK_FALSE(ps::loader_accepts(ps::gpu_keys::sm_count, 13.5));  // an integer range
}

TEST_CASE("profile writer: refuses a link bandwidth the loader would refuse", "[calibrate][schema]") {
  // A fuzzed measurements.json: copy_engine.d2d copies at about 0.00081 GB/s, below the loader's
  // 0.001 GB/s minimum for fabric.links.<class>.bandwidth_gbps.
  using namespace overlap::calibrate;
  MeasurementSet s;
  s.environment = {{"gpu_name", "Fuzzed GPU"}, {"sm_count", 132}, {"results_dir", "fuzzed"}, {"world_size", 1}};
  Measurement gemm;
  gemm.benchmark = bench::gemm;
  gemm.config = {{"m", 8192}, {"n", 8192}, {"k", 4096}, {"dtype", "bf16"}};
  gemm.time_us = summarize({70.0, 70.0, 70.0});
  gemm.derived = {{"tflops", 785.0}, {"tile_m", 256}, {"tile_n", 128}};
  s.measurements.push_back(gemm);
  for (auto bytes : transfer_sizes()) {
    Measurement m;
    m.benchmark = bench::transfer;
    m.config = {{"path", "copy_engine.d2d"}, {"bytes", bytes}};
    const double us = double(bytes) / (0.00081 * 1e3);  // 0.00081 GB/s
    m.time_us = summarize({us, us, us});
    s.measurements.push_back(m);
  }
  try {
    (void)write_profile_yaml(s);
    FAIL("the writer wrote a link of 0.00081 GB/s");
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("fabric.links.d2d.bandwidth_gbps = 0.00081") != std::string::npos);
    CHECK(what.find("[0.001, 1000000] GB/s") != std::string::npos);
  }
  // The same run at 10 GB/s is written and loads.
  for (Measurement& m : s.measurements) {
    if (m.benchmark != bench::transfer) continue;
    const double us = double(m.config_int("bytes", 0)) / 1e4;
    m.time_us = summarize({us, us, us});
  }
  const overlap::HardwareProfile p = load_text(write_profile_yaml(s), "ok.yaml");
  CHECK(p.fabric.links.at("d2d").bandwidth_gbps == Approx(10.0));
}
