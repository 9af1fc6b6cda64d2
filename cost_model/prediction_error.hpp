#pragma once
// How far a prediction lies from its reference (a measured time or a published figure) and whether
// that is within a tolerance: the one rule every predicted-against-measured comparison applies
// (`validate`'s rows, `validate --papers`' rows, `trace --hardware`'s kernel groups, `profile fit`'s
// check of the fitted profile against the traces). The statistics over many such errors are
// cost_model/statistics.hpp's. Standard library only.

namespace overlap {

// (predicted - reference) / |reference|, a fraction (`trace --hardware` reports it so).
double relative_error(double predicted, double reference);

// The same error in percent: 100 (predicted - reference) / |reference|. Written with the factor
// first, not as 100 x relative_error(), so each report keeps the digits it has always printed.
double relative_error_pct(double predicted, double reference);

// How a prediction is held to its reference: as a value (|error| within the tolerance), or as a bound
// the reference states ("at least", "at most": a miss only on the wrong side, by more than the tolerance).
enum class Compare { value, at_least, at_most };

// |error_pct| <= tolerance_pct.
bool within_tolerance(double error_pct, double tolerance_pct);

struct ErrorJudgement {
  double error_pct = 0;  // relative_error_pct; 0 on the right side of a bound
  bool within = false;
};

// A prediction judged against its reference. A prediction that is not finite is 100 % off. A
// reference of zero ("no exposed time") gives a relative error no meaning: it is held to the absolute
// `zero_tolerance` instead and reported as 0 % or 100 %.
ErrorJudgement judge_prediction(double predicted, double reference, double tolerance_pct,
                                Compare compare = Compare::value, double zero_tolerance = 0);

}  // namespace overlap
