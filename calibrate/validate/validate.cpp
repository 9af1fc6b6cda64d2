#include "calibrate/validate/groups.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "cost_model/input_error.hpp"
#include "cost_model/profile_loader.hpp"
#include "calibrate/core/statistics.hpp"

namespace overlap::calibrate {

namespace fs = std::filesystem;
using nlohmann::json;

ValidationReport validate_dir(const std::string& dir) {
  ValidationReport rep;
  rep.dir = dir;
  // schemes/ must be a folder: as a file, "schemes/schemes.json" reads as missing (ENOTDIR) and the
  // scheme runs would be skipped without a word.
  if (const fs::path schemes = fs::path(dir) / "schemes"; fs::exists(schemes) && !fs::is_directory(schemes))
    throw InputError(schemes.string(), 0, "", "must be a folder (schemes/schemes.json and the runs' files), not a file");
  const fs::path measurements = fs::path(dir) / "measurements.json";
  if (fs::exists(measurements)) {
    const MeasurementSet set = load_measurement_dir(dir);
    rep.fixture = set.fixture;
    rep.profile_file = (fs::path(dir) / "profile.yaml").string();
    if (!fs::exists(rep.profile_file)) throw InputError(rep.profile_file, 0, "", "missing: run overlap-calibrate-profile DIR");
    const HardwareProfile p = load_profile_file(rep.profile_file);
    gemm_groups(set, p, rep);
    transfer_groups(set, p, rep);
  } else if (!fs::exists(fs::path(dir) / "schemes" / "schemes.json")) {
    throw InputError(dir, 0, "", "neither measurements.json nor schemes/schemes.json: not a results directory");
  }
  scheme_groups(dir, rep);
  std::vector<double> all;
  for (auto& g : rep.groups) {
    finish(g);
    append_scored_errors(g.rows, all);
  }
  set_error_figures(rep, all);
  judge(rep, fs::path(dir) / "validation.json");
  return rep;
}

}  // namespace overlap::calibrate
