#pragma once
// Atomic file output for the calibration programs (temporary file beside the target, then rename),
// the same contract as sim/atomic_file.hpp; a copy here because the device build of calibrate/ has
// none of the simulator's libraries (fmt) to link sim/ against.
#include <string>

namespace overlap::calibrate {

// Creates the parent directories; throws std::runtime_error naming the path on failure.
void write_output_file(const std::string& path, const std::string& content);

}  // namespace overlap::calibrate
