#pragma once
// Loading a HardwareProfile from YAML: a file, a built-in name (`<hardware_dir>/NAME.yaml`, by
// default <source>/scenarios/hardware), or an inline node of a scenario (`hardware: {...}`).
// Every key is a row of cost_model/profile_schema.hpp (its check, range and meaning), documented in
// scenarios/hardware/README.md and docs/reference/inputs.md. Bad input
// (unknown key, wrong type, missing required field, non-positive size, a GPU count a node/NUMA size
// does not divide) throws InputError naming file, line and key path. The fabric is expanded
// (expand_topology) before the profile is returned.
#include <string>
#include <vector>

#include "cost_model/hardware_profile.hpp"
#include "cost_model/yaml_reader.hpp"

namespace overlap {

// <source>/scenarios/hardware, compiled in.
std::string default_hardware_dir();
// Names of the built-in profiles (file stems under hardware_dir), sorted.
std::vector<std::string> builtin_profile_names(const std::string& hardware_dir = default_hardware_dir());

// Parses a profile map. `reader.path()` prefixes key paths ("hardware" inside a scenario, "" for a
// profile file); base_dir resolves relative paths inside it (curves: {nccl_tests: file}).
HardwareProfile profile_from_yaml(const YamlReader& reader, const std::string& base_dir);

// A file, with --set overrides (paths relative to the profile; a leading "hardware." is dropped).
HardwareProfile load_profile_file(const std::string& path, const std::vector<std::string>& sets = {});
// A path (contains '/' or ends in .yaml) or a built-in name.
HardwareProfile load_profile(const std::string& name_or_path,
                             const std::string& hardware_dir = default_hardware_dir(),
                             const std::vector<std::string>& sets = {});
// The `hardware:` value of a scenario: a scalar (built-in name or path) or an inline map. For a
// name, overrides must already be applied by the caller to the scenario tree; use
// resolve_hardware_yaml() first to splice the named profile's YAML into the tree when --set paths
// reach into it.
HardwareProfile load_hardware_node(const YamlReader& reader,
                                   const std::string& hardware_dir = default_hardware_dir());
// The YAML of a named/path profile (for splicing into a scenario before overrides), and its file.
YAML::Node load_profile_yaml(const std::string& name_or_path, const std::string& hardware_dir,
                             std::string* file_out = nullptr);

}  // namespace overlap
