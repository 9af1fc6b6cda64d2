#pragma once
// A resolved hardware profile written as a profile file that loads back to the same profile (every
// default written out; the fabric graph left to the topology except `explicit`): what
// `profile show --format yaml` prints and `profile fit` writes under its own header. The calibration
// writes its profile from measurements instead (calibrate/core/profile_writer.hpp: only what it
// measured, each key with the benchmark that set it).
#include <string>

#include "cost_model/hardware_profile.hpp"

namespace overlap {

std::string profile_yaml(const HardwareProfile& profile);

}  // namespace overlap
