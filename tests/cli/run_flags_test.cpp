// The values of `run --format` (tools/cmd_run.hpp) and run's trace flags (tools/trace_flags.hpp): each accepted spelling
// maps to its enum, anything else is refused with a message naming what is allowed.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <utility>
#include <vector>

#include "tools/cmd_run.hpp"

using overlap::sim::ReportFormat;
using overlap::sim::TraceLevel;
using overlap::tools::parse_report_format;
using overlap::Ps;
using overlap::tools::parse_trace_level;
using overlap::tools::parse_trace_ranks;
using overlap::tools::parse_trace_window;

TEST_CASE("run --format values parse; others are refused", "[cli][report]") {
  CHECK(parse_report_format("table") == ReportFormat::table);
  CHECK(parse_report_format("json") == ReportFormat::json);
  CHECK(parse_report_format("csv") == ReportFormat::csv);
  for (const char* bad : {"", "xml", "JSON", "csv "}) CHECK_FALSE(parse_report_format(bad).has_value());
}

TEST_CASE("run --trace-level values parse, and a bad one says what is allowed", "[cli][trace]") {
  CHECK(parse_trace_level("kernel") == TraceLevel::kernel);
  CHECK(parse_trace_level("cta") == TraceLevel::cta);
  CHECK_THROWS_WITH(parse_trace_level("warp"), Catch::Contains("kernel or cta"));
  CHECK_THROWS_AS(parse_trace_level(""), std::invalid_argument);
}

TEST_CASE("trace flag values parse, and bad ones say what is wrong", "[cli][trace]") {
  CHECK(parse_trace_ranks("0,3-5") == std::vector<int>{0, 3, 4, 5});
  CHECK(parse_trace_ranks("5,1,1") == std::vector<int>{1, 5});
  for (const char* bad : {"", "a", "1,", "-1", "5-3", "1-", "1--2", "99999999999"})
    CHECK_THROWS_AS(parse_trace_ranks(bad), std::invalid_argument);
  CHECK(parse_trace_window("1.5:2") == std::pair<Ps, Ps>{1'500'000, 2'000'000});
  CHECK(parse_trace_window("100:") == std::pair<Ps, Ps>{100'000'000, -1});
  CHECK(parse_trace_window(":7") == std::pair<Ps, Ps>{0, 7'000'000});
  for (const char* bad : {"5", "10:5", "5:5", "nan:1", "0:inf", "-1:5", "a:b", "1:2:3", "1e300:1e301"})
    CHECK_THROWS_AS(parse_trace_window(bad), std::invalid_argument);
}
