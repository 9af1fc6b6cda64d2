#pragma once
// Chrome trace (JSON `traceEvents`, loads in Perfetto / chrome://tracing) of one run: a process per
// rank with one track per stream, one per copy engine and, when CTAs were recorded, one per SM; a
// "fabric" process with one track per link. Timestamps in microseconds with picosecond decimals.
#include <nlohmann/json.hpp>

#include "sim/engine.hpp"

namespace overlap::sim {

nlohmann::json chrome_trace(const TaskGraph& graph, const Timeline& timeline, const NodeConfig& node);

}  // namespace overlap::sim
