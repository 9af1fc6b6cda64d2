#pragma once
// Builds the engine's node (GPUs, fabric graph, calibrated curves, launch overhead) from a hardware
// profile: the only place where cost_model's profile meets the engine's resources.
#include "cost_model/hardware_profile.hpp"
#include "sim/engine.hpp"  // run(), which takes what make_node builds
#include "sim/node_config.hpp"

namespace overlap::sim {

// The first `ranks` GPUs of the profile's fabric. Throws std::invalid_argument if ranks exceeds the
// profile's GPU count.
NodeConfig make_node(const HardwareProfile& profile, int ranks);

}  // namespace overlap::sim
