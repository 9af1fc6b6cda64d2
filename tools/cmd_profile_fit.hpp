#pragma once
// `overlap-sim profile fit TRACE... --hardware BASE -o OUT.yaml [--name NAME] [--min-samples N]
//  [--format table|json]`: a hardware profile fitted to the kernels measured in traces of a real job
// (the files `overlap-sim trace` reads), so that `run --hardware OUT.yaml` predicts that cluster.
// The base profile gives everything the trace does not measure; calibrate/traces/profile_fit.hpp
// says what is fitted (GEMM entries and rate, collective curves) and when the base's value is kept.
// The report (stdout, or --report FILE) lists every pooled kernel group measured, as the base
// predicted it and as the fitted profile does, and a line per profile key: fitted, or kept and why.
//
// The fitted profile is read back through the profile loader (cost_model/profile_loader.hpp) before
// anything is written: a fit the loader would refuse (a duration, shape or curve past the schema's
// ranges, a --name that is not UTF-8) is an error naming the key, exit 2, and no file is written.
//
// Bad input, exit 2: a trace `trace` refuses (`--strict` as for `trace`); traces with no GEMM kernel or none with a shape (the
// file and the field named); an unknown base profile; an output the atomic writer refuses (a
// directory, a socket: cost_model/atomic_file.hpp).
#include <ostream>
#include <string>
#include <vector>

#include "tools/command.hpp"

namespace overlap::tools {

struct ProfileFitOptions {
  std::vector<std::string> files;
  std::string hardware;  // the base profile: a built-in name or a YAML path
  std::string output;    // the fitted profile's YAML
  std::string report;    // the report; "" = standard output
  std::string name;      // "" = "<base>-fit"
  std::string format = "table";
  int min_samples = 3;
  bool strict = false;  // --strict: as `trace --strict`
};

// Registers `profile fit` and its flags under `profile_cmd` (tools/command.hpp).
Command add_profile_fit_command(CLI::App& profile_cmd);

void cmd_profile_fit(const ProfileFitOptions& options, std::ostream& out, std::ostream& err);

}  // namespace overlap::tools
