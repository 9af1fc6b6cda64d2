#include "cost_model/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace overlap {

double median(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("median: no values");
  for (double v : values) {
    if (!std::isfinite(v)) throw std::invalid_argument("median: a value is not finite");
  }
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

AbsErrorFigures abs_error_figures(const std::vector<double>& errors) {
  AbsErrorFigures f;
  if (errors.empty()) return f;
  std::vector<double> abs_errors;
  abs_errors.reserve(errors.size());
  for (double e : errors) abs_errors.push_back(std::fabs(e));
  f.count = static_cast<int>(abs_errors.size());
  f.median = median(abs_errors);
  f.max = *std::max_element(abs_errors.begin(), abs_errors.end());
  return f;
}

}  // namespace overlap
