// A malformed results directory (measurements.json, schemes/schemes.json) is refused by `overlap-sim
// validate` with exit 2 and a message naming the file, the line and the key, never an internal error
// or a silently dropped entry. Each case mutates a copy of the fixture directory, writes it with one
// key a line, and finds the expected line by the mutated value's own text.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "calibrate/core/measurement.hpp"
#include "calibrate/core/scheme_config.hpp"
#include "cost_model/input_error.hpp"
#include "tools/cli.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kFixture = std::string(OVERLAP_SOURCE_DIR) + "/tests/data/calibrate/fixture-h100";

int cli(const std::vector<std::string>& args, std::string* text) {
  std::vector<const char*> argv = {"overlap-sim"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int rc = overlap::tools::run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  *text = err.str();
  return rc;
}

json read(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

// 1-based line of the first occurrence of `marker` in `text`.
int line_of(const std::string& text, const std::string& marker) {
  const auto at = text.find(marker);
  REQUIRE(at != std::string::npos);
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

// The index of the first measurement of `benchmark` in the fixture.
std::size_t first_of(const json& doc, const std::string& benchmark) {
  for (std::size_t i = 0; i < doc["measurements"].size(); ++i)
    if (doc["measurements"][i]["benchmark"] == benchmark) return i;
  FAIL("the fixture has no " << benchmark << " measurement");
  return 0;
}

struct Case {
  std::string what;
  std::function<std::string(json&)> mutate;  // returns the key path the error must name
  std::string marker;                         // text on the line the error must name
  std::string message;                        // part of the message
};

// Copies the results directory `source` to `tmp`, writes `fixture` mutated by the case as tmp/`file`
// (one key a line), and checks that validate refuses it with exit 2 and `file:line: key: ` (the line
// of the case's marker; with no marker, any line of that file) and the case's message.
void check_refusal(const fs::path& source, const fs::path& tmp, const std::string& file, const json& fixture, const Case& c) {
  fs::remove_all(tmp);
  fs::copy(source, tmp, fs::copy_options::recursive);
  json doc = fixture;
  const std::string key = c.mutate(doc);
  const std::string text = doc.dump(2) + "\n";
  std::ofstream(tmp / file) << text;
  std::string err;
  CHECK(cli({"validate", tmp.string()}, &err) == overlap::tools::kExitUsage);
  INFO(err);
  const std::string path = (tmp / file).string() + ":";
  if (c.marker.empty()) {
    CHECK(err.find(path) != std::string::npos);
    CHECK(err.find(": " + key + ": ") != std::string::npos);
  } else {
    CHECK(err.find(path + std::to_string(line_of(text, c.marker)) + ": " + key + ": ") != std::string::npos);
  }
  CHECK(err.find(c.message) != std::string::npos);
  CHECK(err.find("internal error") == std::string::npos);
}

}  // namespace

TEST_CASE("validate refuses a malformed measurements.json with its file, line and key", "[calibrate][validate][input]") {
  const json fixture = read(fs::path(kFixture) / "measurements.json");
  const std::size_t sm = first_of(fixture, "gemm_sm");
  const std::size_t ice = first_of(fixture, "interference_copy_engine");
  const std::string at_sm = "measurements[" + std::to_string(sm) + "]";
  const std::string at_ice = "measurements[" + std::to_string(ice) + "]";
  const std::vector<Case> cases = {
      {"a size that is not a number",
       [](json& d) { d["measurements"][0]["config"]["m"] = "x"; return std::string("measurements[0].config.m"); },
       "\"m\": \"x\"", "must be a number"},
      {"a negative size",
       [](json& d) { d["measurements"][0]["config"]["m"] = -4097; return std::string("measurements[0].config.m"); },
       "\"m\": -4097", "whole number from 1"},
      {"a fractional size",
       [](json& d) { d["measurements"][0]["config"]["n"] = 4096.5; return std::string("measurements[0].config.n"); },
       "\"n\": 4096.5", "whole number"},
      {"a missing size: reported at the config that lacks it",
       [](json& d) { d["measurements"][0]["config"].erase("k"); return std::string("measurements[0].config.k"); },
       "\"config\": {", "missing"},
      {"a misspelt benchmark",
       [](json& d) { d["measurements"][1]["benchmark"] = "gemm_typo"; return std::string("measurements[1].benchmark"); },
       "\"benchmark\": \"gemm_typo\"", "unknown benchmark 'gemm_typo'"},
      {"a misspelt key of a measurement",
       [](json& d) { d["measurements"][1]["time_usec"] = 3; return std::string("measurements[1].time_usec"); },
       "\"time_usec\"", "unknown key"},
      {"a misspelt statistic",
       [](json& d) { d["measurements"][2]["time_us"]["medain"] = 3; return std::string("measurements[2].time_us.medain"); },
       "\"medain\"", "unknown key"},
      {"a negative median",
       [](json& d) { d["measurements"][0]["time_us"]["median"] = -3.5; return std::string("measurements[0].time_us.median"); },
       "\"median\": -3.5", "positive number"},
      {"more samples than a timing run takes",
       [](json& d) { d["measurements"][0]["time_us"]["count"] = 12345678; return std::string("measurements[0].time_us.count"); },
       "\"count\": 12345678", "at most"},
      {"a schema that is not a string",
       [](json& d) { d["schema"] = 7; return std::string("schema"); }, "\"schema\": 7", "must be a string"},
      {"more SMs than the GPU has",
       [&](json& d) { d["measurements"][sm]["config"]["sms"] = 4096; return at_sm + ".config.sms"; },
       "\"sms\": 4096", "whole number from 1 to"},
      {"an unknown copy direction",
       [&](json& d) { d["measurements"][ice]["config"]["direction"] = "sideways"; return at_ice + ".config.direction"; },
       "\"direction\": \"sideways\"", "must be d2d, h2d or d2h"},
      {"a dtype no model knows",
       [](json& d) { d["measurements"][0]["config"]["dtype"] = "int3"; return std::string("measurements[0].config.dtype"); },
       "\"dtype\": \"int3\"", "unknown dtype 'int3'"},
  };
  const fs::path tmp = fs::temp_directory_path() / ("overlap-results-input-" + std::to_string(::getpid()));
  for (const Case& c : cases) {
    SECTION(c.what) { check_refusal(kFixture, tmp, "measurements.json", fixture, c); }
  }
  fs::remove_all(tmp);
}

TEST_CASE("validate refuses a malformed training or expert GEMM measurement with its file and key", "[calibrate][validate][input]") {
  // The H200 directory whose calibration has the gemm_backward and grouped_gemm rows.
  const fs::path source = fs::path(OVERLAP_SOURCE_DIR) / "calibrate/results/nvidia-h200-vm-2";
  const json doc = read(source / "measurements.json");
  const std::string at_bwd = "measurements[" + std::to_string(first_of(doc, "gemm_backward")) + "]";
  const std::size_t grouped = first_of(doc, "grouped_gemm");
  const std::string at_grp = "measurements[" + std::to_string(grouped) + "]";
  const std::vector<Case> cases = {
      {"a layout no GEMM has",
       [&](json& d) { d["measurements"][first_of(d, "gemm_backward")]["config"]["layout"] = "tt"; return at_bwd + ".config.layout"; },
       "\"layout\": \"tt\"", "must be nn, nt or tn"},
      {"a negative row count of an expert",
       [&](json& d) { d["measurements"][grouped]["config"]["rows"][1] = -3; return at_grp + ".config.rows[1]"; }, "",
       "whole number from 0"},
      {"a fractional row count of an expert",
       [&](json& d) { d["measurements"][grouped]["config"]["rows"][0] = 2.5; return at_grp + ".config.rows[0]"; }, "",
       "whole number from 0"},
      {"no experts",
       [&](json& d) { d["measurements"][grouped]["config"]["rows"] = json::array(); return at_grp + ".config.rows"; }, "",
       "must be a list of 1 to"},
      {"rows that are not a list",
       [&](json& d) { d["measurements"][grouped]["config"]["rows"] = 4096; return at_grp + ".config.rows"; }, "",
       "must be a list of 1 to"},
      {"an unknown form",
       [&](json& d) { d["measurements"][grouped]["config"]["form"] = "fused"; return at_grp + ".config.form"; },
       "\"form\": \"fused\"", "must be per_expert or grouped"},
  };
  const fs::path tmp = fs::temp_directory_path() / ("overlap-results-training-" + std::to_string(::getpid()));
  for (const Case& c : cases) {
    SECTION(c.what) { check_refusal(source, tmp, "measurements.json", doc, c); }
  }
  fs::remove_all(tmp);
}

TEST_CASE("validate names the line of a JSON syntax error in a results file", "[calibrate][validate][input]") {
  const fs::path tmp = fs::temp_directory_path() / ("overlap-results-syntax-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::copy(kFixture, tmp, fs::copy_options::recursive);
  std::ofstream(tmp / "measurements.json") << "{\n  \"schema\": \"overlap-calibrate/1\",\n  \"measurements\": [,]\n}\n";
  std::string err;
  CHECK(cli({"validate", tmp.string()}, &err) == overlap::tools::kExitUsage);
  CHECK(err.find((tmp / "measurements.json").string() + ":3: ") != std::string::npos);
  // A scheme result with a misspelt key, in schemes/schemes.json: the same file:line: key form.
  fs::copy_file(fs::path(kFixture) / "measurements.json", tmp / "measurements.json", fs::copy_options::overwrite_existing);
  json runs = read(tmp / "schemes" / "schemes.json");
  runs["runs"][1]["latency_us"]["meidan"] = 1;
  const std::string text = runs.dump(2) + "\n";
  std::ofstream(tmp / "schemes" / "schemes.json") << text;
  CHECK(cli({"validate", tmp.string()}, &err) == overlap::tools::kExitUsage);
  INFO(err);
  CHECK(err.find("schemes.json:" + std::to_string(line_of(text, "\"meidan\"")) + ": runs[1].latency_us.meidan: unknown key") !=
        std::string::npos);
  fs::remove_all(tmp);
}

TEST_CASE("validate refuses a malformed virtual node in schemes.json with its file, line and key", "[calibrate][validate][input]") {
  // The committed H100 sweep: its schemes.json holds the virtual nodes' own calibrations.
  const fs::path results = fs::path(OVERLAP_SOURCE_DIR) / "calibrate/results/nvidia-h100-80gb-hbm3-vm";
  const json fixture = read(results / "schemes" / "schemes.json");
  REQUIRE(fixture["virtual_nodes"].size() >= 2);
  const std::vector<Case> cases = {
      {"a profile outside the schemes folder",
       [](json& d) { d["virtual_nodes"][0]["profile"] = "../escaped.yaml"; return std::string("virtual_nodes[0].profile"); },
       "\"profile\": \"../escaped.yaml\"", "no directory part"},
      {"a profile in a subfolder",
       [](json& d) { d["virtual_nodes"][1]["profile"] = "sub/p.yaml"; return std::string("virtual_nodes[1].profile"); },
       "\"profile\": \"sub/p.yaml\"", "ending in .yaml"},
      {"two nodes writing one profile",
       [](json& d) { d["virtual_nodes"][1]["profile"] = d["virtual_nodes"][0]["profile"]; return std::string("virtual_nodes[1].profile"); },
       "", "is also virtual node 0's profile"},
      {"an unknown link",
       [](json& d) { d["virtual_nodes"][0]["link"] = "nvlink"; return std::string("virtual_nodes[0].link"); },
       "\"link\": \"nvlink\"", "must be d2d or host"},
      {"one rank",
       [](json& d) { d["virtual_nodes"][0]["ranks"] = 1; return std::string("virtual_nodes[0].ranks"); },
       "\"ranks\": 1", "between 2 and"},
      {"a misspelt key",
       [](json& d) { d["virtual_nodes"][0]["rank_smz"] = 32; return std::string("virtual_nodes[0].rank_smz"); },
       "\"rank_smz\"", "unknown key"},
      {"no environment",
       [](json& d) { d["virtual_nodes"][0].erase("environment"); return std::string("virtual_nodes[0].environment"); },
       "", "missing"},
      {"a bad measurement of a node",
       [](json& d) { d["virtual_nodes"][0]["measurements"][2]["benchmark"] = "gemm_typo"; return std::string("virtual_nodes[0].measurements[2].benchmark"); },
       "\"benchmark\": \"gemm_typo\"", "unknown benchmark 'gemm_typo'"},
  };
  const fs::path tmp = fs::temp_directory_path() / ("overlap-results-virtual-nodes-" + std::to_string(::getpid()));
  for (const Case& c : cases) {
    SECTION(c.what) { check_refusal(results, tmp, "schemes/schemes.json", fixture, c); }
  }
  fs::remove_all(tmp);
}

TEST_CASE("schemes.json's virtual nodes read back as written", "[calibrate][input]") {
  const fs::path file = fs::path(OVERLAP_SOURCE_DIR) / "calibrate/results/nvidia-h100-80gb-hbm3-vm/schemes/schemes.json";
  const overlap::calibrate::SchemeRunSet set = overlap::calibrate::load_scheme_runs(file.string());
  REQUIRE(set.virtual_nodes.size() == 3);
  CHECK(set.virtual_nodes[1].profile == "profile_virtual_t4_d2d.yaml");
  CHECK(set.virtual_nodes[1].ranks == 4);
  CHECK(set.virtual_nodes[1].link == "d2d");
  CHECK(set.virtual_nodes[1].rank_sms == 32);
  CHECK(set.virtual_nodes[2].link == "host");
  CHECK(!set.virtual_nodes[1].measurements.empty());
  // The document written from what was read is the file's document (the runner writes the same).
  CHECK(overlap::calibrate::scheme_runs_document(set) == read(file));
}

TEST_CASE("a measurement made in memory reports a missing key as a bug, one read from a file as input", "[calibrate][input]") {
  overlap::calibrate::Measurement m;
  m.benchmark = "gemm";
  m.config = json{{"m", 128}};
  CHECK(m.config_count("m") == 128);
  CHECK(m.config_int("ctas", 7) == 7);
  CHECK(m.config_string("dtype", "bf16") == "bf16");
  CHECK_THROWS_AS(m.config_number("n"), std::runtime_error);
  try {
    (void)m.config_number("n");
  } catch (const overlap::InputError&) {
    FAIL("an in-memory measurement has no file to name");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("gemm config.n") != std::string::npos);
  }
  const std::string text = "{\"benchmark\": \"gemm\",\n \"config\": {\"m\": 128,\n  \"ctas\": 2.5},\n"
                           " \"time_us\": {\"count\": 3, \"median\": 2, \"min\": 1, \"max\": 3}}";
  const overlap::calibrate::Measurement r = overlap::calibrate::measurement_from_json(
      json::parse(text), "m.json", "", std::make_shared<const std::string>(text));
  CHECK(r.time_us.spread == 3.0);  // max / min when the file gives none
  try {
    (void)r.config_int("ctas", 1);
    FAIL("2.5 CTAs should be refused");
  } catch (const overlap::InputError& e) {
    CHECK(e.file() == "m.json");
    CHECK(e.line() == 3);
    CHECK(e.key_path() == "config.ctas");
  }
}
