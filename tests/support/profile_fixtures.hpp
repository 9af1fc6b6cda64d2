#pragma once
// Hardware profiles the tests build: an inline `hardware:` YAML loaded as a scenario loads it, or the
// message it is refused with (nccl_profile_test.cpp, profile_loader_test.cpp), and an H100-like node
// given in code (test_invariants.cpp, test_metrics.cpp).
#include <string>

#include <yaml-cpp/yaml.h>

#include "cost_model/hardware_profile.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/profile_loader.hpp"
#include "cost_model/yaml_reader.hpp"

namespace overlap::test {

// An inline profile as a scenario's `hardware:` value (scenarios/x.yaml; line 1 is its first line),
// its relative paths read against base_dir.
inline HardwareProfile load_inline_profile(const std::string& yaml, const std::string& base_dir = ".") {
  return profile_from_yaml(YamlReader(YAML::Load(yaml), "hardware", "scenarios/x.yaml"), base_dir);
}

// What loading that inline profile is refused with; "no error" when it loads.
inline std::string inline_profile_error(const std::string& yaml) {
  try {
    load_inline_profile(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// An H100-like node of `gpus` GPUs on one NVSwitch: 132 SMs, 989 / 1979 TFLOP/s (bf16 / fp8) at 80 %,
// 3350 GB/s HBM at 90 %, a 2 us launch gap, NVLink at 450 GB/s x nvlink_efficiency.
inline HardwareProfile h100_like_profile(const std::string& name, int gpus, double nvlink_efficiency) {
  HardwareProfile h;
  h.name = name;
  h.gpu.sm_count = 132;
  h.gpu.peak_tflops["bf16"] = 989;
  h.gpu.peak_tflops["fp8"] = 1979;
  h.gpu.gemm_efficiency = 0.8;
  h.gpu.hbm_bandwidth_gbps = 3350;
  h.gpu.hbm_efficiency = 0.9;
  h.launch.host_us = 0;
  h.launch.gap_us = 2.0;
  h.fabric.topology = "nvswitch";
  h.fabric.num_gpus = gpus;
  h.fabric.links["nvlink"] = LinkClass{"nvlink", 450, nvlink_efficiency};
  expand_topology(h.fabric);
  return h;
}

}  // namespace overlap::test
