// json_line_of: the line of a key path in JSON text, for errors about JSON input. Every expected line
// below is counted by hand from the text above it.
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cost_model/json_lines.hpp"

using overlap::json_line_of;
using overlap::line_of_byte;

namespace {

const std::string kDoc =
    "{\n"                                        // 1
    "  \"schema\": \"x/1\",\n"                   // 2
    "  \"runs\": [\n"                            // 3
    "    {\"id\": \"a\", \"m\": 1},\n"           // 4
    "    {\n"                                    // 5
    "      \"id\": \"b {[,\\\"]}\",\n"           // 6: braces, brackets, a comma and an escaped quote in a string
    "      \"params\": {\"groups\": [16,\n"      // 7
    "                  48]},\n"                  // 8
    "      \"m\": 2\n"                           // 9
    "    }\n"                                    // 10
    "  ],\n"                                     // 11
    "  \"empty\": {}, \"none\": [],\n"           // 12
    "  \"last\": null\n"                         // 13
    "}\n";

}  // namespace

TEST_CASE("json_line_of: members at their key's line, elements where they start", "[json_lines]") {
  CHECK(json_line_of(kDoc, "") == 1);
  CHECK(json_line_of(kDoc, "schema") == 2);
  CHECK(json_line_of(kDoc, "runs") == 3);
  CHECK(json_line_of(kDoc, "runs[0]") == 4);
  CHECK(json_line_of(kDoc, "runs[0].m") == 4);
  CHECK(json_line_of(kDoc, "runs[1]") == 5);
  CHECK(json_line_of(kDoc, "runs[1].id") == 6);
  CHECK(json_line_of(kDoc, "runs[1].params") == 7);
  CHECK(json_line_of(kDoc, "runs[1].params.groups[0]") == 7);
  CHECK(json_line_of(kDoc, "runs[1].params.groups[1]") == 8);
  // The string on line 6 holds braces, brackets, a comma and an escaped quote: none of them
  // derails the scan, so the key after it is still found on its own line.
  CHECK(json_line_of(kDoc, "runs[1].m") == 9);
  CHECK(json_line_of(kDoc, "empty") == 12);
  CHECK(json_line_of(kDoc, "none") == 12);
  CHECK(json_line_of(kDoc, "last") == 13);
}

TEST_CASE("json_line_of: a missing key is reported at its deepest ancestor", "[json_lines]") {
  CHECK(json_line_of(kDoc, "runs[1].params.wave_sms") == 7);  // params opens on line 7
  CHECK(json_line_of(kDoc, "runs[1].workload.m") == 5);        // runs[1] opens on line 5
  CHECK(json_line_of(kDoc, "runs[7]") == 3);                   // no eighth run: the list's line
  CHECK(json_line_of(kDoc, "nothing") == 1);                   // the document itself
  // A path that shares a prefix of characters but not of keys is not an ancestor: "run" is not
  // "runs", so "runs[0].m" cannot be found under it.
  CHECK(json_line_of("{\n\"run\": {\n\"m\": 1}}", "runs[0].m") == 1);
}

TEST_CASE("json_line_of: escaped keys, compact text, empty and broken text", "[json_lines]") {
  // "a.b" spelled with an escape, and a key beyond the BMP as a surrogate pair (U+1F600).
  const std::string escaped = "{\n\"\\u0061\":\n 1,\n\"\\ud83d\\ude00\": 2}";
  CHECK(json_line_of(escaped, "a") == 2);
  CHECK(json_line_of(escaped, "\xF0\x9F\x98\x80") == 4);
  // The whole document on one line: every path is on line 1.
  const std::string compact = nlohmann::json{{"a", {{"b", {1, 2, 3}}}}}.dump();
  CHECK(json_line_of(compact, "a.b[2]") == 1);
  // dump(2) puts each element on its own line: a, b, then 1, 2, 3 on lines 4 to 6.
  const std::string pretty = nlohmann::json{{"a", {{"b", {1, 2, 3}}}}}.dump(2);
  CHECK(json_line_of(pretty, "a.b[0]") == 4);
  CHECK(json_line_of(pretty, "a.b[2]") == 6);
  CHECK(json_line_of("", "a") == 0);
  CHECK(json_line_of("   \n  ", "a") == 0);
  // Truncated text: the lines found before the break still count.
  CHECK(json_line_of("{\n\"a\": {\n\"b\": [1,", "a.b[3]") == 3);
  CHECK(json_line_of("{\n\"a\": {\n\"b\" 7", "a.b") == 2);
}

TEST_CASE("json_line_of: nesting deeper than any call stack is scanned iteratively", "[json_lines]") {
  std::string deep = "{\"a\":\n";
  std::string path = "a";
  for (int i = 0; i < 200000; ++i) {
    deep += "[";
    path += "[0]";
  }
  deep += "7";
  for (int i = 0; i < 200000; ++i) deep += "]";
  deep += "}";
  CHECK(json_line_of(deep, path) == 2);
}

TEST_CASE("line_of_byte: the line of a parse error's byte", "[json_lines]") {
  const std::string text = "{\n  \"a\": 1,\n  \"b\": }\n";
  try {
    const nlohmann::json parsed = nlohmann::json::parse(text);
    FAIL("the text should not parse, got " << parsed.dump());
  } catch (const nlohmann::json::parse_error& e) {
    CHECK(line_of_byte(text, e.byte) == 3);
  }
  CHECK(line_of_byte(text, 0) == 1);
  CHECK(line_of_byte(text, 1) == 1);
  CHECK(line_of_byte(text, 3) == 2);  // the third byte read is line 2's first
  CHECK(line_of_byte(text, 1000) == 4);  // past the end: the line after the last newline
}
