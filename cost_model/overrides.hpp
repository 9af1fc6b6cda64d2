#pragma once
// `--set a.b.c=value` (design.md "Scenario files"): applied to the YAML tree before it is loaded, so
// the loader's validation catches unknown paths and bad values like any other input. The path is
// dot-separated; a segment that is an integer indexes a list. Missing maps are created, an existing
// value is replaced. The value is parsed as YAML: a scalar (900, true, bf16) or a flow collection
// ([1, 2], {bandwidth_gbps: 50}).
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "cost_model/input_error.hpp"

namespace overlap {

struct Override {
  std::vector<std::string> path;
  std::string value_text;
};

// Splits "a.b.c=value"; throws InputError (key "--set") on a missing '=' or an empty path segment.
Override parse_override(const std::string& assignment);

void apply_override(YAML::Node& root, const Override& o);
void apply_overrides(YAML::Node& root, const std::vector<std::string>& assignments);

// The --set assignment (as the user typed it) that wrote the value at `key_path`, or a map on the
// way to it: the last assignment whose path, with `strip_prefix` removed when it starts with it,
// equals key_path, lies under it or above it. nullopt when none did.
std::optional<std::string> override_source(const std::string& key_path, const std::vector<std::string>& assignments,
                                           const std::string& strip_prefix = "");

// Messages say where a value came from: an InputError without a line (a node --set built) whose key
// a --set wrote is rethrown as "--set KEY=VALUE: key: message"; any other error is rethrown as is.
[[noreturn]] void rethrow_with_source(const InputError& e, const std::vector<std::string>& assignments,
                                      const std::string& strip_prefix = "");

}  // namespace overlap
