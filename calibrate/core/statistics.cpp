#include "calibrate/core/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "cost_model/statistics.hpp"

namespace overlap::calibrate {

SampleStats summarize(std::vector<double> samples) {
  if (samples.empty()) throw std::invalid_argument("summarize: no samples");
  for (double s : samples) {
    if (!std::isfinite(s) || s <= 0) {
      throw std::invalid_argument("summarize: sample " + std::to_string(s) + " is not a positive duration");
    }
  }
  std::sort(samples.begin(), samples.end());  // the mean sums in ascending order
  const std::size_t n = samples.size();
  SampleStats st;
  st.count = static_cast<int>(n);
  st.median = median(samples);
  st.min = samples.front();
  st.max = samples.back();
  st.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(n);
  st.spread = st.max / st.min;
  return st;
}

double median_of(std::vector<double> samples) { return summarize(std::move(samples)).median; }

}  // namespace overlap::calibrate
