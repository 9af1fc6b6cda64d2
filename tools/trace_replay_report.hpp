#pragma once
// `trace --replay`'s report: the trace's kernels replayed (calibrate/traces/trace_replay.hpp) at
// their measured durations (the identity: the replayed span must match the measured one) and,
// with what-ifs, again with changed durations; per rank the spans, per stream the busy time.
#include <string>
#include <vector>

#include "calibrate/traces/replay_what_if.hpp"
#include "cost_model/hardware_profile.hpp"
#include "tools/cmd_trace.hpp"

namespace overlap::tools {

struct ReplayReport {
  std::string text;          // the report, as `format` says ("table", "json", or "csv": one row per kernel)
  std::string chrome_trace;  // with want_trace: the replay (what-ifs applied) beside the original
};

// With `hw`: replayed again with each GEMM whose shape the trace gives and each
// collective whose size and group it gives priced by the cost model on `hw` (a collective matched
// across ranks: its transfer), every other kernel at its measured duration; the span's error against
// the measured one is the model's. What-ifs apply to the measured durations, or with `hw` to the
// model's (a link what-if needs `hw`: the trace's machine, whose link bandwidth it changes).
ReplayReport replay_report(const TraceReports& loaded, const std::vector<traces::WhatIf>& what_ifs, const std::string& format,
                           bool want_trace, const HardwareProfile* hw = nullptr);

}  // namespace overlap::tools
