#pragma once
// Summary statistics of repeated timings, the way nccl-tests-style drivers report them: every
// benchmark is run `repetitions` times after a warm-up, and what the profile uses is the median
// (robust to a stray slow launch); the spread max/min says how noisy the measurement was
// (design.md "Calibration and validation": "median and spread recorded"). The median itself is
// the one every comparison uses (cost_model/statistics.hpp).
#include <vector>

namespace overlap::calibrate {

struct SampleStats {
  int count = 0;
  double median = 0;  // the middle sample; the mean of the two middle ones for an even count
  double min = 0;
  double max = 0;
  double mean = 0;
  double spread = 0;  // max / min (1 = no spread); samples are durations, so min > 0
};

// Throws std::invalid_argument for no samples, or a sample that is not finite and positive (a
// duration of 0 means the timer did not see the work: never a valid measurement).
SampleStats summarize(std::vector<double> samples);

// The median alone (same rules as summarize()). For values that are not durations (fitted
// coefficients may be 0 or negative) use overlap::median.
double median_of(std::vector<double> samples);

}  // namespace overlap::calibrate
