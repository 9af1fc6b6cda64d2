#pragma once
// One subcommand of `overlap-sim` as the dispatcher (tools/cli.cpp) sees it, and the pieces every
// command's flags are made of. Each command defines its flags in one place: its add_*_command
// function (tools/cmd_*.hpp) registers them on the program's CLI11 app, owns the values they are read
// into, and returns the Command that runs it; the dispatcher parses the line and runs the one command
// that was named.
#include <functional>
#include <initializer_list>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
class Option;
class Validator;
}  // namespace CLI

namespace overlap::tools {

struct Command {
  CLI::App* app = nullptr;  // the subcommand; parsed() when the user named it
  // Runs it after parsing, first doing the checks that need more than one flag (check_output_flags,
  // combinations CLI11 cannot express); returns the exit status or throws (tools/command_errors.hpp).
  std::function<int(std::ostream& out, std::ostream& err)> run;
};

// The most threads `tune -j`, `sweep -j` and `plan -j` take (and the Python package's `jobs=`): a
// thread each holds a scenario's graphs, so a typo like -j 1000000 must be refused, not spawn a
// million threads.
inline constexpr int kMaxJobs = 4096;

// A CLI11 transform for a whole-number option, by the rule of every numeric input
// (cost_model/yaml_reader.hpp): decimal digits with an optional sign, leading zeros decimal.
CLI::Validator decimal_integer();

// A CLI11 check that refuses an empty value ("--model ''"): an option given with nothing would
// otherwise read as not given at all and run the scenario's own value silently.
CLI::Validator non_empty_value();

// A command's --help footer: "Examples:" and one indented line each.
std::string examples(std::initializer_list<const char*> lines);

// One command's output flags: an empty path is refused (it is not "standard output": that is -),
// and two flags naming one file are refused before anything runs (cost_model/atomic_file.hpp).
struct OutputFlag {
  std::string flag;
  const std::string* path;
  const CLI::Option* option;  // null: always given when `path` is not empty
};
void check_output_flags(const std::vector<OutputFlag>& flags,
                        std::vector<std::pair<std::string, std::string>> extra = {});

}  // namespace overlap::tools
