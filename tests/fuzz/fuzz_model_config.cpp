// libFuzzer target: the model config reader (sim/model_config.hpp read_model_config) on arbitrary
// config.json text, read from a scratch file as `--model FILE` reads it; a config it accepts is then
// loaded into a transformer scenario (sim/scenario.hpp), where its widths, heads, layers and experts
// meet the workload's ranges and work budgets. Any exception but a refusal (InputError, RangeError,
// the engine's ResourceError) aborts; so do sanitizer reports and, under -timeout, slow inputs.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "fuzz_input.hpp"
#include "sim/engine.hpp"
#include "sim/model_config.hpp"
#include "sim/scenario.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return 0;  // the reader's own size cap is read_input_file's business
  static const std::string path = "/tmp/overlap-fuzz-model-" + std::to_string(::getpid()) + ".json";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  overlap::fuzz::expect_refusal_or_success([&] {
    try {
      (void)overlap::sim::read_model_config(path);
      // Two layers, TP 8 on the 8-GPU H100 profile: the dense and the MoE transformer both read it.
      const std::string scenario = "hardware: h100-sxm-8x-nvswitch\nworkload:\n  kind: transformer\n  tp: 8\n  model: " +
                                   path + "\n  layers: 2\n  batch: 1\n  seq: 4096\n  dtype: bf16\nschemes: [no_overlap]\n";
      const overlap::sim::Scenario sc = overlap::sim::load_scenario_text(scenario, "fuzz.yaml");
      if (overlap::sim::work_over_budget(sc.workload)) overlap::fuzz::internal_error("a loaded workload is over budget");
    } catch (const overlap::sim::ResourceError&) {
    }
  });
  return 0;
}
