#include "tools/trace_flags.hpp"

#include <algorithm>
#include <cmath>
#include <regex>
#include <stdexcept>

#include <fmt/format.h>

namespace overlap::tools {

sim::TraceLevel parse_trace_level(const std::string& text) {
  if (text == "kernel") return sim::TraceLevel::kernel;
  if (text == "cta") return sim::TraceLevel::cta;
  throw std::invalid_argument(fmt::format("must be kernel or cta (got '{}')", text));
}

namespace {

int parse_rank(const std::string& text, const std::string& whole) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
    throw std::invalid_argument(fmt::format("'{}' in '{}' is not a rank (a number from 0)", text, whole));
  return std::stoi(text);
}

}  // namespace

std::vector<int> parse_trace_ranks(const std::string& text) {
  std::vector<int> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string part = text.substr(pos, comma - pos);
    const std::size_t dash = part.find('-');
    if (dash == std::string::npos) {
      out.push_back(parse_rank(part, text));
    } else {
      const int lo = parse_rank(part.substr(0, dash), text);
      const int hi = parse_rank(part.substr(dash + 1), text);
      if (hi < lo) throw std::invalid_argument(fmt::format("range '{}' in '{}' runs backwards", part, text));
      if (hi - lo > 1'000'000) throw std::invalid_argument(fmt::format("range '{}' is too long", part));
      for (int r = lo; r <= hi; ++r) out.push_back(r);
    }
    pos = comma + 1;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::pair<Ps, Ps> parse_trace_window(const std::string& text) {
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos || text.find(':', colon + 1) != std::string::npos)
    throw std::invalid_argument(fmt::format("must be START_US:END_US, e.g. 100:250 (got '{}')", text));
  auto number = [&](const std::string& s, double empty) {
    if (s.empty()) return empty;
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() || !std::isfinite(v) || v < 0 || v > 1e12)
      throw std::invalid_argument(
          fmt::format("'{}' in '{}' is not a time in microseconds (a number from 0 to 1e12)", s, text));
    return v;
  };
  const double start = number(text.substr(0, colon), 0.0);
  const double end = number(text.substr(colon + 1), -1.0);
  if (end >= 0 && end <= start)
    throw std::invalid_argument(fmt::format("the window '{}' must end after it starts", text));
  return {ps_from_us(start), end < 0 ? Ps{-1} : ps_from_us(end)};
}

traces::KernelClassifier kernel_classifier(const std::vector<std::string>& comm_patterns,
                                           const std::vector<std::string>& compute_patterns) {
  for (const auto* list : {&comm_patterns, &compute_patterns})
    for (const std::string& p : *list) {
      if (p.empty()) throw std::invalid_argument("an empty pattern matches every kernel: give a regular expression");
      try {
        std::regex check(p, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        throw std::invalid_argument(fmt::format("'{}' is not a regular expression ({})", p, e.what()));
      }
    }
  return traces::KernelClassifier(comm_patterns, compute_patterns);
}

}  // namespace overlap::tools
