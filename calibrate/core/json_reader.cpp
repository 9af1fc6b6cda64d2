#include "calibrate/core/json_reader.hpp"

#include "cost_model/input_file.hpp"
#include "cost_model/json_lines.hpp"
#include "cost_model/strict_json.hpp"

#include <fstream>
#include <sstream>

namespace overlap::calibrate {

using nlohmann::json;

int JsonReader::line_of(const std::string& path) const { return text_ ? json_line_of(*text_, path) : 0; }

void JsonReader::fail(const std::string& message) const { throw InputError(file_, line_of(path_), path_, message); }
void JsonReader::fail_at(const std::string& key, const std::string& message) const {
  throw InputError(file_, line_of(key_path(key)), key_path(key), message);
}

void JsonReader::expect_object() const {
  if (!value_->is_object()) fail("must be an object");
}
void JsonReader::expect_array() const {
  if (!value_->is_array()) fail("must be a list");
}

void JsonReader::allow_keys(const std::vector<std::string>& allowed) const {
  expect_object();
  for (const auto& [key, v] : value_->items()) {
    (void)v;
    bool ok = false;
    for (const auto& a : allowed) ok = ok || a == key;
    if (!ok) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail_at(key, "unknown key (allowed: " + list + ")");
    }
  }
}

bool JsonReader::has(const std::string& key) const { return value_->is_object() && value_->contains(key); }

JsonReader JsonReader::child(const std::string& key) const {
  expect_object();
  if (!value_->contains(key)) fail_at(key, "missing required field");
  return JsonReader((*value_)[key], file_, key_path(key), text_);
}

JsonReader JsonReader::element(std::size_t i) const {
  expect_array();
  return JsonReader((*value_)[i], file_, path_ + "[" + std::to_string(i) + "]", text_);
}

std::string JsonReader::get_string(const std::string& key) const {
  const JsonReader c = child(key);
  if (!c.value().is_string()) c.fail("must be a string");
  return c.value().get<std::string>();
}
std::string JsonReader::get_string(const std::string& key, const std::string& fallback) const {
  return has(key) ? get_string(key) : fallback;
}

std::int64_t JsonReader::get_positive_int(const std::string& key) const {
  const JsonReader c = child(key);
  if (!c.value().is_number_integer() || c.value().get<std::int64_t>() <= 0) {
    c.fail("must be a positive integer (got " + c.value().dump() + ")");
  }
  return c.value().get<std::int64_t>();
}
std::int64_t JsonReader::get_positive_int(const std::string& key, std::int64_t fallback) const {
  return has(key) ? get_positive_int(key) : fallback;
}

double JsonReader::get_positive_number(const std::string& key) const {
  const JsonReader c = child(key);
  if (!c.value().is_number() || !(c.value().get<double>() > 0)) {
    c.fail("must be a positive number (got " + c.value().dump() + ")");
  }
  return c.value().get<double>();
}

bool JsonReader::get_bool(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  const JsonReader c = child(key);
  if (!c.value().is_boolean()) c.fail("must be true or false");
  return c.value().get<bool>();
}

JsonDocument read_json_document(const std::string& path) {
  JsonDocument doc;
  doc.file = path;
  doc.text = std::make_shared<const std::string>(read_input_file(path, "JSON"));
  // Duplicate keys and numbers beyond a double are refused naming the key (cost_model/strict_json.hpp).
  doc.value = parse_strict_json(*doc.text, path, "not valid JSON");
  return doc;
}

json read_json_file(const std::string& path) { return read_json_document(path).value; }

}  // namespace overlap::calibrate
