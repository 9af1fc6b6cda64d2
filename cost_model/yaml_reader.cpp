#include "cost_model/yaml_reader.hpp"

#include <algorithm>
#include <cmath>

#include "cost_model/input_file.hpp"
#include <utility>

namespace overlap {

YamlReader::YamlReader(YAML::Node node, std::string path, std::string file)
    : node_(std::move(node)), path_(std::move(path)), file_(std::move(file)) {}

int YamlReader::line() const {
  // YAML::Mark is 0-based; a node built in code (e.g. by --set) has the null mark (line -1).
  const YAML::Mark mark = node_.Mark();
  return mark.line >= 0 ? mark.line + 1 : 0;
}

bool YamlReader::has(const std::string& key) const {
  return node_.IsMap() && node_[key] && !node_[key].IsNull();
}

std::string YamlReader::child_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

std::string YamlReader::scalar_text() const {
  if (node_.IsScalar()) return node_.Scalar();
  if (node_.IsMap()) return "a map";
  if (node_.IsSequence()) return "a list";
  return "nothing";
}

void YamlReader::fail(const std::string& message) const {
  throw InputError(file_, line(), path_, message);
}

void YamlReader::fail_at(const std::string& key, const std::string& message) const {
  if (node_.IsMap() && node_[key]) {
    YamlReader(node_[key], child_path(key), file_).fail(message);
  }
  throw InputError(file_, line(), child_path(key), message);
}

void YamlReader::expect_map() const {
  if (!node_.IsMap()) fail("must be a map (got " + scalar_text() + ")");
  // yaml-cpp keeps a repeated key and lookups see only one of them: the other would be silently
  // ignored, so a repeat is an error at its second occurrence.
  std::vector<std::string> seen;
  for (const auto& kv : node_) {
    std::string key = kv.first.Scalar();
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      const YAML::Mark mark = kv.first.Mark();
      throw InputError(file_, mark.line >= 0 ? mark.line + 1 : 0, child_path(key), "key given twice");
    }
    seen.push_back(std::move(key));
  }
}

void YamlReader::expect_sequence() const {
  if (!node_.IsSequence()) fail("must be a list (got " + scalar_text() + ")");
}

// A map key must be a plain name: YAML also allows a list or a map as a key ("? a: 1"), which no
// key path can name (found by tools/fuzz.sh: yaml-cpp's bad conversion was an internal error).
std::string YamlReader::key_text(const YAML::Node& key) const {
  if (key.IsScalar()) return key.Scalar();
  const YAML::Mark mark = key.Mark();
  throw InputError(file_, mark.line >= 0 ? mark.line + 1 : 0, path_, "a key must be a plain name, not a list or a map");
}

void YamlReader::allow_keys(const std::vector<std::string>& allowed) const {
  expect_map();
  for (const auto& kv : node_) {
    const std::string key = key_text(kv.first);
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    const YAML::Mark mark = kv.first.Mark();
    throw InputError(file_, mark.line >= 0 ? mark.line + 1 : 0, child_path(key),
                     "unknown key (allowed: " + list + ")");
  }
}

YamlReader YamlReader::child(const std::string& key) const {
  expect_map();
  if (!has(key)) throw InputError(file_, line(), child_path(key), "missing required field");
  return YamlReader(node_[key], child_path(key), file_);
}

std::optional<YamlReader> YamlReader::optional_child(const std::string& key) const {
  expect_map();
  if (!has(key)) return std::nullopt;
  return YamlReader(node_[key], child_path(key), file_);
}

YamlReader YamlReader::element(std::size_t index) const {
  expect_sequence();
  // "a.b.3", the syntax --set accepts back (cost_model/overrides.hpp).
  return YamlReader(node_[index], (path_.empty() ? "" : path_ + ".") + std::to_string(index), file_);
}

std::vector<std::string> YamlReader::keys() const {
  expect_map();
  std::vector<std::string> out;
  for (const auto& kv : node_) out.push_back(key_text(kv.first));
  return out;
}

std::string YamlReader::as_string() const {
  if (!node_.IsScalar()) fail("must be a string (got " + scalar_text() + ")");
  return node_.Scalar();
}

std::int64_t YamlReader::as_int() const {
  if (node_.IsScalar()) {
    try {
      return node_.as<std::int64_t>();
    } catch (const YAML::Exception&) {
    }
  }
  fail("must be an integer (got " + scalar_text() + ")");
}

double YamlReader::as_double() const {
  if (node_.IsScalar()) {
    try {
      return node_.as<double>();
    } catch (const YAML::Exception&) {
    }
  }
  fail("must be a number (got " + scalar_text() + ")");
}

bool YamlReader::as_bool() const {
  if (node_.IsScalar()) {
    try {
      return node_.as<bool>();
    } catch (const YAML::Exception&) {
    }
  }
  fail("must be true or false (got " + scalar_text() + ")");
}

std::string YamlReader::get_string(const std::string& key) const { return child(key).as_string(); }
std::string YamlReader::get_string(const std::string& key, const std::string& fallback) const {
  const auto c = optional_child(key);
  return c ? c->as_string() : fallback;
}

std::int64_t YamlReader::get_int(const std::string& key) const { return child(key).as_int(); }
std::int64_t YamlReader::get_int(const std::string& key, std::int64_t fallback) const {
  const auto c = optional_child(key);
  return c ? c->as_int() : fallback;
}

namespace {
std::int64_t positive_int(const YamlReader& r) {
  if (!r.is_scalar()) r.fail("must be a positive integer (got a " + std::string(r.is_map() ? "map" : "list") + ")");
  std::int64_t v = 0;
  try {
    v = r.node().as<std::int64_t>();
  } catch (const YAML::Exception&) {
    r.fail("must be a positive integer (got " + r.node().Scalar() + ")");
  }
  if (v <= 0) r.fail("must be a positive integer (got " + r.node().Scalar() + ")");
  return v;
}
}  // namespace

std::int64_t YamlReader::get_positive_int(const std::string& key) const {
  return positive_int(child(key));
}
std::int64_t YamlReader::get_positive_int(const std::string& key, std::int64_t fallback) const {
  const auto c = optional_child(key);
  return c ? positive_int(*c) : fallback;
}
std::int64_t YamlReader::get_nonnegative_int(const std::string& key, std::int64_t fallback) const {
  const auto c = optional_child(key);
  if (!c) return fallback;
  const std::int64_t v = c->as_int();
  if (v < 0) c->fail("must be a non-negative integer (got " + c->node().Scalar() + ")");
  return v;
}

double YamlReader::get_double(const std::string& key) const { return child(key).as_double(); }
double YamlReader::get_double(const std::string& key, double fallback) const {
  const auto c = optional_child(key);
  return c ? c->as_double() : fallback;
}

namespace {
double positive_double(const YamlReader& r) {
  const double v = r.as_double();
  if (!(v > 0) || !std::isfinite(v)) r.fail("must be a positive number (got " + r.node().Scalar() + ")");
  return v;
}
}  // namespace

double YamlReader::get_positive_double(const std::string& key) const {
  return positive_double(child(key));
}
double YamlReader::get_positive_double(const std::string& key, double fallback) const {
  const auto c = optional_child(key);
  return c ? positive_double(*c) : fallback;
}
double YamlReader::get_nonnegative_double(const std::string& key, double fallback) const {
  const auto c = optional_child(key);
  if (!c) return fallback;
  const double v = c->as_double();
  if (!(v >= 0) || !std::isfinite(v)) c->fail("must be a non-negative number (got " + c->node().Scalar() + ")");
  return v;
}
double YamlReader::get_fraction(const std::string& key, double fallback) const {
  const auto c = optional_child(key);
  if (!c) return fallback;
  const double v = c->as_double();
  if (!(v > 0 && v <= 1)) c->fail("must be a fraction in (0, 1] (got " + c->node().Scalar() + ")");
  return v;
}
bool YamlReader::get_bool(const std::string& key, bool fallback) const {
  const auto c = optional_child(key);
  return c ? c->as_bool() : fallback;
}

std::int64_t YamlReader::as_int_in(const InputRange& range) const {
  if (!node_.IsScalar()) fail("must be an integer in " + range_text(range) + " (got " + scalar_text() + ")");
  std::int64_t v = 0;
  try {
    v = node_.as<std::int64_t>();
  } catch (const YAML::Exception&) {
    // Not an int64: a number out of its range (1e18, 99999999999999999999) says so with the limit.
    double d = 0;
    if (YAML::convert<double>::decode(node_, d)) {
      if (const auto why = range_violation(range, d, node_.Scalar())) fail(*why);
    }
    fail("must be an integer in " + range_text(range) + " (got " + node_.Scalar() + ")");
  }
  if (const auto why = range_violation(range, static_cast<double>(v), node_.Scalar())) fail(*why);
  return v;
}

double YamlReader::as_double_in(const InputRange& range) const {
  const double v = as_double();
  if (const auto why = range_violation(range, v, node_.Scalar())) fail(*why);
  return v;
}

std::int64_t YamlReader::get_int_in(const std::string& key, const InputRange& range) const {
  return child(key).as_int_in(range);
}
std::int64_t YamlReader::get_int_in(const std::string& key, const InputRange& range, std::int64_t fallback) const {
  const auto c = optional_child(key);
  return c ? c->as_int_in(range) : fallback;
}
double YamlReader::get_double_in(const std::string& key, const InputRange& range) const {
  return child(key).as_double_in(range);
}
double YamlReader::get_double_in(const std::string& key, const InputRange& range, double fallback) const {
  const auto c = optional_child(key);
  return c ? c->as_double_in(range) : fallback;
}

YAML::Node load_yaml_file(const std::string& path, const std::string& what) {
  const std::string text = read_input_file(path, what);
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError(path, e.mark.line >= 0 ? e.mark.line + 1 : 0, "", "YAML syntax error: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw InputError(path, e.mark.line >= 0 ? e.mark.line + 1 : 0, "", "not readable as YAML: " + e.msg);
  }
}

}  // namespace overlap
