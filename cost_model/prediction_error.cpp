#include "cost_model/prediction_error.hpp"

#include <cmath>

namespace overlap {

double relative_error(double predicted, double reference) { return (predicted - reference) / std::abs(reference); }

double relative_error_pct(double predicted, double reference) {
  return 100.0 * (predicted - reference) / std::abs(reference);
}

bool within_tolerance(double error_pct, double tolerance_pct) { return std::abs(error_pct) <= tolerance_pct; }

ErrorJudgement judge_prediction(double predicted, double reference, double tolerance_pct, Compare compare,
                                double zero_tolerance) {
  ErrorJudgement j;
  if (!std::isfinite(predicted)) {
    j.error_pct = 100;
    return j;
  }
  if (reference == 0) {
    j.within = std::abs(predicted) <= zero_tolerance;
    j.error_pct = j.within ? 0 : 100;
    return j;
  }
  const double rel = relative_error_pct(predicted, reference);
  switch (compare) {
    case Compare::value:
      j.error_pct = rel;
      j.within = within_tolerance(rel, tolerance_pct);
      break;
    case Compare::at_least:
      j.error_pct = predicted >= reference ? 0 : rel;
      j.within = predicted >= reference * (1 - tolerance_pct / 100);
      break;
    case Compare::at_most:
      j.error_pct = predicted <= reference ? 0 : rel;
      j.within = predicted <= reference * (1 + tolerance_pct / 100);
      break;
  }
  return j;
}

}  // namespace overlap
