#pragma once
// `overlap-sim plan`: the configuration search (sim/plan_search.hpp) for one model, GPU count, global
// batch, sequence length and profile; prints the best configurations and why the others lost
// (sim/plan_report.hpp), as a table or JSON (docs/guide/plan.md).
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "tools/command.hpp"

namespace overlap::tools {

struct PlanCommandOptions {
  std::string scenario;             // a transformer scenario as the base ("" = --model and --hardware)
  std::string model;                // --model NAME|FILE (workload.model, as run takes it)
  std::string hardware;             // --hardware NAME|FILE
  std::vector<std::string> sets;    // --set on the base
  std::int64_t gpus = 0;            // --gpus (required)
  std::int64_t global_batch = 0;    // --global-batch: sequences a step
  std::int64_t global_batch_tokens = 0;  // --global-batch-tokens: tokens a step (a multiple of seq)
  std::int64_t seq = 0;             // --seq (default: the base's)
  // The axes, comma-separated (empty = the search's defaults, docs/guide/plan.md).
  std::string tp, cp, pp, vpp, mbs, fsdp, recompute, schedule, cp_algorithm, schemes;
  int top = 5;                      // --top: configurations printed
  int jobs = 0;                     // -j: threads (0 = every core)
  std::string format = "table";     // table | json
  std::string output;               // -o: write the report to FILE (atomically)
};

// Registers `plan` and its flags on `app` (tools/command.hpp).
Command add_plan_command(CLI::App& app);

// Bad flags, a GPU count the search cannot factor, a batch it cannot divide, a model or profile that
// does not load, or a search where nothing fits: UsageError / InputError naming the flag (exit 2).
void cmd_plan(const PlanCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace overlap::tools
