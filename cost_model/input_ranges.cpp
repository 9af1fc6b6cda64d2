#include "cost_model/input_ranges.hpp"

#include <cmath>

#include <fmt/format.h>

namespace overlap {
namespace {

std::string number_text(double v, bool integer) {
  if (integer && std::fabs(v) < 9.0e15) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{:g}", v);
}

}  // namespace

std::string range_text(const InputRange& r) {
  std::string out = fmt::format("[{}, {}]", number_text(r.min, r.integer), number_text(r.max, r.integer));
  if (!r.unit.empty()) out += fmt::format(" {}", r.unit);
  return out;
}

std::optional<std::string> range_violation(const InputRange& r, double value, const std::string& got_text) {
  const bool inside = std::isfinite(value) && value >= r.min && value <= r.max &&
                      (!r.integer || std::floor(value) == value);
  if (inside) return std::nullopt;
  const std::string got = got_text.empty() ? number_text(value, r.integer) : got_text;
  return fmt::format("must be {}in {} (got {}): {}", r.integer ? "an integer " : "", range_text(r), got, r.why);
}

}  // namespace overlap
