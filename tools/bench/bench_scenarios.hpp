#pragma once
// The shipped scenarios and profiles as the benchmarks load them: from the source tree the build
// names (OVERLAP_SOURCE_DIR, set by tools/CMakeLists.txt's overlap_add_bench), the sweep block read
// for its shape only, as `run` reads it.
#include <string>
#include <utility>
#include <vector>

#include "sim/scenario.hpp"

#ifndef OVERLAP_SOURCE_DIR
#define OVERLAP_SOURCE_DIR "."
#endif

namespace overlap::bench {

inline const std::string kHardwareDir = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";

// scenarios/`file` with `sets` applied.
inline sim::Scenario load_shipped_scenario(const std::string& file, std::vector<std::string> sets = {}) {
  sim::ScenarioOptions o;
  o.hardware_dir = kHardwareDir;
  o.sets = std::move(sets);
  o.validate_sweep = false;
  return sim::load_scenario_file(std::string(OVERLAP_SOURCE_DIR) + "/scenarios/" + file, o);
}

}  // namespace overlap::bench
