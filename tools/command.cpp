// The pieces every command's flags are made of (tools/command.hpp).
#include "tools/command.hpp"

#include <CLI/CLI.hpp>

#include "cost_model/atomic_file.hpp"
#include "cost_model/yaml_reader.hpp"
#include "tools/command_errors.hpp"

namespace overlap::tools {

// Number options read as written, by the rule of every numeric input (cost_model/yaml_reader.hpp):
// decimal digits with an optional sign, leading zeros decimal. CLI11 alone would read 010 as octal
// 8 and 0x10 as 16; this transform hands it the canonical decimal text.
CLI::Validator decimal_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto v = parse_decimal_int(text);
        if (!v) return "must be a whole number in decimal digits (got '" + text + "')";
        text = std::to_string(*v);
        return std::string();
      },
      "", "decimal");
}

CLI::Validator non_empty_value() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        return value.empty() ? "must not be empty (leave the option out instead)" : "";
      },
      "TEXT", "non-empty");
}

std::string examples(std::initializer_list<const char*> lines) {
  std::string out = "\nExamples:\n";
  for (const char* l : lines) out += std::string("  ") + l + "\n";
  return out;
}

void check_output_flags(const std::vector<OutputFlag>& flags, std::vector<std::pair<std::string, std::string>> extra) {
  std::vector<std::pair<std::string, std::string>> outputs;
  for (const OutputFlag& f : flags) {
    if (f.option && f.option->count() > 0 && f.path->empty())
      throw UsageError(f.flag + " '': an empty path names no file (give a file name, or - for standard output)");
    outputs.emplace_back(f.flag, *f.path);
  }
  outputs.insert(outputs.end(), extra.begin(), extra.end());
  check_distinct_outputs(outputs);
}

}  // namespace overlap::tools
