#pragma once
// Where the program finds the source tree's files (scenarios/, tools/, calibrate/results/), and how a
// command-line or scenario reference is told apart from a name. Standard library only: the device
// build of calibrate/ compiles this file too.
#include <string>

namespace overlap {

// $OVERLAP_HOME when set and not empty (the program runs from elsewhere than the tree it was built
// from), else the tree it was built from (compile definition OVERLAP_SOURCE_DIR; "." without one).
std::string source_tree_dir();

// The built-in hardware profiles: <source_tree_dir>/scenarios/hardware.
std::string builtin_hardware_dir();

// A reference is a path, not a built-in name, when it has a '/' or ends in ".yaml".
bool looks_like_path(const std::string& s);

}  // namespace overlap
