// libFuzzer target: the scenario loader (sim/scenario.hpp load_scenario_text) on arbitrary YAML text
// plus optional --set lines (fuzz_input.hpp). Any exception but a refusal (InputError, RangeError,
// the engine's ResourceError) aborts; so do sanitizer reports and, under -timeout, slow inputs.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

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
      const overlap::sim::Scenario sc = overlap::sim::load_scenario_text(in.text, "fuzz.yaml", options);
      // What a loaded scenario hands the JSON writer must be valid UTF-8 (a type_error.316 would be
      // an internal error), and a loaded workload is inside the work budgets.
      nlohmann::json names = {{"name", sc.name}, {"description", sc.description}, {"hardware", sc.hardware_name}};
      for (const auto& s : sc.schemes) names["schemes"].push_back({{"name", s.name}, {"params", s.params}});
      (void)names.dump();
      if (overlap::sim::work_over_budget(sc.workload)) overlap::fuzz::internal_error("a loaded workload is over budget");
    } catch (const overlap::sim::ResourceError&) {
    }
  });
  return 0;
}
