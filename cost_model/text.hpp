#pragma once
// Text helpers the input readers share.
#include <cctype>
#include <string>

namespace overlap {

// `s` without leading and trailing white space (std::isspace: blanks, tabs, line ends).
inline std::string trim(const std::string& s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

}  // namespace overlap
