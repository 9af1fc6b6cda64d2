#pragma once
// `--set a.b.c=value` (design.md "Scenario files"): applied to the YAML tree before it is loaded, so
// the loader's validation catches unknown paths and bad values like any other input. The path is
// dot-separated; a segment that is an integer indexes a list. Missing maps are created, an existing
// value is replaced. The value is parsed as YAML: a scalar (900, true, bf16) or a flow collection
// ([1, 2], {bandwidth_gbps: 50}).
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace overlap {

struct Override {
  std::vector<std::string> path;
  std::string value_text;
};

// Splits "a.b.c=value"; throws InputError (key "--set") on a missing '=' or an empty path segment.
Override parse_override(const std::string& assignment);

void apply_override(YAML::Node& root, const Override& o);
void apply_overrides(YAML::Node& root, const std::vector<std::string>& assignments);

}  // namespace overlap
