// libFuzzer target: a calibration results directory as `overlap-sim validate DIR` and
// `overlap-calibrate-profile DIR` read it. The input is DIR/measurements.json's text, optionally
// followed by a line "#--schemes" and DIR/schemes/schemes.json's text; DIR's environment.json and
// profile.yaml are the H100 fixture's (tests/data/calibrate/fixture-h100).
// Properties checked beyond "no crash, no sanitizer report, only refusals":
//   - validate exits 0 or 2 (1 is an internal error), and what it prints on 0 has no NaN or inf;
//   - a profile the writer produces from measurements it accepted loads (write_profile_yaml never
//     writes what the loader refuses).
#include <unistd.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "calibrate/core/measurement.hpp"
#include "calibrate/core/profile_writer.hpp"
#include "cost_model/profile_loader.hpp"
#include "fuzz_input.hpp"
#include "tools/cli.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    const fs::path d = fs::temp_directory_path() / ("overlap-fuzz-results-" + std::to_string(::getpid()));
    fs::create_directories(d / "schemes");
    const fs::path fixture = fs::path(OVERLAP_SOURCE_DIR) / "tests/data/calibrate/fixture-h100";
    fs::copy_file(fixture / "environment.json", d / "environment.json", fs::copy_options::overwrite_existing);
    fs::copy_file(fixture / "profile.yaml", d / "profile.yaml", fs::copy_options::overwrite_existing);
    fs::copy_file(fixture / "schemes/profile_virtual.yaml", d / "schemes/profile_virtual.yaml",
                  fs::copy_options::overwrite_existing);
    // libFuzzer's -fork runs many short processes: each removes its scratch directory at exit.
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(fs::temp_directory_path() / ("overlap-fuzz-results-" + std::to_string(::getpid())), ec);
    });
    return d;
  }();
  return dir;
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

[[noreturn]] void property_failed(const std::string& what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_results_dir: %s\n%s\n", what.c_str(), detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 128 * 1024) return 0;
  const std::string all(reinterpret_cast<const char*>(data), size);
  const std::string marker = "\n#--schemes\n";
  const std::size_t at = all.find(marker);
  const fs::path& dir = scratch_dir();
  write(dir / "measurements.json", all.substr(0, at));
  std::error_code ec;
  if (at == std::string::npos) fs::remove(dir / "schemes/schemes.json", ec);
  else write(dir / "schemes/schemes.json", all.substr(at + marker.size()));

  // validate, as the command line runs it.
  const std::vector<std::string> args = {"overlap-sim", "validate", dir.string(), "--format", "json"};
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int rc = overlap::tools::run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  if (rc != 0 && rc != overlap::tools::kExitUsage) property_failed("validate exited " + std::to_string(rc), err.str());
  if (rc == 0) {
    // A non-finite figure shows as a word of its own; inside a name (a fuzzed "copy_enginf.d2h"
    // echoed in a skip note) the letters are the input's, not a number.
    const std::string o = out.str();
    const auto word_char = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
    for (const std::string bad : {"nan", "inf", "NaN", "Infinity"})
      for (std::size_t at = o.find(bad); at != std::string::npos; at = o.find(bad, at + 1)) {
        const bool alone = (at == 0 || !word_char(o[at - 1])) &&
                           (at + bad.size() >= o.size() || !word_char(o[at + bad.size()]));
        if (alone) property_failed("validate printed " + bad, o);
      }
  }

  // overlap-calibrate-profile: the writer refuses with InputError or runtime_error (exit 2 there);
  // what it writes must load.
  overlap::calibrate::MeasurementSet set;
  try {
    set = overlap::calibrate::load_measurement_dir(dir.string());
  } catch (const overlap::InputError&) {
    return 0;
  }
  std::string yaml;
  try {
    yaml = overlap::calibrate::write_profile_yaml(set);
  } catch (const overlap::InputError&) {
    return 0;
  } catch (const std::runtime_error&) {
    return 0;
  }
  const fs::path written = dir / "written_profile.yaml";
  write(written, yaml);
  try {
    (void)overlap::load_profile_file(written.string());
  } catch (const std::exception& e) {
    property_failed(std::string("the profile written from accepted measurements does not load: ") + e.what(), yaml);
  }
  return 0;
}
