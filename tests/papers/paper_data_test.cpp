// The published figures as data (tools/paper_data.hpp, validation/papers/*.yaml): a row, a table and
// a setting read as written; every mistake in a file an InputError naming the file, the line and the
// key; a figure no row reads refused rather than silently left out of the report.
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "cost_model/input_error.hpp"
#include "tests/support/temp_file.hpp"
#include "tools/paper_data.hpp"

using namespace overlap::tools::papers;
using overlap::InputError;

namespace {

// A source tree holding only validation/papers/NAME.yaml with `text`.
struct DataTree {
  overlap::test::TempDir dir{"paper-data"};
  DataTree(const std::string& name, const std::string& text) {
    std::filesystem::create_directories(dir.path / "validation" / "papers");
    dir.write("validation/papers/" + name + ".yaml", text);
  }
  std::string root() const { return dir.path.string(); }
};

const char* kGood = R"(source: test-paper
rows:
  plain: {location: Table 1, figure: a speedup, config: "file.yaml: TP 8, groups auto", published: 1.5, published_text: 1.5x}
  pair: {location: Table 2, published: [83.9, 122.3], published_text: 83.9 / 122.3 ms}
  bound: {location: Sec. 3, source: other-paper, unit: "%", ratio: false, compare: at_least, tolerance_pct: 0, zero_tolerance: 0.5, cause: why, cause_is_ours: true}
tables:
  t:
    - {a: 1, b: x}
    - {a: 2, b: y}
settings:
  share: 0.4
  name: text
)";

// Expects `f` to throw an InputError at `line` whose key path is `key`.
template <typename F>
void expect_input_error(F&& f, int line, const std::string& key) {
  try {
    f();
    FAIL("no InputError");
  } catch (const InputError& e) {
    CHECK(e.line() == line);
    CHECK(e.key_path() == key);
    CHECK(e.file().find("validation") != std::string::npos);
  }
}

}  // namespace

TEST_CASE("paper data: rows, tables and settings as written", "[papers]") {
  DataTree t("good", kGood);
  const PaperData d(t.root(), "good");
  const RowSpec plain = d.row("plain");
  CHECK(plain.source == "test-paper");
  CHECK(plain.location == "Table 1");
  CHECK(plain.figure == "a speedup");
  CHECK(plain.published == 1.5);
  CHECK(plain.published_text == "1.5x");
  CHECK(plain.config == "file.yaml: TP 8, groups auto");
  CHECK(d.row("pair").config.empty());  // no config: the row's code writes it
  // Keys left out keep RowSpec's defaults.
  CHECK(plain.ratio);
  CHECK(plain.compare == Compare::value);
  CHECK(plain.tolerance_pct == RowSpec{}.tolerance_pct);
  CHECK(plain.cause.empty());
  // A pair is A / B, the same division the compiler would do on the two printed numbers.
  CHECK(d.row("pair").published == 83.9 / 122.3);
  const RowSpec bound = d.row("bound");
  CHECK(bound.source == "other-paper");
  CHECK(bound.unit == "%");
  CHECK_FALSE(bound.ratio);
  CHECK(bound.compare == Compare::at_least);
  CHECK(bound.tolerance_pct == 0);
  CHECK(bound.zero_tolerance == 0.5);
  CHECK(bound.cause == "why");
  CHECK(bound.cause_is_ours);
  const auto rows = d.table("t", {"a", "b"});
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].get_int("a") == 2);
  CHECK(rows[1].get_string("b") == "y");
  CHECK(d.number("share") == 0.4);
  CHECK(d.text("name") == "text");
  CHECK_NOTHROW(d.check_all_read());
}

TEST_CASE("paper data: a figure no row reads is refused at its line", "[papers]") {
  DataTree t("good", kGood);
  const PaperData d(t.root(), "good");
  d.row("plain");
  d.row("pair");
  d.table("t", {"a", "b"});
  d.number("share");
  d.text("name");
  expect_input_error([&] { d.check_all_read(); }, 5, "rows.bound");
  d.row("bound");
  CHECK_NOTHROW(d.check_all_read());
}

TEST_CASE("paper data: bad input names file, line and key", "[papers]") {
  // Row `r` of a file holding `text`: the error at `line`, `key`.
  auto expect_row_error = [](const std::string& text, int line, const std::string& key) {
    DataTree t("bad", text);
    const PaperData d(t.root(), "bad");
    expect_input_error([&] { d.row("r"); }, line, key);
  };
  SECTION("an unknown key in a row") {
    expect_row_error("source: s\nrows:\n  r: {location: L, publshed: 2}\n", 3, "rows.r.publshed");
  }
  SECTION("a comparison that is not one") {
    expect_row_error("source: s\nrows:\n  r:\n    location: L\n    compare: above\n", 5, "rows.r.compare");
  }
  SECTION("a published pair of three") {
    expect_row_error("source: s\nrows:\n  r:\n    location: L\n    published: [1, 2, 3]\n", 5, "rows.r.published");
  }
  SECTION("a table row without a column") {
    DataTree t("bad", "source: s\ntables:\n  t:\n    - {a: 1}\n");
    const PaperData d(t.root(), "bad");
    expect_input_error([&] { d.table("t", {"a", "b"}); }, 4, "tables.t.0.b");
  }
  SECTION("an unknown top-level key") {
    DataTree t("bad", "source: s\nrow: {}\n");
    expect_input_error([&] { PaperData(t.root(), "bad"); }, 2, "row");
  }
  SECTION("a missing file") {
    DataTree t("other", kGood);
    CHECK_THROWS_AS(PaperData(t.root(), "missing"), InputError);
  }
}
