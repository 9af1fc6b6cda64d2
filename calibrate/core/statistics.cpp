#include "calibrate/core/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace overlap::calibrate {

SampleStats summarize(std::vector<double> samples) {
  if (samples.empty()) throw std::invalid_argument("summarize: no samples");
  for (double s : samples) {
    if (!std::isfinite(s) || s <= 0) {
      throw std::invalid_argument("summarize: sample " + std::to_string(s) + " is not a positive duration");
    }
  }
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  SampleStats st;
  st.count = static_cast<int>(n);
  st.median = n % 2 == 1 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  st.min = samples.front();
  st.max = samples.back();
  st.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(n);
  st.spread = st.max / st.min;
  return st;
}

double median_of(std::vector<double> samples) { return summarize(std::move(samples)).median; }

double median_of_values(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("median_of_values: no values");
  for (double v : values) {
    if (!std::isfinite(v)) throw std::invalid_argument("median_of_values: a value is not finite");
  }
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace overlap::calibrate
