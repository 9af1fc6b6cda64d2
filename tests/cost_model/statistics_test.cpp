// The one median and |error| summary every predicted-against-measured comparison uses
// (cost_model/statistics.hpp). Every expected value is exact: the inputs are small integers or
// halves, so the sort and the mean of the two middle values round nothing.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "cost_model/statistics.hpp"

using overlap::abs_error_figures;
using overlap::median;

TEST_CASE("median: the middle value, or the mean of the two middle ones", "[statistics]") {
  CHECK(median({5.0, 1.0, 3.0}) == 3.0);
  CHECK(median({4.0, 1.0, 2.0, 10.0}) == 3.0);
  CHECK(median({2.5}) == 2.5);
  CHECK(median({-1.0, 0.0, 4.0}) == 0.0);  // any finite values: fitted coefficients may be <= 0
  CHECK(median({-3.0, -1.0}) == -2.0);
}

TEST_CASE("median refuses what has no median", "[statistics]") {
  CHECK_THROWS_AS(median({}), std::invalid_argument);
  CHECK_THROWS_AS(median({1.0, std::nan("")}), std::invalid_argument);
  CHECK_THROWS_AS(median({1.0, std::numeric_limits<double>::infinity()}), std::invalid_argument);
}

TEST_CASE("abs_error_figures: count, median and max of |error|", "[statistics]") {
  const auto f = abs_error_figures({-4.0, 1.0, -2.0, 10.0});
  CHECK(f.count == 4);
  CHECK(f.median == 3.0);  // |errors| 1, 2, 4, 10: the mean of 2 and 4
  CHECK(f.max == 10.0);
  const auto none = abs_error_figures({});
  CHECK(none.count == 0);
  CHECK(none.median == 0.0);
  CHECK(none.max == 0.0);
  CHECK_THROWS_AS(abs_error_figures({1.0, std::nan("")}), std::invalid_argument);
}
