#pragma once
// YamlReader: a view of one YAML node that knows its key path ("hardware.gpu.sm_count") and file,
// so every loader (hardware profiles here, scenarios in sim/) reports bad input the same way:
// unknown keys, wrong types, missing required fields and out-of-range values become an InputError
// naming file, line and key (design.md "Scenario files").
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "cost_model/input_error.hpp"
#include "cost_model/input_ranges.hpp"

namespace overlap {

class YamlReader {
 public:
  YamlReader(YAML::Node node, std::string path, std::string file);

  const YAML::Node& node() const { return node_; }
  const std::string& path() const { return path_; }
  const std::string& file() const { return file_; }
  int line() const;  // 1-based line of this node; 0 when unknown (built in code or by --set)

  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }
  bool has(const std::string& key) const;

  // Throw unless this node is a map / sequence / scalar.
  void expect_map() const;
  void expect_sequence() const;
  // Throw if the map has a key not in `allowed` (the message lists the allowed keys).
  void allow_keys(const std::vector<std::string>& allowed) const;

  YamlReader child(const std::string& key) const;  // required: throws "missing required field"
  std::optional<YamlReader> optional_child(const std::string& key) const;
  std::size_t size() const { return node_.size(); }
  YamlReader element(std::size_t index) const;  // sequence element, path "a.b.3" (as --set writes it)
  std::vector<std::string> keys() const;        // map keys in file order
  std::string key_text(const YAML::Node& key) const;  // a map key; InputError unless a plain name

  // Typed reads of this node.
  std::string as_string() const;
  std::int64_t as_int() const;
  double as_double() const;
  bool as_bool() const;

  // Typed reads of a key: required (throws when missing) or with a default.
  std::string get_string(const std::string& key) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;
  std::int64_t get_int(const std::string& key) const;
  std::int64_t get_int(const std::string& key, std::int64_t fallback) const;
  std::int64_t get_positive_int(const std::string& key) const;
  std::int64_t get_positive_int(const std::string& key, std::int64_t fallback) const;
  std::int64_t get_nonnegative_int(const std::string& key, std::int64_t fallback) const;
  double get_double(const std::string& key) const;
  double get_double(const std::string& key, double fallback) const;
  double get_positive_double(const std::string& key) const;
  double get_positive_double(const std::string& key, double fallback) const;
  double get_nonnegative_double(const std::string& key, double fallback) const;
  // A fraction in (0, 1].
  double get_fraction(const std::string& key, double fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;

  // Reads checked against a range of cost_model/input_ranges.hpp; the message names the limits.
  std::int64_t as_int_in(const InputRange& range) const;
  double as_double_in(const InputRange& range) const;
  std::int64_t get_int_in(const std::string& key, const InputRange& range) const;
  std::int64_t get_int_in(const std::string& key, const InputRange& range, std::int64_t fallback) const;
  double get_double_in(const std::string& key, const InputRange& range) const;
  double get_double_in(const std::string& key, const InputRange& range, double fallback) const;

  // Throw an InputError located at this node / at `key` of this map (or at the map if absent).
  [[noreturn]] void fail(const std::string& message) const;
  [[noreturn]] void fail_at(const std::string& key, const std::string& message) const;

 // The complaint for a scalar that is not a plain number: quoted, a block scalar, or tagged.
  std::string not_plain_text() const;

 private:
  std::string child_path(const std::string& key) const;
  std::string scalar_text() const;

  YAML::Node node_;
  std::string path_;
  std::string file_;
};

// Every YAML text a user gives (scenario, profile, --set and --param values) is parsed by parse_yaml:
// one document only (a second document, or text after `...`, would be silently ignored), no tags
// but the non-specific `!` of a quoted string (`!foo 132`, `!!python/object:...`, `!!int 5` are not
// read), valid UTF-8 in every key and string (names reach the JSON writer, which refuses anything
// else), and at most kMaxYamlNodes nodes counting every alias as the nodes it stands for (a few
// nested anchors expand exponentially: "billion laughs"). Counted on the parser's events, before
// any node is walked. An alias inside the node it names (a cycle) is refused too. Refusals are
// InputErrors naming `file`, the line and the key path.
inline constexpr std::int64_t kMaxYamlNodes = 1'000'000;
YAML::Node parse_yaml(const std::string& text, const std::string& file);

// Numbers are read as written: a plain (unquoted, untagged) scalar in decimal notation,
// [+-]digits for an integer, and for a real also a fraction and an exponent (1.5, 2e-3). Leading
// zeros are decimal (020000 is twenty thousand, never octal); 0x/0o prefixes, `.inf`, `.nan`,
// digit separators and anything else are not numbers. The CLI's number options and --set/--param
// values follow the same rule (they are parsed as YAML scalars).
std::optional<std::int64_t> parse_decimal_int(const std::string& text);
std::optional<double> parse_decimal_real(const std::string& text);
// `text` with every byte that is not part of valid UTF-8 replaced by U+FFFD: for names taken from
// outside a file's text (a scenario's file name when it has no `name:`), which reach JSON outputs.
std::string utf8_or_replaced(const std::string& text);

// True for a scalar written plainly (no quotes, no block scalar, no tag) or built in code.
bool is_plain_scalar(const YAML::Node& node);

// Reads a YAML file into a node through read_input_file (regular files of at most 16 MiB only); a
// missing file, a refused path or a syntax error is an InputError (with the line of the syntax
// error). `what` names the kind of file in messages ("hardware profile").
YAML::Node load_yaml_file(const std::string& path, const std::string& what = "YAML");

}  // namespace overlap
