// overlap-sim: the command-line program. Everything but the process lives in tools/cli.cpp
// (run_cli), so the tests run the same code in-process.
#include <iostream>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "tools/cli.hpp"

int main(int argc, char** argv) {
#if defined(__GLIBC__)
  // A run builds and drops one task graph per scheme (tens of MB each on an 80-layer step). With
  // glibc's defaults such blocks are mmap'd and unmapped each time, so every scheme faults its pages
  // in afresh (0.35-0.4 s of kernel time on the 70B step). Keeping freed memory in the heap for the
  // next scheme halves that; the step's wall time goes to 0.87x of the default's, for about 4 % more
  // peak memory (docs/performance.md). The process only: the library and the Python module leave
  // their host's allocator alone.
  constexpr int kOneGiB = 1 << 30;
  mallopt(M_MMAP_THRESHOLD, kOneGiB);
  mallopt(M_TRIM_THRESHOLD, kOneGiB);
#endif
  return overlap::tools::run_cli(argc, argv, std::cout, std::cerr);
}
