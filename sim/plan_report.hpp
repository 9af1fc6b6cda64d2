#pragma once
// The report of `overlap-sim plan` (docs/guide/plan.md): the best configurations with their figures, and
// why the others lost (counts by reason, the nearest losers of each with the figure they lost on), as a
// table and as JSON. Ties in step time are named ("= #1").
#include <string>

#include <nlohmann/json.hpp>

#include "sim/plan_search.hpp"

namespace overlap::sim {

// How many losers of each kind the report names beside their count.
inline constexpr int kPlanNearestLosers = 3;

// {"query", "counts", "best": [...top], "losers": {"slower", "out_of_memory", "invalid", "failed"},
// "definitions"}; times in microseconds, memory in bytes.
nlohmann::json plan_report_json(const PlanResult& result, int top);
std::string format_plan_report(const PlanResult& result, int top);

}  // namespace overlap::sim
