#pragma once
// What the validate --papers rows that hold a printed range share (FlashOverlap Sec. 6.3's 1.05-1.13x
// end-to-end training speedups: the training-step rows and the Mixtral-8x7B MoE rows): each row is a
// bound, left out of the median, judged ok exactly when its prediction lies on the printed side, never
// `explained` away, and it names the shipped file it ran.
#include <string>

#include <catch2/catch.hpp>

#include "tools/papers.hpp"

namespace overlap::test {

inline void check_range_row(const overlap::tools::papers::PaperRow& r, double low, double high,
                            const std::string& file) {
  using overlap::tools::papers::Compare;
  using overlap::tools::papers::Verdict;
  CHECK_FALSE(r.ratio);  // bounds, not values: left out of the median
  if (r.compare == Compare::at_least) {
    CHECK(r.published == low);
    CHECK((r.verdict == Verdict::ok) == (r.predicted >= low));
  } else {
    REQUIRE(r.compare == Compare::at_most);
    CHECK(r.published == high);
    CHECK((r.verdict == Verdict::ok) == (r.predicted <= high));
  }
  // A miss is never `explained` away: its cause is not shown to lie outside our model.
  CHECK(r.verdict != Verdict::explained);
  CHECK(r.config.find(file) != std::string::npos);
}

}  // namespace overlap::test
