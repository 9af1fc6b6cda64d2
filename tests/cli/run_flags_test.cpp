// The values of `run --format` and `run --trace-level` (tools/cmd_run.hpp): each accepted spelling
// maps to its enum, anything else is refused with a message naming what is allowed.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "tools/cmd_run.hpp"

using overlap::sim::ReportFormat;
using overlap::sim::TraceLevel;
using overlap::tools::parse_report_format;
using overlap::tools::parse_trace_level;

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
