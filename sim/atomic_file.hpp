#pragma once
// Outputs are written atomically: to a temporary file beside the target, then renamed over it, so a
// reader never sees a half-written result and a failed run leaves the old file in place.
#include <string>

namespace overlap {

// Throws std::runtime_error naming the path on failure.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace overlap
