#pragma once
// The `overlap-sim` command line (CLI11): subcommands `run`, `tune`, `sweep`, `collective`, `schemes`,
// `profile list`, `profile show` and `validate`.
// run_cli() is the whole program minus the process: tests call it in-process with string streams.
// Exit status: 0 success; 2 usage or input error (message on `err`), also running out of memory (the
// message says what the program was running); 1 internal error, or (`run`) a scheme that failed while
// the others' results were reported.
#include <cstddef>
#include <new>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace CLI {
class Validator;
}

namespace overlap::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
// `run`: some schemes failed (their rows say FAILED) while others produced results.
inline constexpr int kExitSchemeFailed = 1;
inline constexpr int kExitUsage = 2;

// The most threads `tune -j` and `sweep -j` take (and the Python package's `jobs=`): a thread each
// holds a scenario's graphs, so a typo like -j 1000000 must be refused, not spawn a million threads.
inline constexpr int kMaxJobs = 4096;

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

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// A CLI11 transform for a whole-number option, by the rule of every numeric input
// (cost_model/yaml_reader.hpp): decimal digits with an optional sign, leading zeros decimal.
CLI::Validator decimal_integer();

// The source tree (scenarios/, tools/): $OVERLAP_HOME when set, else the tree the program was built
// from (compile definition OVERLAP_SOURCE_DIR).
std::string source_dir();
// Built-in hardware profiles: <source_dir>/scenarios/hardware.
std::string hardware_dir();
// A user-given input path: as written when it exists (relative to the current directory), else
// relative to source_dir(); for a bare name (no '/', no .yaml) also scenarios/NAME.yaml and
// scenarios/papers/NAME.yaml. Returns the path as written when nothing matches (the loader then
// reports it missing).
std::string resolve_input_path(const std::string& path);
// The --set list of a command that loads `scenario_path`. A `hardware=` value that is a relative path
// (it has a '/' or ends in .yaml) is looked for where the user typed it (the current directory), then
// beside the scenario (where a `hardware:` written in the scenario is read from), then in
// source_dir(), and replaced by the absolute path of the first that exists, or of the first when
// none does (the loader then reports that one missing). So `overlap-sim run --set
// hardware=calibrate/results/<dir>/profile.yaml` loads that file from the source tree. Other
// assignments are returned unchanged.
std::vector<std::string> resolve_set_paths(const std::vector<std::string>& sets, const std::string& scenario_path);
// The same for one `hardware` value (a --sweep hardware=A,B value).
std::string resolve_hardware_path(const std::string& value, const std::string& scenario_path);
// The same for a model config given as a path (`--model`, `--set workload.model=`): a .json or a path.
std::string resolve_model_path(const std::string& value, const std::string& scenario_path);

}  // namespace overlap::tools
