// libFuzzer target: the scenario loader (sim/scenario.hpp load_scenario_text) on arbitrary YAML text
// plus optional --set lines (fuzz_input.hpp). Any exception but a refusal (InputError, RangeError,
// the engine's ResourceError) aborts; so do sanitizer reports and, under -timeout, slow inputs.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.hpp"
#include "sim/engine.hpp"
#include "sim/scenario.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return 0;  // the loaders' own size cap is the CLI's business
  const overlap::fuzz::SplitInput in = overlap::fuzz::split_input(reinterpret_cast<const char*>(data), size);
  overlap::sim::ScenarioOptions options;
  options.sets = in.sets;
  overlap::fuzz::expect_refusal_or_success([&] {
    try {
      (void)overlap::sim::load_scenario_text(in.text, "fuzz.yaml", options);
    } catch (const overlap::sim::ResourceError&) {
    }
  });
  return 0;
}
