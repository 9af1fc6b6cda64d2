#pragma once
// Where the commands look for the files a user names: scenarios, hardware profiles and model configs
// given as a name or a path relative to the current directory, the scenario, or the source tree.
#include <string>
#include <vector>

namespace overlap::tools {

// The source tree (scenarios/, tools/): $OVERLAP_HOME when set, else the tree the program was built
// from (cost_model/source_paths.hpp).
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
