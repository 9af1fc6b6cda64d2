// Guessed profile values as data (a profile's `placeholders:` section, cost_model/profile_loader.cpp)
// and the check that names one when its plausible range changes a run's ranking
// (sim/placeholder_sensitivity.hpp).
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cost_model/input_error.hpp"
#include "cost_model/profile_loader.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"

using namespace overlap;
using namespace overlap::test;  // cli, CliResult, TempDir, read_text, write_text

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

nlohmann::json run_json(std::vector<std::string> args) {
  args.insert(args.begin(), "run");
  args.insert(args.end(), {"--format", "json"});
  const CliResult r = cli(args);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  return nlohmann::json::parse(r.out);
}

// The default H100 profile's text without its own `placeholders:` section (from the comment that
// opens it), then `section` appended: a profile of our own with only the placeholders given.
std::string h100_text() {
  const std::string text = read_text(default_hardware_dir() + "/h100-sxm-8x-nvswitch.yaml");
  return text.substr(0, text.find("# Guessed values"));
}
std::string h100_with(const TempDir& dir, const std::string& section) {
  return dir.write("h100-guess.yaml", h100_text() + section);
}

}  // namespace

TEST_CASE("placeholders: B200's SM-copy rate per CTA decides whether flux beats no_overlap", "[cli][placeholders]") {
  // B200's transports.sm_copy.cta_gbps is H100's 25 GB/s; at 75 (the top of its range) flux's RS
  // sends on 6 SMs move three times as fast and flux passes no_overlap.
  const CliResult text = cli({"run", "--hardware", "b200-hgx-8x-nvswitch"});
  REQUIRE(text.rc == 0);
  CHECK(contains(text.out, "placeholder decides the ranking: transports.sm_copy.cta_gbps = 25 is a guess (plausible 25 .. 75"));
  CHECK(contains(text.out, "at 75: flux 0.838x -> 1.220x (passes no_overlap)"));

  const nlohmann::json j = run_json({"--hardware", "b200-hgx-8x-nvswitch"});
  const nlohmann::json& s = j.at("placeholder_sensitivity");
  CHECK(s.at("checked").size() == 8);
  const nlohmann::json* cta = nullptr;
  for (const auto& d : s.at("deciding"))
    if (d.at("key") == "transports.sm_copy.cta_gbps") cta = &d;
  REQUIRE(cta != nullptr);
  CHECK(cta->at("low") == 25.0);
  CHECK(cta->at("high") == 75.0);
  CHECK_FALSE(cta->at("source").get<std::string>().empty());
  REQUIRE(cta->at("changes").size() == 1);  // at 25 it is the run itself
  const nlohmann::json& at75 = cta->at("changes")[0];
  CHECK(at75.at("value") == 75.0);
  REQUIRE(at75.at("crossings").size() == 1);
  const nlohmann::json& flux = at75.at("crossings")[0];
  CHECK(flux.at("scheme") == "flux");
  CHECK(flux.at("speedup_before").get<double>() < 1);
  CHECK(flux.at("speedup_after").get<double>() > 1);

  // The re-run is the run a user gets by setting the value: the same speedup exactly (both are the
  // same simulation of the same graph on the same profile).
  const nlohmann::json set = run_json({"--hardware", "b200-hgx-8x-nvswitch", "--set", "hardware.transports.sm_copy.cta_gbps=75"});
  for (const auto& r : set.at("results"))
    if (r.at("scheme") == "flux") CHECK(r.at("speedup_vs_no_overlap").get<double>() == flux.at("speedup_after").get<double>());
  // A value the user set is theirs: not re-run, and said so in the JSON only.
  const nlohmann::json& s2 = set.at("placeholder_sensitivity");
  CHECK(s2.at("checked").size() == 7);
  REQUIRE(s2.at("unchecked").size() == 1);
  CHECK(s2.at("unchecked")[0] == "transports.sm_copy.cta_gbps: set by --set");
}

TEST_CASE("placeholders: --placeholder-check never skips the check and says which values are guesses",
          "[cli][placeholders]") {
  // The B200 run above, whose SM-copy guess decides flux's place: skipped, the table is the same and
  // the line names every guess instead of the deciding one.
  const CliResult checked = cli({"run", "--hardware", "b200-hgx-8x-nvswitch"});
  const CliResult never = cli({"run", "--hardware", "b200-hgx-8x-nvswitch", "--placeholder-check", "never"});
  REQUIRE(checked.rc == 0);
  REQUIRE(never.rc == 0);
  CHECK_FALSE(contains(never.out, "placeholder decides"));
  CHECK(contains(never.out, "placeholders: not checked (--placeholder-check never): "));
  CHECK(contains(never.out, "--placeholder-check always says whether"));
  CHECK(never.out.substr(0, never.out.find("\nplaceholder")) == checked.out.substr(0, checked.out.find("\nplaceholder")));
  const nlohmann::json j = run_json({"--hardware", "b200-hgx-8x-nvswitch", "--placeholder-check", "never"});
  CHECK(j.at("placeholder_sensitivity").at("skipped") == "--placeholder-check never");
  CHECK(j.at("placeholder_sensitivity").at("guesses").size() == 8);
  // `always` on a run under the default bound is the default's answer; an unknown mode is a usage error.
  const CliResult always = cli({"run", "--hardware", "b200-hgx-8x-nvswitch", "--placeholder-check", "always"});
  CHECK(always.out == checked.out);
  CHECK(cli({"run", "--placeholder-check", "sometimes"}).rc == 2);
}

TEST_CASE("placeholders: a range that cannot change the ranking adds nothing to the output", "[cli][placeholders]") {
  // FlashOverlap and no_overlap move their bytes with NCCL collectives, never an SM copy kernel, so
  // the SM copy's rate per CTA cannot change their latencies, whatever its range.
  TempDir dir("placeholders");
  const std::string guess = h100_with(dir, "placeholders:\n"
                                           "  transports.sm_copy.cta_gbps:\n"
                                           "    range: [5, 500]\n"
                                           "    source: a test's range, wide on purpose\n");
  const std::string none = dir.write("h100-no-ranges.yaml", h100_text());
  const std::string schemes = "  - no_overlap\n  - flashoverlap\n";
  const std::string scenario = gemm_collective_scenario("reduce_scatter") + schemes;
  const auto with_profile = [&](const std::string& file, const std::string& profile) {
    std::string s = scenario;
    s.replace(s.find("h100-sxm-8x-nvswitch"), std::string("h100-sxm-8x-nvswitch").size(), profile);
    return dir.write(file, s);
  };
  const std::string plain = with_profile("plain.yaml", none);
  const std::string guessed = with_profile("guessed.yaml", guess);

  const CliResult a = cli({"run", plain});
  const CliResult b = cli({"run", guessed});
  REQUIRE(a.rc == 0);
  REQUIRE(b.rc == 0);
  CHECK_FALSE(contains(b.out, "placeholder decides"));
  // One line says the guess was checked and decides nothing.
  CHECK(contains(b.out, "placeholders: no guess decides the ranking (transports.sm_copy.cta_gbps is checked at both ends"));
  // The same table but for the scenario's name in its header and the lines after `best:` (the ranged
  // profile's line above; the unranged one's note counting its marked comments).
  const auto body = [](const std::string& out) {
    const std::size_t from = out.find("\nworkload:");
    return out.substr(from, std::min(out.find("\nplaceholders: "), out.find("\nnot applicable")) - from);
  };
  CHECK(body(a.out) == body(b.out));
  CHECK(body(a.out).size() > 500);
  const nlohmann::json j = run_json({guessed});
  CHECK(j.at("placeholder_sensitivity").at("checked") == nlohmann::json::array({"transports.sm_copy.cta_gbps"}));
  CHECK(j.at("placeholder_sensitivity").at("deciding").empty());
  // A profile without placeholders has no such key.
  CHECK_FALSE(run_json({plain}).contains("placeholder_sensitivity"));
}

TEST_CASE("placeholders: a malformed range is refused with file, line and key", "[cli][placeholders][errors]") {
  TempDir dir("placeholders-bad");
  struct Case {
    std::string section;
    // Of the refused node, counted from the section's first line (1); a key whose value is a block map
    // is located at the map's first line, as every YamlReader refusal is.
    int line;
    std::string key;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"placeholders:\n  gpu.gemm_efficiency:\n    range: [0.9, 0.6]\n    source: s\n", 3,
       "placeholders.gpu.gemm_efficiency.range", "low must be below high"},
      {"placeholders:\n  gpu.gemm_efficiency:\n    range: [0.6, 0.7, 0.8]\n    source: s\n", 3,
       "placeholders.gpu.gemm_efficiency.range", "must be [low, high] (got 3 values)"},
      {"placeholders:\n  gpu.gemm_efficiency:\n    range: [0.6, 1.5]\n    source: s\n", 3,
       "placeholders.gpu.gemm_efficiency.range.1", "1.5 is not a value gpu.gemm_efficiency accepts (a fraction in (0, 1])"},
      {"placeholders:\n  gpu.no_such_key:\n    range: [1, 2]\n    source: s\n", 3, "placeholders.gpu.no_such_key",
       "not a numeric profile key"},
      {"placeholders:\n  gpu.gemm_efficiency:\n    range: [0.6, 0.9]\n", 3, "placeholders.gpu.gemm_efficiency.source",
       "missing"},
      {"placeholders:\n  gpu.gemm_tile_us:\n    range: [1, 2]\n    source: s\n", 3, "placeholders.gpu.gemm_tile_us",
       "this profile gives no value for gpu.gemm_tile_us"},
      {"placeholders:\n  gpu.gemm_efficiency:\n    range: [0.6, 0.9]\n    source: s\n    sorce: t\n", 5,
       "placeholders.gpu.gemm_efficiency.sorce", "unknown"},
  };
  const int base_lines = [] {
    const std::string t = h100_text();
    return static_cast<int>(std::count(t.begin(), t.end(), '\n'));
  }();
  for (const Case& c : cases) {
    INFO(c.section);
    const std::string path = h100_with(dir, c.section);
    const CliResult r = cli({"run", "--hardware", path, "--scheme", "no_overlap"});
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK(contains(r.err, path + ":" + std::to_string(base_lines + c.line) + ":"));
    CHECK(contains(r.err, c.key));
    CHECK(contains(r.err, c.says));
  }
}

TEST_CASE("placeholders: every shipped range holds its profile's value and says where it comes from",
          "[placeholders][profile]") {
  int ranges = 0;
  for (const std::string& name : builtin_profile_names()) {
    INFO(name);
    const HardwareProfile p = load_profile(name);
    for (const PlaceholderRange& ph : p.placeholders) {
      INFO(ph.key);
      ++ranges;
      CHECK(ph.low <= ph.value);
      CHECK(ph.value <= ph.high);
      CHECK(ph.source.size() > 20);
    }
  }
  CHECK(ranges >= 5);
  // `profile show` lists them, with the value, the range and the source.
  const CliResult show = cli({"profile", "show", "b200-hgx-8x-nvswitch"});
  REQUIRE(show.rc == 0);
  CHECK(contains(show.out, "transports.sm_copy.cta_gbps"));
  CHECK(contains(show.out, "25, plausible 25 .. 75"));
}
