#pragma once
// `overlap-sim trace FILE... [--format table|json|csv] [-o FILE] [--step-prefix TEXT]`
//
// Reads profiles of a real multi-GPU job, one file per rank: PyTorch profiler (Kineto) JSON traces,
// plain or gzip, or Nsight Systems SQLite exports (calibrate/traces/). Prints per rank and overall:
// time in compute kernels, in communication kernels (NCCL's and other libraries'), exposed
// communication (communication during which no compute kernel runs on that GPU:
// calibrate/traces/trace_analysis.hpp) and the overlap share; the same per step when the trace marks
// steps; the GEMM kernels with their shapes (from the launching CPU op's Input Dims) and the
// communication kernels with collective, message size and group size. A kernel whose shape or size the trace does not give is counted as unknown.
//
// Ranks: from each Kineto trace's distributedInfo. Files of one run only: a world_size that differs
// between files, a rank given twice, a rank outside 0..world_size-1, or some files with a rank and
// some without are errors (exit 2). Ranks missing from 0..world_size-1 are a warning (profiling a
// few ranks of a large job is common); the overall figures then cover the ranks given. Files with no
// rank (every Nsight Systems export) are numbered in the order given; an export holding several
// processes gives one rank per process, in the order of the GPU each used first.
//
// Events a reader cannot read as written (a kernel with a negative, missing or non-numeric dur, a
// ts out of range, an nsys row whose start is text or NULL or that ends before it starts) are
// left out and counted: a "Skipped events" section (table), "skipped_events" per rank (JSON), and
// a warning. `--strict` refuses the file at the first such event instead (exit 2).
//
// `--kernels` prints every kernel group instead (name, class, shape or message, count, total, mean,
// min and max time) as table, JSON or CSV.
//
// Kernels are recognised by family on their own name (calibrate/traces/kernel_kind.hpp); unknown
// ones are listed by time. `--comm-kernel REGEX` / `--compute-kernel REGEX` (repeatable) name a
// user's own kernels communication or compute before the built-in families. With several ranks,
// each collective kernel is split into waiting for its last peer and the transfer after it
// (calibrate/traces/collective_wait.hpp), and `--hardware` compares only the transfer with the model.
//
// `--replay` replays the kernels' task graph (calibrate/traces/replay_graph.hpp, trace_replay.hpp) and
// prints measured vs replayed span per rank and busy time per stream; `--what-if KEY=VALUE`
// (repeatable; calibrate/traces/replay_what_if.hpp) replays again with changed kernel speeds, and
// `--replay-trace FILE` writes the replay beside the original as a Perfetto trace (atomically).
// --what-if or --replay-trace without --replay, or a bad key or factor, is refused (exit 2).
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "calibrate/traces/collective_wait.hpp"
#include "calibrate/traces/trace_analysis.hpp"
#include "tools/command.hpp"

namespace overlap::tools {

struct TraceOptions {
  std::vector<std::string> files;
  std::string format = "table";
  std::string output;
  std::string step_prefix = "ProfilerStep#";
  std::string hardware;  // empty: no predictions
  bool kernels = false;  // --kernels: every kernel group instead of the overlap report
  std::vector<std::string> comm_kernels, compute_kernels;  // --comm-kernel / --compute-kernel REGEX
  bool strict = false;  // --strict: refuse a trace with an event the readers cannot read as written
  bool replay = false;  // --replay: replay the kernels' task graph (calibrate/traces/replay_graph.hpp)
  std::vector<std::string> what_ifs;  // --what-if KEY=VALUE (calibrate/traces/replay_what_if.hpp)
  std::string replay_trace;           // --replay-trace FILE: the replay as a Perfetto trace
};

// The files read and analysed, one report per rank (an Nsight Systems export of several processes
// gives one per process), sorted by rank, with the checks above (InputError for files of different
// runs, a warning on `err` for missing ranks), and the collectives split across the ranks.
struct TraceReports {
  std::vector<traces::RankReport> ranks;
  std::optional<int> world_size;
  traces::CollectiveSplit split;
  // With keep_traces: each rank's trace as read, index for index with `ranks` (for the replay).
  std::vector<traces::RankTrace> traces;
};
// Events a reader skipped (RankReport::skipped) are counted in each report and, unless `strict`
// (which refuses the file instead), summed in a warning on `err`.
TraceReports load_trace_reports(const std::vector<std::string>& files, const std::string& step_prefix, std::ostream& err,
                                const traces::KernelClassifier& kernels = {}, bool strict = false,
                                bool keep_traces = false);

// Registers `trace` and its flags on `app` (tools/command.hpp).
Command add_trace_command(CLI::App& app);

// Bad or mismatched files throw InputError (exit 2).
void cmd_trace(const TraceOptions& options, std::ostream& out, std::ostream& err);

}  // namespace overlap::tools
