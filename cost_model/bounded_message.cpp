#include "cost_model/bounded_message.hpp"

#include <algorithm>

namespace overlap {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
// A UTF-8 continuation byte (10xxxxxx): not the start of a character.
bool continues(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

std::size_t characters(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += continues(c) ? 0 : 1;
  return n;
}

// The byte offset of the first `chars` characters of `s` (never inside a character).
std::size_t prefix_bytes(std::string_view s, std::size_t chars) {
  std::size_t i = 0;
  for (std::size_t seen = 0; i < s.size(); ++i) {
    if (!continues(s[i])) {
      if (seen == chars) break;
      ++seen;
    }
  }
  return i;
}

// The byte offset where the last `chars` characters of `s` begin.
std::size_t suffix_start(std::string_view s, std::size_t chars) {
  std::size_t i = s.size();
  for (std::size_t seen = 0; i > 0 && seen < chars;) {
    --i;
    if (!continues(s[i])) ++seen;
  }
  return i;
}

// 9999880 -> "9,999,880".
std::string grouped(std::size_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string more(std::size_t n) { return " ... (" + grouped(n) + " more character" + (n == 1 ? "" : "s") + ")"; }

}  // namespace

std::string bounded_message(std::string_view text) {
  // A NUL (a YAML "\0" escape, a byte of a binary file) would end the message at the C string that
  // what() returns, hiding the rest: it is written as the two characters \0.
  std::string without_nul;
  if (text.find('\0') != std::string_view::npos) {
    for (char c : text) {
      if (c == '\0')
        without_nul.append("\\0");
      else
        without_nul.push_back(c);
    }
    text = without_nul;
  }
  std::string out;
  out.reserve(std::min<std::size_t>(text.size(), kMessageHeadChars + kMessageTailChars + 64));
  for (std::size_t i = 0; i < text.size();) {
    if (is_space(text[i])) {
      out += text[i++];
      continue;
    }
    std::size_t end = i;
    while (end < text.size() && !is_space(text[end])) ++end;
    const std::string_view word = text.substr(i, end - i);
    const std::size_t limit = word.find('/') != std::string_view::npos ? kQuotedPathChars : kQuotedChars;
    const std::size_t n = characters(word);
    if (n > limit) {
      out.append(word.substr(0, prefix_bytes(word, limit)));
      out.append(more(n - limit));
    } else {
      out.append(word);
    }
    i = end;
  }
  const std::size_t n = characters(out);
  // The slack leaves room for the count, so a message cut once is not cut again.
  if (n <= kMessageHeadChars + kMessageTailChars + 100) return out;
  // The middle goes; the end usually says what is expected, so it stays.
  const std::size_t head = prefix_bytes(out, kMessageHeadChars);
  const std::size_t tail = suffix_start(out, kMessageTailChars);
  return out.substr(0, head) + more(n - kMessageHeadChars - kMessageTailChars) + " ... " + out.substr(tail);
}

std::string bounded_list(const std::vector<std::string>& items, std::size_t max_items) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < max_items; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > max_items) out += (out.empty() ? "" : " ") + std::string("and ") + grouped(items.size() - max_items) + " more";
  return out;
}

}  // namespace overlap
