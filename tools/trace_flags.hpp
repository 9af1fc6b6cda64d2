#pragma once
// The values of run's trace flags (--trace-level, --trace-ranks, --trace-window) as the Chrome trace
// writer (sim/chrome_trace.hpp) takes them, and `trace`'s kernel patterns. Each throws std::invalid_argument with a message saying
// what is wrong; the caller adds the flag's name.
#include <string>
#include <utility>
#include <vector>

#include "calibrate/traces/kernel_kind.hpp"
#include "cost_model/units.hpp"
#include "sim/chrome_trace.hpp"

namespace overlap::tools {

sim::TraceLevel parse_trace_level(const std::string& text);  // "kernel" | "cta"
std::vector<int> parse_trace_ranks(const std::string& text);  // "0,3-5" -> {0,3,4,5}
// "START_US:END_US" (either side may be empty: from 0 / to the end) -> {start_ps, end_ps or -1}.
std::pair<Ps, Ps> parse_trace_window(const std::string& text);

// `trace`'s --comm-kernel / --compute-kernel: each an ECMAScript regular expression searched in a
// kernel's signature (calibrate/traces/kernel_kind.hpp). Throws std::invalid_argument naming the
// pattern that is not one.
traces::KernelClassifier kernel_classifier(const std::vector<std::string>& comm_patterns,
                                           const std::vector<std::string>& compute_patterns);

}  // namespace overlap::tools
