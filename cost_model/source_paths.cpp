#include "cost_model/source_paths.hpp"

#include <cstdlib>

#ifndef OVERLAP_SOURCE_DIR
#define OVERLAP_SOURCE_DIR "."
#endif

namespace overlap {

std::string source_tree_dir() {
  const char* home = std::getenv("OVERLAP_HOME");
  return home && *home ? std::string(home) : std::string(OVERLAP_SOURCE_DIR);
}

std::string builtin_hardware_dir() { return source_tree_dir() + "/scenarios/hardware"; }

bool looks_like_path(const std::string& s) {
  return s.find('/') != std::string::npos || (s.size() > 5 && s.compare(s.size() - 5, 5, ".yaml") == 0);
}

}  // namespace overlap
