// The one judge of a prediction against its reference (cost_model/prediction_error.hpp), which
// `validate`, `validate --papers` and `trace --hardware` all call. Every expected value is exact: the
// inputs are small integers whose differences and quotients are powers of two or exact decimals
// of them (1/2, 1/4), so no division rounds.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "cost_model/prediction_error.hpp"

using overlap::Compare;
using overlap::judge_prediction;
using overlap::relative_error;
using overlap::relative_error_pct;
using overlap::within_tolerance;

TEST_CASE("relative error: (predicted - reference) / |reference|, as a fraction and in percent", "[prediction_error]") {
  CHECK(relative_error(3, 2) == 0.5);
  CHECK(relative_error(3, 4) == -0.25);
  CHECK(relative_error_pct(3, 2) == 50.0);
  CHECK(relative_error_pct(3, 4) == -25.0);
  // A negative reference (a published reduction) keeps the sign of predicted - reference.
  CHECK(relative_error_pct(-3, -4) == 25.0);
}

TEST_CASE("within_tolerance holds |error| to the tolerance, the edge included", "[prediction_error]") {
  CHECK(within_tolerance(5, 5));
  CHECK(within_tolerance(-5, 5));
  CHECK_FALSE(within_tolerance(5.5, 5));
  CHECK_FALSE(within_tolerance(std::nan(""), 5));
}

TEST_CASE("judge_prediction: a value, a bound, a zero reference and a prediction that is not finite",
          "[prediction_error]") {
  const auto v = judge_prediction(2.5, 2, 25);
  CHECK(v.error_pct == 25.0);
  CHECK(v.within);
  CHECK_FALSE(judge_prediction(2.5, 2, 24).within);

  // A bound misses only on its wrong side, and by more than the tolerance.
  const auto above = judge_prediction(8, 4, 0, Compare::at_least);
  CHECK(above.error_pct == 0);
  CHECK(above.within);
  const auto below = judge_prediction(3, 4, 25, Compare::at_least);
  CHECK(below.error_pct == -25.0);
  CHECK(below.within);
  CHECK_FALSE(judge_prediction(3, 4, 24, Compare::at_least).within);
  CHECK(judge_prediction(1, 4, 0, Compare::at_most).error_pct == 0);
  CHECK_FALSE(judge_prediction(5, 4, 24, Compare::at_most).within);
  CHECK(judge_prediction(5, 4, 25, Compare::at_most).within);

  // A zero reference: an absolute tolerance, reported as 0 % or 100 %.
  CHECK(judge_prediction(0.25, 0, 5, Compare::value, 0.5).error_pct == 0);
  CHECK(judge_prediction(0.25, 0, 5, Compare::value, 0.5).within);
  CHECK(judge_prediction(1, 0, 5, Compare::value, 0.5).error_pct == 100);
  CHECK_FALSE(judge_prediction(1, 0, 5, Compare::value, 0.5).within);

  const auto inf = judge_prediction(std::numeric_limits<double>::infinity(), 2, 1000);
  CHECK(inf.error_pct == 100);
  CHECK_FALSE(inf.within);
}
