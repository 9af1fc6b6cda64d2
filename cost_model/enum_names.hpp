#pragma once
// One table of names per enum: a row {value, "name"} serves both directions (value -> name for
// output, name -> value for input), so the two cannot drift apart. Header-only on purpose: the
// CUDA kernels library compiles sim/schemes/commfuse_schedule.cpp without linking cost_model.
//   constexpr std::array kColourNames{std::pair{Colour::red, "red"}, std::pair{Colour::blue, "blue"}};
//   static_assert(rows_in_enum_order(kColourNames));
//   name_of(kColourNames, Colour::red) is "red"; parse_name(kColourNames, "blue") is Colour::blue.
#include <array>
#include <cctype>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace overlap {

template <typename E, std::size_t N>
using EnumNames = std::array<std::pair<E, const char*>, N>;

// Row i names the enumerator of value i: every value up to the last row has exactly one name.
template <typename E, std::size_t N>
constexpr bool rows_in_enum_order(const EnumNames<E, N>& table) {
  for (std::size_t i = 0; i < N; ++i)
    if (static_cast<std::size_t>(table[i].first) != i) return false;
  return true;
}

// The name of `v`; "?" for a value the table lacks (an integer cast to the enum).
template <typename E, std::size_t N>
constexpr const char* name_of(const EnumNames<E, N>& table, E v) {
  for (const auto& [value, name] : table)
    if (value == v) return name;
  return "?";
}

// How parse_name compares: exactly, or ignoring ASCII case (how NCCL reads NCCL_ALGO / NCCL_PROTO).
enum class NameCase { exact, ignore_ascii_case };

inline bool equal_ignoring_ascii_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

// The value whose name is `s`; nullopt for any other text.
template <typename E, std::size_t N>
std::optional<E> parse_name(const EnumNames<E, N>& table, std::string_view s, NameCase c = NameCase::exact) {
  for (const auto& [value, name] : table)
    if (c == NameCase::exact ? s == name : equal_ignoring_ascii_case(s, name)) return value;
  return std::nullopt;
}

}  // namespace overlap
