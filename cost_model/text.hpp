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

// `s` in ASCII lower case (kernel names, dtype names: ASCII by construction).
inline std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace overlap
