#pragma once
// `overlap-sim sweep [SCENARIO]`: the scenario's `sweep:` grid (and --sweep axes) for every scheme,
// as CSV or JSON, on every core, across MPI ranks under mpirun, with a progress bar, checkpoints,
// --resume and a heatmap / line chart (sim/sweep.hpp, sim/sweep_mpi.hpp, tools/plot_sweep.py).
#include <ostream>
#include <string>
#include <vector>

#include "tools/command.hpp"
#include "tools/scenario_flags.hpp"

namespace overlap::tools {

struct SweepOptions {
  std::string scenario;              // "" = the default scenario
  std::vector<std::string> sweeps;   // --sweep key=v1,v2,...
  std::vector<std::string> sets;     // --set key=value
  ScenarioFlags flags;               // --hardware, --tp, --tokens
  std::vector<std::string> no_axes;  // --no-axis KEY: drop the scenario's axis over KEY
  bool only_axes = false;            // --only-axes: none of the scenario's axes, only --sweep's
  int jobs = 0;                      // threads per process; 0 = every core (shared among local ranks)
  std::string format = "csv";        // csv | json
  std::string output;                // "" = stdout
  bool resume = false;               // skip points already in `output` (and its checkpoints)
  bool progress = false;             // progress bar even when stderr is not a terminal
  bool progress_if_tty = true;       // progress bar when stderr is a terminal
  std::string plot;                  // PNG: heatmap (2 swept keys) or line chart (1)
  bool verify_bytes = false;         // the optional steps-fidelity byte self-check per scheme
};

// Registers `sweep` and its flags on `app` (tools/command.hpp).
Command add_sweep_command(CLI::App& app);

// Throws UsageError / InputError (exit 2). Under mpirun, ranks other than 0 throw QuietExit instead
// of repeating rank 0's message.
void cmd_sweep(const SweepOptions& options, std::ostream& out, std::ostream& err);

}  // namespace overlap::tools
