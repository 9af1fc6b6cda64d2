#include "cost_model/strict_json.hpp"

#include <set>
#include <vector>

#include <fmt/format.h>

#include "cost_model/input_error.hpp"
#include "cost_model/json_lines.hpp"

namespace overlap {
namespace {

using nlohmann::json;

// Where the parser is: one frame per open object or array, with the member or element it reads.
struct Frame {
  bool array = false;
  std::set<std::string> keys;  // an object's members so far
  std::string key;             // the member being read
  std::size_t index = 0;       // an array's elements so far
  bool has_key = false;
};

std::string path_of(const std::vector<Frame>& frames) {
  std::string out;
  for (const Frame& f : frames) {
    if (f.array) {
      out += fmt::format("[{}]", f.index);
    } else if (f.has_key) {
      out += (out.empty() ? "" : ".") + f.key;
    }
  }
  return out;
}

void element_done(std::vector<Frame>& frames) {
  if (!frames.empty() && frames.back().array) ++frames.back().index;
}

}  // namespace

json parse_strict_json(const std::string& text, const std::string& file, const std::string& what) {
  std::vector<Frame> frames;
  const json::parser_callback_t track = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        frames.push_back(Frame{event == json::parse_event_t::array_start, {}, {}, 0, false});
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!frames.empty()) frames.pop_back();
        element_done(frames);
        break;
      case json::parse_event_t::key: {
        Frame& f = frames.back();
        f.key = parsed.get<std::string>();
        f.has_key = true;
        if (!f.keys.insert(f.key).second) {
          const std::string path = path_of(frames);
          throw InputError(file, json_line_of(text, path), path,
                           "duplicate key: the object has this member twice (a JSON reader keeps one of them "
                           "silently); remove one");
        }
        break;
      }
      case json::parse_event_t::value:
        element_done(frames);
        break;
    }
    return true;
  };
  try {
    return json::parse(text, track);
  } catch (const json::parse_error& e) {
    throw InputError(file, line_of_byte(text, e.byte), path_of(frames), fmt::format("{}: {}", what, e.what()));
  } catch (const json::out_of_range& e) {
    // 406: a number literal beyond a double (1e999, or an integer of 400 digits) while that value was read.
    const std::string path = path_of(frames);
    throw InputError(file, json_line_of(text, path), path,
                     fmt::format("a number beyond the range of a double (about 1.8e308): {}", e.what()));
  } catch (const json::exception& e) {
    throw InputError(file, 0, path_of(frames), fmt::format("{}: {}", what, e.what()));
  }
}

}  // namespace overlap
