#pragma once
// The pipeline tests' job: a Llama-3-70B step (80 layers) on the 512-GPU profile, with a
// workload.parallel map appended at line 10 of the file, loaded or refused (tests/sim/test_pipeline_*).
#include <string>

#include <catch2/catch.hpp>

#include "cost_model/input_error.hpp"
#include "sim/scenario.hpp"

namespace overlap::sim::pipeline_fixture {

inline const std::string kHardwareDir = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";

inline const std::string kJobBase =
    "hardware: h100-64node-ib400-rail\n"  // 1
    "workload:\n"                          // 2
    "  kind: transformer\n"                // 3
    "  tp: 8\n"                            // 4
    "  model: llama3-70b\n"                // 5
    "  batch: 1\n"                         // 6
    "  seq: 8192\n"                        // 7
    "  pass: step\n"                       // 8
    "  recompute: selective\n";            // 9

inline Scenario load_job(const std::string& parallel, const std::string& base = kJobBase) {
  ScenarioOptions o;
  o.hardware_dir = kHardwareDir;
  return load_scenario_text(base + "  parallel: " + parallel + "\n", "job.yaml", o);
}

// The loader's error for the job; fails the test when the job loads.
inline InputError job_error(const std::string& parallel, const std::string& base = kJobBase) {
  try {
    (void)load_job(parallel, base);
  } catch (const InputError& e) {
    return e;
  }
  FAIL("loaded: " << parallel);
  return InputError("", 0, "", "");
}

}  // namespace overlap::sim::pipeline_fixture
