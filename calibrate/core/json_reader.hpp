#pragma once
// JsonReader: a view of one JSON value that knows its file and key path ("runs[3].workload.m"), so
// configuration lists and measurement files report bad input the way the YAML loaders do: an
// overlap::InputError naming the file, the line and the key. The parsed value keeps no positions;
// a reader made from a JsonDocument finds the line in the file's text (cost_model/json_lines.hpp),
// one made from a bare value (built in memory) reports line 0.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost_model/input_error.hpp"

namespace overlap::calibrate {

class JsonReader {
 public:
  JsonReader(const nlohmann::json& value, std::string file, std::string path = "",
             std::shared_ptr<const std::string> text = nullptr)
      : value_(&value), file_(std::move(file)), path_(std::move(path)), text_(std::move(text)) {}

  const nlohmann::json& value() const { return *value_; }
  const std::string& path() const { return path_; }
  const std::string& file() const { return file_; }

  [[noreturn]] void fail(const std::string& message) const;
  [[noreturn]] void fail_at(const std::string& key, const std::string& message) const;

  void expect_object() const;
  void expect_array() const;
  void allow_keys(const std::vector<std::string>& allowed) const;
  bool has(const std::string& key) const;

  JsonReader child(const std::string& key) const;  // required
  JsonReader element(std::size_t i) const;
  std::size_t size() const { return value_->size(); }

  std::string get_string(const std::string& key) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;
  std::int64_t get_positive_int(const std::string& key) const;
  std::int64_t get_positive_int(const std::string& key, std::int64_t fallback) const;
  double get_positive_number(const std::string& key) const;
  bool get_bool(const std::string& key, bool fallback) const;

  std::string key_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  // The line of `path` in the file (0 without the text): for errors raised outside the reader.
  int line_of(const std::string& path) const;
  const std::shared_ptr<const std::string>& text() const { return text_; }

 private:
  const nlohmann::json* value_;
  std::string file_;
  std::string path_;
  std::shared_ptr<const std::string> text_;  // the file's text, for line numbers; may be null
};

// A parsed JSON file with its text, so readers of it report lines.
struct JsonDocument {
  std::string file;
  std::shared_ptr<const std::string> text;
  nlohmann::json value;

  JsonReader reader() const { return JsonReader(value, file, "", text); }
};

// Reads and parses a JSON file; InputError naming the file (and, for a syntax error, the line) when
// it is missing or malformed.
JsonDocument read_json_document(const std::string& path);
nlohmann::json read_json_file(const std::string& path);  // read_json_document(path).value

}  // namespace overlap::calibrate
