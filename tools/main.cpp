// overlap-sim: the command-line program. Everything but the process lives in tools/cli.cpp
// (run_cli), so the tests run the same code in-process.
#include <iostream>

#ifdef OVERLAP_CLI_MIMALLOC
#include <mimalloc.h>
#endif

#include "tools/cli.hpp"

int main(int argc, char** argv) {
#ifdef OVERLAP_CLI_MIMALLOC
  // The process's allocator (tools/CMakeLists.txt). A run frees each scheme's task graph and builds
  // the next at once: handing those pages back to the kernel only to fault them in again cost about
  // 3 % of a training step's wall time (docs/performance.md).
  mi_option_disable(mi_option_allow_decommit);
#endif
  return overlap::tools::run_cli(argc, argv, std::cout, std::cerr);
}
