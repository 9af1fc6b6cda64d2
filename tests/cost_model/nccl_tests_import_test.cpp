// nccl-tests import from hand-written samples in tests/data (text table and JSON report).
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>

#include "cost_model/input_error.hpp"
#include "cost_model/nccl_tests_import.hpp"

using namespace overlap;

TEST_CASE("busbw factors (nccl-tests doc/PERFORMANCE.md)", "[nccl_tests]") {
  CHECK(busbw_factor(CollectivePrimitive::all_reduce, 8) == Approx(1.75));
  CHECK(busbw_factor(CollectivePrimitive::reduce_scatter, 8) == Approx(0.875));
  CHECK(busbw_factor(CollectivePrimitive::all_gather, 4) == Approx(0.75));
  CHECK(busbw_factor(CollectivePrimitive::all_to_all, 2) == Approx(0.5));
  CHECK(busbw_factor(CollectivePrimitive::broadcast, 8) == Approx(1.0));
  CHECK(algbw_from_busbw(CollectivePrimitive::all_reduce, 8, 350) == Approx(200));
  CHECK(busbw_from_algbw(CollectivePrimitive::all_reduce, 8, 200) == Approx(350));
}

TEST_CASE("nccl-tests text table -> curve", "[nccl_tests]") {
  const auto r = load_nccl_tests_file(std::string(OVERLAP_SOURCE_DIR) + "/tests/data/nccl_tests_all_reduce_8xh100.txt");
  REQUIRE(r.primitive == CollectivePrimitive::all_reduce);
  CHECK(r.n_ranks == 8);
  REQUIRE(r.rows.size() == 11);
  CHECK(r.rows.front().size_bytes == 1024);
  CHECK(r.rows.front().type == "float");
  CHECK(r.rows.front().redop == "sum");
  CHECK(r.rows.front().root == -1);
  CHECK(r.rows.back().size_bytes == 1073741824);
  CHECK(r.rows.back().out_of_place->time_us == Approx(5239.58));
  CHECK(r.rows.back().in_place->time_us == Approx(5291.98));
  const BandwidthCurve c = r.curve();
  CHECK(c.time_ps(1073741824) == ps_from_us(5239.58));
  CHECK(r.curve(true).time_ps(1073741824) == ps_from_us(5291.98));
  CHECK(r.observed_busbw_factor() == Approx(busbw_factor(CollectivePrimitive::all_reduce, r.n_ranks)).epsilon(1e-3));
}

TEST_CASE("nccl-tests JSON report -> curve", "[nccl_tests]") {
  const auto r = load_nccl_tests_file(std::string(OVERLAP_SOURCE_DIR) + "/tests/data/nccl_tests_reduce_scatter_4x.json");
  CHECK(r.n_ranks == 4);
  REQUIRE(r.rows.size() == 11);
  CHECK(r.rows.front().root == -1);
  CHECK(r.observed_busbw_factor() == Approx(busbw_factor(CollectivePrimitive::reduce_scatter, 4)));
  const BandwidthCurve c = r.curve();
  CHECK(c.time_ps(1024) == ps_from_us(10.0 + 1024 * 0.75 / 300e3));
}

TEST_CASE("nccl-tests text rows that cannot be read name the line", "[nccl_tests]") {
  std::istringstream in("#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
                        "  1024  256  float  sum  -1  12.0  0.09  0.15  0  12.1  0.08  0.15  0\n"
                        "  2048  512  float  sum  -1  abc  0.09  0.15  0  12.1  0.08  0.15  0\n");
  try {
    parse_nccl_tests_text(in, "x.txt");
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK(e.line() == 3);
  }
}

TEST_CASE("nccl-tests rows: sizes must increase and times be finite (fuzz findings)", "[nccl_tests]") {
  const std::string header = "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n";
  const std::string row1 = "  1024  256  float  sum  -1  12.0  0.09  0.15  0  12.1  0.08  0.15  0\n";
  for (const char* bad : {"  1024  256  float  sum  -1  12.0  0.09  0.15  0  12.1  0.08  0.15  0\n",
                                 "   512  128  float  sum  -1  12.0  0.09  0.15  0  12.1  0.08  0.15  0\n",
                                 "  2048  512  float  sum  -1  inf  0.09  0.15  0  12.1  0.08  0.15  0\n"}) {
    std::istringstream in(header + row1 + std::string(bad));
    try {
      parse_nccl_tests_text(in, "x.txt");
      FAIL("expected InputError for: " << bad);
    } catch (const InputError& e) {
      CHECK(e.file() == "x.txt");
      CHECK(e.line() == 3);
      CHECK((e.key_path() == "size" || e.key_path() == "out-of-place"));  // (inf may not parse as a number)
    }
  }
  const nlohmann::json dup = {{"results", {{{"size", 1024}, {"out_of_place", {{"time", 1.0}, {"alg_bw", 1.0}, {"bus_bw", 1.0}}}},
                                           {{"size", 1024}, {"out_of_place", {{"time", 1.0}, {"alg_bw", 1.0}, {"bus_bw", 1.0}}}}}}};
  try {
    parse_nccl_tests_json(dup, "x.json");
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK(e.key_path() == "results[1].size");
    CHECK(e.line() == 0);  // no text given: no line
  }
  // With the report's text (as load_nccl_tests_file reads it), the line of the second row's size:
  // dump(2) writes one member a line, keys sorted, so each row takes 8 lines and the second row's
  // size (after its out_of_place block) is on line 17.
  const std::string text = dup.dump(2);
  try {
    parse_nccl_tests_json(dup, "x.json", &text);
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK(e.key_path() == "results[1].size");
    CHECK(e.line() == 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(text.rfind("\"size\"")), '\n')));
    CHECK(e.line() == 17);
  }
}

TEST_CASE("nccl-tests: no usable row is an input error when the curve is built (fuzz finding)", "[nccl_tests]") {
  std::istringstream in("#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
                        "     0    0  float  sum  -1  12.0  0.00  0.00  0  12.1  0.00  0.00  0\n");
  const NcclTestsResult r = parse_nccl_tests_text(in, "zero.txt");
  try {
    (void)r.curve();
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK(e.file() == "zero.txt");
  }
}
