#pragma once
// Line numbers for JSON input. nlohmann::json keeps no source positions, so an error about a key of
// a JSON file (measurements.json, schemes.json, a scheme configuration list, an nccl-tests report)
// finds its line again in the file's text, the way the YAML loaders take it from yaml-cpp's marks.
// Only the error path pays for it: the text is scanned once per reported error, never while good
// input is read.
//
// Key paths are spelled as InputError prints them: members joined by '.', elements as "[i]"
// ("runs[3].workload.m", "measurements[0].time_us.median"); "" is the document itself.
#include <cstddef>
#include <string_view>

namespace overlap {

// The 1-based line where the value at `key_path` starts in `json_text` (for an object member, the
// line of its key). A path that is not in the text (a missing key) gives the line of its deepest
// ancestor that is, so "runs[3].params.groups" missing from runs[3].params points at the line that
// opens params. 0 when not even the document's first value is found (empty or non-JSON text).
int json_line_of(std::string_view json_text, std::string_view key_path);

// The 1-based line of byte offset `byte` of `text` (nlohmann's parse_error::byte is 1-based: the
// byte after the last one read; either convention lands on the same line but at a newline).
int line_of_byte(std::string_view text, std::size_t byte);

}  // namespace overlap
