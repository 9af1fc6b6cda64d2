#include "cost_model/json_lines.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace overlap {
namespace {

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// A forward scan of JSON text that follows the key path of the value it is in. It keeps no paths:
// a value is "on" the target when its path is the target or one of its ancestors, and then its path
// is the target's first `len` characters, so each step compares only the member key or element
// index it adds. Iterative (an explicit stack) and linear in the text, so hostile nesting costs
// memory, not the call stack.
class Scanner {
 public:
  Scanner(std::string_view text, std::string_view target) : s_(text), t_(target) {}

  int run() {
    Place v{true, 0};  // the value about to start: the document, whose path "" leads everywhere
    for (;;) {
      skip_ws();
      if (i_ >= s_.size()) return best_;
      if (note(v, line_)) return line_;
      const char c = s_[i_];
      if (c == '{' || c == '[') {
        ++i_;
        stack_.push_back(Frame{v, c == '{', 0});
        skip_ws();
        if (i_ < s_.size() && s_[i_] == (c == '{' ? '}' : ']')) {
          ++i_;
          stack_.pop_back();
        } else if (!next_place(v)) {
          return best_;
        } else {
          continue;
        }
      } else if (c == '"') {
        if (!skip_string(nullptr)) return best_;
      } else {
        while (i_ < s_.size() && std::string_view(",]} \t\r\n").find(s_[i_]) == std::string_view::npos) ++i_;
      }
      // After a value: a ',' opens the next member or element, '}' / ']' closes containers.
      for (;;) {
        skip_ws();
        if (stack_.empty() || i_ >= s_.size()) return best_;
        const char d = s_[i_];
        if (d == ',') {
          ++i_;
          ++stack_.back().index;
          if (!next_place(v)) return best_;
          break;
        }
        if (d != (stack_.back().object ? '}' : ']')) return best_;
        ++i_;
        stack_.pop_back();
      }
    }
  }

 private:
  struct Place {
    bool on = false;      // its path is the target or an ancestor of it
    std::size_t len = 0;  // then: the length of its path (a prefix of the target)
  };
  struct Frame {
    Place place;
    bool object = false;
    std::int64_t index = 0;
  };

  // Records a value or member at `line` when it is on the target; true when it is the target.
  bool note(const Place& p, int line) {
    if (!p.on) return false;
    best_ = line;
    return p.len == t_.size();
  }

  // `step` (".key", "[3]", or "key" under the document) appended to `parent`.
  Place child(const Place& parent, std::string_view step) const {
    if (!parent.on || t_.size() < parent.len + step.size() || t_.substr(parent.len, step.size()) != step) return {};
    const std::size_t len = parent.len + step.size();
    if (len < t_.size() && t_[len] != '.' && t_[len] != '[') return {};  // "run" is not "runs"
    return Place{true, len};
  }

  // Reads the next member's key and ':' (object) or names the next element (array) into `v`.
  bool next_place(Place& v) {
    const Frame& f = stack_.back();
    if (!f.object) {
      v = child(f.place, "[" + std::to_string(f.index) + "]");
      return true;
    }
    skip_ws();
    if (i_ >= s_.size() || s_[i_] != '"') return false;
    const int key_line = line_;
    std::string key = f.place.len == 0 ? "" : ".";
    if (!skip_string(&key)) return false;
    skip_ws();
    if (i_ >= s_.size() || s_[i_] != ':') return false;
    ++i_;
    v = child(f.place, key);
    // A member is reported at its key's line (where an editor shows "m": 0); once the target is
    // found the scan ends (run() returns best_ at the end of the text).
    if (note(v, key_line)) i_ = s_.size();
    return true;
  }
  // At an opening quote: moves past the string, decoding it into `out` when given.
  bool skip_string(std::string* out) {
    ++i_;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c == '\\' && i_ + 1 < s_.size()) {
        const char e = s_[i_ + 1];
        if (e == 'u' && i_ + 5 < s_.size()) {
          std::uint32_t cp = hex4(i_ + 2);
          i_ += 6;
          // A surrogate pair spells one code point beyond the BMP (what the parser's key holds).
          if (cp >= 0xD800 && cp < 0xDC00 && i_ + 5 < s_.size() && s_[i_] == '\\' && s_[i_ + 1] == 'u') {
            const std::uint32_t low = hex4(i_ + 2);
            if (low >= 0xDC00 && low < 0xE000) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
              i_ += 6;
            }
          }
          if (out) append_utf8(*out, cp);
          continue;
        }
        if (out) {
          static constexpr std::string_view from = "\"\\/bfnrt", to = "\"\\/\b\f\n\r\t";
          const auto k = from.find(e);
          out->push_back(k == std::string_view::npos ? e : to[k]);
        }
        i_ += 2;
        continue;
      }
      if (c == '\n') ++line_;
      if (out) out->push_back(c);
      ++i_;
    }
    return false;
  }

  std::uint32_t hex4(std::size_t at) const {
    std::uint32_t v = 0;
    for (char h : s_.substr(at, 4)) {
      const auto digit = std::string_view("0123456789abcdef").find(static_cast<char>(h | 0x20));
      v = v * 16 + static_cast<std::uint32_t>(digit == std::string_view::npos ? 0 : digit);
    }
    return v;
  }

  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r' || s_[i_] == '\n')) {
      if (s_[i_] == '\n') ++line_;
      ++i_;
    }
  }

  std::string_view s_;
  std::string_view t_;
  std::size_t i_ = 0;
  int line_ = 1;
  int best_ = 0;
  std::vector<Frame> stack_;
};

}  // namespace

int json_line_of(std::string_view json_text, std::string_view key_path) {
  return Scanner(json_text, key_path).run();
}

int line_of_byte(std::string_view text, std::size_t byte) {
  const std::size_t end = std::min(text.size(), byte > 0 ? byte - 1 : 0);
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
}

}  // namespace overlap
