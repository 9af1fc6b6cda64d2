// validate --papers (tools/papers.hpp, tools/cmd_papers.hpp): the verdict rule, the report's JSON and
// exit codes, and one pinned prediction per source, so a model change that moves a reproduced figure
// is seen. Pinned values were measured with this tree; the published figure each stands
// for is in the row (and README "Reproducing the sources").
#include <algorithm>
#include <cmath>
#include <sstream>
#include <regex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/cli_run.hpp"
#include "tools/cli.hpp"
#include "tools/papers.hpp"

using namespace overlap::tools;
using namespace overlap::tools::papers;

namespace {

using overlap::test::cli;
using overlap::test::CliResult;

RowSpec value_row(double published, double tol) {
  RowSpec s;
  s.source = "test";
  s.location = "line 1";
  s.figure = "f";
  s.published = published;
  s.tolerance_pct = tol;
  return s;
}

// The counted row (the paper's setting where a shipped default is shown beside it).
const nlohmann::json& row_named(const nlohmann::json& report, const std::string& location, const std::string& figure,
                                const std::string& variant = "") {
  for (const auto& r : report["rows"])
    if (r["location"] == location && r["figure"] == figure &&
        (variant.empty() ? r["variant"] != kShippedDefault : r["variant"] == variant))
      return r;
  FAIL("no row '" << figure << "' at " << location);
  static const nlohmann::json none;
  return none;
}

}  // namespace

TEST_CASE("the verdict rule: tolerance, bounds, published zeros, explained vs off", "[papers]") {
  CHECK(judge(value_row(2.0, 5), 2.09).verdict == Verdict::ok);
  const PaperRow miss = judge(value_row(2.0, 5), 2.2);
  CHECK(miss.verdict == Verdict::off);
  CHECK(miss.error_pct == Approx(10.0));
  RowSpec explained = value_row(2.0, 5);
  explained.cause = "the source's setting differs";
  CHECK(judge(explained, 2.2).verdict == Verdict::explained);
  CHECK(judge(explained, 2.0).cause.empty());  // a cause is stated only for a miss
  RowSpec ours = explained;
  ours.cause_is_ours = true;
  CHECK(judge(ours, 2.2).verdict == Verdict::off);
  CHECK(judge(ours, 2.2).cause == ours.cause);

  RowSpec at_least = value_row(99, 0);
  at_least.compare = Compare::at_least;
  CHECK(judge(at_least, 99.5).verdict == Verdict::ok);
  CHECK(judge(at_least, 99.5).error_pct == 0);
  CHECK(judge(at_least, 90).verdict == Verdict::off);
  RowSpec at_most = value_row(5, 0);
  at_most.compare = Compare::at_most;
  CHECK(judge(at_most, 4).verdict == Verdict::ok);
  CHECK(judge(at_most, 6).verdict == Verdict::off);

  RowSpec zero = value_row(0, 1);
  zero.zero_tolerance = 0.001;
  CHECK(judge(zero, 0.0005).verdict == Verdict::ok);
  CHECK(judge(zero, 0.5).verdict == Verdict::off);
  CHECK(judge(value_row(1.0, 5), std::nan("")).verdict == Verdict::off);
}

TEST_CASE("the median is over ratio rows compared as values", "[papers]") {
  std::vector<PaperRow> rows;
  for (double p : {1.01, 1.02, 1.10}) rows.push_back(judge(value_row(1.0, 5), p));  // 1 %, 2 %, 10 %
  RowSpec absolute = value_row(1.0, 5);
  absolute.ratio = false;
  rows.push_back(judge(absolute, 3.0));  // 200 %, not a ratio row
  RowSpec bound = value_row(1.0, 5);
  bound.compare = Compare::at_least;
  rows.push_back(judge(bound, 0.5));  // a bound, not counted
  const PapersReport rep = summarize(rows);
  CHECK(rep.ratio_rows == 3);
  CHECK(rep.median_abs_error_pct == Approx(2.0));
  CHECK(rep.ok == 2);
  CHECK(rep.off == 3);
}

TEST_CASE("the medians count explained rows as misses, and again without them; shipped-default rows are not counted",
          "[papers]") {
  std::vector<PaperRow> rows;
  for (double p : {1.01, 1.02, 1.04}) rows.push_back(judge(value_row(1.0, 5), p));  // 1 %, 2 %, 4 % ok
  RowSpec explained = value_row(1.0, 5);
  explained.cause = "outside our model";
  rows.push_back(judge(explained, 1.30));  // 30 %, explained
  rows.push_back(judge(explained, 0.80));  // 20 %, explained
  RowSpec shown = value_row(1.0, 5);
  shown.variant = kShippedDefault;
  rows.push_back(judge(shown, 3.0));  // 200 %, beside a paper setting: not counted
  const PapersReport rep = summarize(rows);
  CHECK(rep.ratio_rows == 5);
  CHECK(rep.median_abs_error_pct == Approx(4.0));  // 1, 2, 4, 20, 30
  CHECK(rep.ratio_rows_without_explained == 3);
  CHECK(rep.median_abs_error_pct_without_explained == Approx(2.0));
  CHECK(rep.max_abs_error_pct == Approx(30.0));
  CHECK(rep.ok == 3);
  CHECK(rep.explained == 2);
  CHECK(rep.off == 0);
  CHECK(rep.shipped_default == 1);
  const nlohmann::json j = to_json(rep);
  CHECK(j["median_abs_error_pct_without_explained"].get<double>() == Approx(2.0));
  CHECK(j["max_abs_error_pct"].get<double>() == Approx(30.0));
  CHECK(j["counts"]["shipped_default"] == 1);
  CHECK_THAT(format_table(rep), Catch::Contains("4.0 % (2.0 % over the 3 without the explained ones); max 30.0 %") &&
                                    Catch::Contains("[shipped default]"));
}

TEST_CASE("validate --papers: JSON rows, median, exit codes, one pinned row per source", "[papers][cli][slow]") {
  // Every source; --strict exits 1 because some rows are off (README lists them and their causes).
  const CliResult r = cli({"validate", "--papers", "--format", "json", "--strict"});
  INFO(r.err);
  REQUIRE((r.rc == 0 || r.rc == 1));
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"rows", "median_abs_error_pct", "ratio_rows", "counts", "definition"}) CHECK(j.contains(key));
  const int off = j["counts"]["off"].get<int>();
  CHECK(r.rc == (off > 0 ? 1 : 0));
  std::vector<double> errs, errs_unexplained;
  int ok = 0, explained = 0;
  for (const auto& row : j["rows"]) {
    for (const char* key : {"source", "location", "figure", "config", "published", "published_text", "predicted",
                            "error_pct", "tolerance_pct", "verdict", "cause", "unit", "ratio", "compare", "variant"})
      CHECK(row.contains(key));
    INFO(row.dump());
    if (row["variant"] == kShippedDefault) continue;
    CHECK(row["predicted"].is_number());  // never NaN
    CHECK(!row["published_text"].get<std::string>().empty());
    // Where it is printed, by the source's own table, section or footnote (its public form), and the
    // source one of those the report names by title.
    const std::string where = row["location"];
    CHECK_FALSE(where.empty());
    CHECK(std::regex_search(where, std::regex("Table|Sec\\.|A\\.[0-9]|footnote|section|Exposed|quantization|row |comment")));
    CHECK_FALSE(std::regex_search(where, std::regex("line[s]? [0-9]")));
    CHECK(j["sources"].contains(row["source"].get<std::string>()));
    const std::string v = row["verdict"];
    if (v == "ok") ++ok;
    if (v == "explained") {
      ++explained;
      CHECK(!row["cause"].get<std::string>().empty());
    }
    if (row["ratio"].get<bool>() && row["compare"] == "value" && row["published"].get<double>() != 0) {
      errs.push_back(std::abs(row["error_pct"].get<double>()));
      if (v != "explained") errs_unexplained.push_back(std::abs(row["error_pct"].get<double>()));
    }
  }
  CHECK(j["counts"]["ok"] == ok);
  CHECK(j["counts"]["explained"] == explained);
  REQUIRE(!errs.empty());
  std::sort(errs.begin(), errs.end());
  const std::size_t n = errs.size();
  const double median = n % 2 ? errs[n / 2] : 0.5 * (errs[n / 2 - 1] + errs[n / 2]);
  CHECK(j["median_abs_error_pct"].get<double>() == Approx(median));
  CHECK(j["ratio_rows"] == static_cast<int>(n));
  CHECK(j["max_abs_error_pct"].get<double>() == Approx(errs.back()));
  CHECK(j["ratio_rows_without_explained"] == static_cast<int>(errs_unexplained.size()));
  CHECK(j["median_abs_error_pct_without_explained"].get<double>() <= j["median_abs_error_pct"].get<double>());
  // The reproduction target: median |error| over the ratio rows <= 5 %.
  CHECK(j["median_abs_error_pct"].get<double>() <= 5.0);

  // One fixed prediction per source, to 0.1 %: a model change that moves it must update it here
  // (and the README table).
  const auto& commfuse = row_named(j, "Table 1", "CommFuse latency / vanilla latency");
  CHECK(commfuse["published"].get<double>() == Approx(77.1 / 122.3));
  CHECK(commfuse["predicted"].get<double>() == Approx(0.6594).epsilon(0.001));
  const auto& fo = row_named(j, "Sec. 3.2.2", "bandwidth utilisation of a one-tile (192 KB) AllReduce, four 4090s");
  CHECK(fo["published"].get<double>() == 13);
  CHECK(fo["predicted"].get<double>() == Approx(13.05).epsilon(0.001));
  const auto& fo_max = row_named(j, "Sec. 6.2; A.5.1", "highest speedup over no overlap, RTX 4090");
  CHECK(fo_max["predicted"].get<double>() == Approx(1.664).epsilon(0.001));
  const auto& atp = row_named(j, "SM contention and wave quantization", "GEMM latency on 122 SMs / on 132 SMs");
  CHECK(atp["published"].get<double>() == 1.5);
  CHECK(atp["predicted"].get<double>() == Approx(1.489).epsilon(0.001));
  // Delta_B = 2 N_L tau_c = 2 x 24 x 0.7 us exactly, with no launch gaps.
  const auto& dtp = row_named(j, "A1, Theoretical Exposed Wait-time", "TP baseline exposed wait");
  CHECK(dtp["published"].get<double>() == Approx(33.6));
  CHECK(dtp["predicted"].get<double>() == Approx(33.6).epsilon(1e-6));
  CHECK(dtp["verdict"] == "ok");
  // Megatron-LM SC'21 Table 1: an absolute throughput, judged at 10 % and outside the ratio median.
  const auto& mt = row_named(j, "Table 1", "GPT 1.7B throughput per GPU (TP 1, PP 1)");
  CHECK(mt["published"].get<double>() == 137);
  CHECK(mt["predicted"].get<double>() == Approx(162.88).epsilon(0.001));
  CHECK_FALSE(mt["ratio"].get<bool>());
  CHECK(mt["tolerance_pct"].get<double>() == 10);
  CHECK(mt["verdict"] == "off");  // +18.9 % with unfused attention modelled: the absolute target is still missed
  const auto& lr = row_named(j, "A1, Theoretical Exposed Wait-time", "Ladder Residual exposed wait");
  CHECK(lr["verdict"] == "explained");  // the schedule beats the blog's per-module sum
  CHECK(lr["predicted"].get<double>() < lr["published"].get<double>());
}

TEST_CASE("validate --papers: one source, the table, and bad options", "[papers][cli]") {
  const CliResult t = cli({"validate", "--papers", "--source", "dtp"});
  CHECK(t.rc == 0);
  CHECK_THAT(t.out, Catch::Contains("delayed-tp-blog") && Catch::Contains("median |error|") &&
                        !Catch::Contains("flashoverlap-paper"));
  // Each source by its public title, never a folder of the machine the rows were written on.
  CHECK_THAT(t.out, Catch::Contains("delayed-tp-blog: Delayed Tensor Parallelism for Faster Transformer Inference"));
  for (const char* path : {"/work", "seeds", "/home", "/tmp"}) CHECK_THAT(t.out, !Catch::Contains(path));
  CHECK(cli({"validate", "--papers", "--source", "dtp", "--strict"}).rc == 0);  // no DTP row is off
  const CliResult bad = cli({"validate", "--papers", "--source", "nope"});
  CHECK(bad.rc == 2);
  CHECK_THAT(bad.err, Catch::Contains("--source") && Catch::Contains("commfuse"));
  const CliResult no_mode = cli({"validate"});
  CHECK(no_mode.rc == 2);
  CHECK_THAT(no_mode.err, Catch::Contains("--papers"));
  CHECK(cli({"validate", "--papers", "--format", "csv"}).rc == 2);
}
