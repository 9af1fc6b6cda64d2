#pragma once
// Messages are bounded whatever the input holds (docs/reference/bad-input.md "Bounded messages"): a
// value quoted from the input shows at most kQuotedChars characters and counts the rest, so a 10 MB
// line gives a one-line message, and a whole message keeps its start and its end. InputError
// (cost_model/input_error.hpp) bounds its file, key and message this way; the CLI bounds every other
// message and warning it prints with bounded_message, and long lists with bounded_list.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace overlap {

// A word (a run of characters without white space) longer than this is cut there and the rest
// counted: "aaaa ... (9,999,880 more characters)". A line's worth.
inline constexpr std::size_t kQuotedChars = 120;
// A word that names a file (it has a '/') may be as long as a path can be (Linux's PATH_MAX), so a
// message still names the file it is about.
inline constexpr std::size_t kQuotedPathChars = 4096;
// A whole message longer than kMessageHeadChars + kMessageTailChars (and room for the count) keeps
// its first and last characters and counts the middle: the end usually says what was expected. The
// head holds a whole path (kQuotedPathChars) with the words before it.
inline constexpr std::size_t kMessageHeadChars = 4500;
inline constexpr std::size_t kMessageTailChars = 500;
// Items a list in a message or warning shows before "and N more".
inline constexpr std::size_t kListedItems = 20;

// `text` with every NUL written as \0, every over-long word cut and counted, then cut in the middle
// when still too long.
// Cuts fall between UTF-8 characters; counts are of characters (code points). Idempotent.
std::string bounded_message(std::string_view text);
// At most `max_items` of `items` joined with ", ", then "and N more" for the rest.
std::string bounded_list(const std::vector<std::string>& items, std::size_t max_items = kListedItems);

}  // namespace overlap
