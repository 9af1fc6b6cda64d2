#pragma once
// The statistics every predicted-against-measured comparison shares (`validate`, `trace --hardware`,
// `validate --papers`, the calibration's profile writer): the median, robust to a stray row or a
// stray slow repetition, and the |error| figures a comparison reports. Standard library only, so the
// device build (calibrate/ without the simulator) compiles it too.
#include <vector>

namespace overlap {

// The median of finite values: the middle one, or the mean of the two middle ones for an even count.
// Throws std::invalid_argument for no values, or a value that is not finite (NaN or infinite: no
// order would make its median mean anything).
double median(std::vector<double> values);

// The figures of a set of errors, taken as |error| (any unit: %, us, a fraction): how many, their
// median and their largest. All 0 for none, so a report of no scored rows prints zeros.
struct AbsErrorFigures {
  int count = 0;
  double median = 0;
  double max = 0;
};
AbsErrorFigures abs_error_figures(const std::vector<double>& errors);

}  // namespace overlap
