#pragma once
// A JSON file read as strictly as the YAML inputs (design.md "Scenario files": unknown or repeated
// keys and invalid values are errors naming the file, the line and the key). nlohmann::json keeps
// the last of two equal keys of an object silently (RFC 8259 section 4 leaves duplicate names'
// meaning to the reader) and throws its own out_of_range for a number beyond a double (1e999): both
// become an InputError naming the file and the key path, also in keys the reader never uses.
#include <string>

#include <nlohmann/json.hpp>

namespace overlap {

// Parses `text` (the contents of `file`). Throws InputError(file, line, key path, ...) for text that
// is not JSON, a key repeated in one object ("a.b": both spellings of the same member), and a number
// that overflows a double. Key paths are spelled as cost_model/json_lines.hpp spells them ("a.b[2].c").
// `what` names the kind of file in the not-JSON message ("not a model config.json", "not valid JSON").
nlohmann::json parse_strict_json(const std::string& text, const std::string& file, const std::string& what);

}  // namespace overlap
