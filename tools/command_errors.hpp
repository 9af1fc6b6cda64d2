#pragma once
// How a command's failure reaches the program's exit status: what the commands throw, and the
// statuses the dispatcher (tools/cli.hpp run_cli) and the Python module (python/overlap_sim/_core.cpp)
// turn it into. Exit status: 0 success; 2 usage or input error (message on the error stream), also
// running out of memory (the message says what the program was running); 1 internal error, or (`run`)
// a scheme that failed while the others' results were reported.
#include <cstddef>
#include <new>
#include <stdexcept>

namespace overlap::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
// `run`: some schemes failed (their rows say FAILED) while others produced results.
inline constexpr int kExitSchemeFailed = 1;
inline constexpr int kExitUsage = 2;

// A mistake in how the program was called that is not located in a scenario file (an option value,
// a missing plotting dependency, an output path that cannot be written). Exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The program's operator new (tools/main.cpp) throws this when memory runs out, with the size it was
// asked for; the CLI reports it as running out of memory (exit 2), never as an internal error.
class OutOfMemory : public std::bad_alloc {
 public:
  explicit OutOfMemory(std::size_t bytes) : bytes_(bytes) {}
  std::size_t bytes() const { return bytes_; }
  const char* what() const noexcept override { return "out of memory"; }

 private:
  std::size_t bytes_;
};

// Leave with this exit status without printing anything (an MPI rank other than 0 whose error rank 0
// already reports).
class QuietExit : public std::runtime_error {
 public:
  explicit QuietExit(int code) : std::runtime_error("quiet exit"), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

}  // namespace overlap::tools
