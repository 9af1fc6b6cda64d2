#pragma once
// What the command-line tests share: the program run in-process (tools/cli.hpp run_cli), with its exit
// status and both streams, and a small scenario to run it on.
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

// `overlap-sim run ARGS... --placeholder-check never`: for a test of something other than the
// placeholder check. On a profile with guessed values (every shipped one) `run` re-runs its schemes at
// both ends of each guess's range by default, up to 17 runs where one was asked for (the default
// scenario: 0.16 s of CPU against 0.02 s in the release build, several times that under the
// sanitizers). The check has tests of its own (cli/placeholder_sensitivity_test.cpp,
// sim/test_placeholder_reruns.cpp) and runs on every shipped scenario in the golden test.
inline CliResult cli_unchecked(const std::vector<std::string>& run_args) {
  std::vector<std::string> args = {"run"};
  args.insert(args.end(), run_args.begin(), run_args.end());
  args.insert(args.end(), {"--placeholder-check", "never"});
  return cli(args);
}

// A small, fast scenario: one GEMM + `primitive` on 4 of the H100s, up to its `schemes:` line (the
// caller lists the schemes). Its lines, which the refusal tests cite by number:
//   1 hardware: h100-sxm-8x-nvswitch   4 tp: 4      7 k: 2048
//   2 workload:                        5 m: 2048    8 primitive: <primitive>
//   3 kind: gemm_collective            6 n: 4096    9 schemes:
inline std::string gemm_collective_scenario(const std::string& primitive) {
  return "hardware: h100-sxm-8x-nvswitch\n"
         "workload:\n"
         "  kind: gemm_collective\n"
         "  tp: 4\n"
         "  m: 2048\n"
         "  n: 4096\n"
         "  k: 2048\n"
         "  primitive: " +
         primitive +
         "\n"
         "schemes:\n";
}

}  // namespace overlap::test
