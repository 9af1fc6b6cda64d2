#pragma once
// What the command-line tests share: the program run in-process (tools/cli.hpp run_cli), with its exit
// status and both streams.
#include <sstream>
#include <string>
#include <vector>

#include "tools/cli.hpp"

namespace overlap::test {

struct CliResult {
  int rc = -1;
  std::string out, err;
};

// `overlap-sim ARGS...`, as the program runs it, without a process of its own.
inline CliResult cli(const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"overlap-sim"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  CliResult r;
  r.rc = overlap::tools::run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

}  // namespace overlap::test
