#pragma once
// `overlap-sim tune`: FlashOverlap's wave-group partition for one GEMM (operator level: --gemm,
// --primitive, --ranks, --hardware), or every scheme's knobs for a scenario (scheme level: SCENARIO).
// On a training step the scheme level also tunes the backward's knobs (column_backward) and, with data
// parallelism, the workload keys parallel.bucket_mb (DDP / ZeRO-1/2) or parallel.prefetch (ZeRO-3)
// with every scheme's settings (sim/tune_schemes.hpp workload_knob_grid; docs/guide/tune.md).
// See sim/tune_wave_groups.hpp and sim/tune_schemes.hpp.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tools/command.hpp"
#include "tools/scenario_flags.hpp"

namespace overlap::tools {

struct TuneOptions {
  std::string scenario;            // scheme level when given
  std::string hardware;            // operator level: profile name or path
  std::string gemm;                // "MxNxK" (per-rank GEMM, as FlashOverlap's tables give it)
  std::string dtype = "bf16";
  std::string primitive;           // all_reduce | reduce_scatter | all_to_all
  int ranks = 0;
  std::string search = "simulate"; // flashoverlap | optimal | exhaustive | simulate
  std::string format = "table";    // table | json
  std::string output;              // "" = stdout
  std::string export_flashoverlap; // FlashOverlap's config JSON (FILE or DIR/)
  // How the user named it, for messages: `--export flashoverlap` or the older `--export-flashoverlap`.
  std::string export_flashoverlap_flag = "--export flashoverlap";
  // --export FORMAT FILE, the one export flag of every command: te-userbuffers (scheme level) =
  // TransformerEngine's ub_cfgs YAML from the best te_userbuffers configuration; flashoverlap
  // (operator level) = FlashOverlap's config JSON, read into export_flashoverlap by cmd_tune
  // (tools/export_production.hpp). Empty = none.
  std::vector<std::string> export_spec;
  int swizzle = 1;                 // tile order of the exported hint
  std::optional<int> algo;         // FlashOverlap's GEMM instance index (AlgoDict), if known
  int budget = 40;                 // simulate: engine runs at most
  bool sm_margin = false;          // operator level: the engine runs FlashOverlap with sm_margin
  int top = 10;                    // candidates listed
  int jobs = 0;                    // scheme level: threads (0 = every core)
  std::vector<std::string> sets;   // --set
  ScenarioFlags flags;             // scheme level: --tp, --tokens (and --hardware, given a SCENARIO)
};

// Registers `tune` and its flags on `app` (tools/command.hpp), --export-flashoverlap among them as the
// older spelling of --export flashoverlap: given, it says so on `err` before the tune runs.
Command add_tune_command(CLI::App& app);

// Throws UsageError / InputError (exit 2); files are written atomically after everything is computed.
// Each file written is confirmed on `err` ("wrote FILE").
void cmd_tune(const TuneOptions& options, std::ostream& out, std::ostream& err);

}  // namespace overlap::tools
