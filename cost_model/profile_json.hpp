#pragma once
// The resolved profile as JSON: every field with its unit-suffixed name, defaults filled in, the
// fabric expanded into nodes and directed edges (what `overlap-sim profile show NAME --format json`
// prints and what result files embed).
#include <nlohmann/json.hpp>

#include "cost_model/hardware_profile.hpp"

namespace overlap {

nlohmann::json profile_to_json(const HardwareProfile& profile);

}  // namespace overlap
