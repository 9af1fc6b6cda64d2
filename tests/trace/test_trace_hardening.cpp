// The trace readers on input that is broken or hostile (calibrate/traces/, tools/cmd_trace.cpp,
// tools/cmd_profile_fit.cpp): every event is read as written or left out and counted (or, with
// --strict, the file refused); times are bounded so no sum overflows; a FIFO, a gzip bomb, a view in
// place of an export's table and an export of many processes are refused or read in bounded time;
// names that are not UTF-8 reach JSON as U+FFFD; `profile fit` writes only what its loader reads.
// The figures of the good events are closed forms worked out in the comments (integer nanoseconds).
#include <sqlite3.h>
#include <sys/stat.h>
#include <zlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "calibrate/traces/collective_wait.hpp"
#include "calibrate/traces/trace_analysis.hpp"
#include "calibrate/traces/trace_limits.hpp"
#include "cost_model/input_error.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"

using namespace overlap;
namespace fs = std::filesystem;

namespace {

const std::string kData = std::string(OVERLAP_SOURCE_DIR) + "/tests/data/trace/";
const std::string kGemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64";
const std::string kAllReduce = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

using overlap::test::CliResult;

CliResult cli(std::vector<std::string> args) {
  args.insert(args.begin(), "trace");
  return overlap::test::cli(args);
}

fs::path scratch(const std::string& name) {
  const fs::path dir = overlap::test::binary_dir() / "trace_hardening_tmp";
  fs::create_directories(dir);
  return dir / name;
}

void spit(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::string gzip(const std::string& bytes) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, static_cast<uLong>(bytes.size())) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// The two good kernels of malformed_rank0.json: a GEMM [100, 200) us and an all-reduce [150, 250)
// us on one GPU: compute 100 us, communication 100 us, of which [200, 250) runs alone: 50 us
// unoverlapped, overlap 0.5, span 150 us.
std::string two_kernels(const std::string& extra_events = "", const std::string& top = "") {
  return "{" + top + "\"traceEvents\": [" +
         R"({"ph": "X", "cat": "kernel", "name": ")" + kGemm + R"(", "pid": 0, "tid": 7, "ts": 100, "dur": 100},)" +
         R"({"ph": "X", "cat": "kernel", "name": ")" + kAllReduce + R"(", "pid": 0, "tid": 7, "ts": 150, "dur": 100})" +
         extra_events + "]}";
}

void check_two_kernels(const nlohmann::json& figures) {
  CHECK(figures["kernels"] == 2);
  CHECK(figures["compute_ns"] == 100000);
  CHECK(figures["communication_ns"] == 100000);
  CHECK(figures["unoverlapped_communication_ns"] == 50000);
  CHECK(figures["span_ns"] == 150000);
}

nlohmann::json json_ok(std::vector<std::string> args) {
  args.insert(args.end(), {"--format", "json"});
  const CliResult r = cli(args);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  return nlohmann::json::parse(r.out);
}

// An export in the documented schema (nsys_rank.sql's tables) with the given kernel rows; NOT NULL
// left off so that a row can hold what a broken export holds.
std::string nsys_db(const std::string& name, const std::string& sql) {
  const fs::path path = scratch(name);
  fs::remove(path);
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  const std::string schema =
      "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, correlationId INTEGER, "
      "globalPid INTEGER, demangledName INTEGER);"
      "INSERT INTO StringIds VALUES (1, '" + kGemm + "'), (2, '" + kAllReduce + "');";
  char* error = nullptr;
  const int rc = sqlite3_exec(db, (schema + sql).c_str(), nullptr, nullptr, &error);
  const std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  INFO(message);
  REQUIRE(rc == SQLITE_OK);
  return path.string();
}

// The good rows: the same two kernels as two_kernels(), in nanoseconds.
const std::string kGoodRows =
    "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100000, 200000, 0, 1, NULL, 1), (150000, 250000, 0, 2, NULL, 2);";

}  // namespace

TEST_CASE("trace hardening: Kineto events that cannot be read as written are counted by reason, or refused",
          "[trace][hardening]") {
  // malformed_rank0.json: the two good kernels, then twelve events each broken in one field.
  const nlohmann::json j = json_ok({kData + "malformed_rank0.json"});
  check_two_kernels(j["ranks"][0]["figures"]);
  const nlohmann::json expected = {{"kernel: dur negative", 1},       {"kernel: dur missing", 1},
                                   {"kernel: dur not a number", 3},   {"kernel: ts missing", 1},
                                   {"kernel: ts out of range", 3},    {"kernel: end (ts + dur) out of range", 1},
                                   {"copy: dur not a number", 1},     {"launch: ts missing", 1}};
  CHECK(j["ranks"][0]["skipped_events"] == expected);

  SECTION("the table lists them and a warning counts them") {
    const CliResult r = cli({kData + "malformed_rank0.json"});
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("Skipped events") != std::string::npos);
    CHECK(r.out.find("kernel: ts out of range") != std::string::npos);
    CHECK(r.err.find("warning: 12 event(s) in 1 trace(s) could not be read as written") != std::string::npos);
  }
  SECTION("--strict refuses the file at the first, naming the event and field") {
    const CliResult r = cli({kData + "malformed_rank0.json", "--strict"});
    CHECK(r.rc == 2);
    CHECK(r.err.find("malformed_rank0.json") != std::string::npos);
    CHECK(r.err.find("traceEvents[2].dur") != std::string::npos);
    CHECK(r.err.find("kernel: dur negative") != std::string::npos);
    CHECK(r.out.empty());
  }
  SECTION("a clean trace reports none, and --strict reads it") {
    spit(scratch("clean.json"), two_kernels());
    const nlohmann::json c = json_ok({scratch("clean.json").string(), "--strict"});
    check_two_kernels(c["ranks"][0]["figures"]);
    CHECK(c["ranks"][0]["skipped_events"] == nlohmann::json::object());
  }
}

TEST_CASE("trace hardening: a time is decimal text of a number, exactly", "[trace][hardening]") {
  // "100.0005" us rounds half up to 100001 ns; "1.5e2" us is 150000 ns; "+100" is 100 us.
  spit(scratch("decimal.json"),
       two_kernels(R"(,{"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 7, "ts": "100.0005", "dur": "1.5e2"})"
                   R"(,{"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 7, "ts": "+100", "dur": "1e"})"));
  const nlohmann::json j = json_ok({scratch("decimal.json").string()});
  // Device 1: one compute kernel [100001, 250001) ns: 150000 ns. Device 2's "1e" is no number.
  CHECK(j["ranks"][0]["figures"]["compute_ns"] == 100000 + 150000);
  CHECK(j["ranks"][0]["skipped_events"] == nlohmann::json({{"kernel: dur not a number", 1}}));
}

TEST_CASE("trace hardening: sums that would overflow int64 are refused, not wrapped", "[trace][hardening]") {
  // Four GPUs, each one compute kernel [0, 3e18) ns (ts 0, dur 3e15 us: within 2^62 ns): each GPU's
  // compute is 3e18 ns, their sum 1.2e19 > 2^63 - 1.
  std::string extra;
  for (int gpu = 1; gpu <= 4; ++gpu)
    extra += R"(,{"ph": "X", "cat": "kernel", "name": "k", "pid": )" + std::to_string(gpu) +
             R"(, "tid": 7, "ts": 0, "dur": 3000000000000000})";
  spit(scratch("overflow.json"), two_kernels(extra));
  const CliResult r = cli({scratch("overflow.json").string()});
  CHECK(r.rc == 2);
  CHECK(r.err.find("overflows 64-bit nanoseconds") != std::string::npos);
}

TEST_CASE("trace hardening: distributedInfo's rank and world_size are integers in range, or the file is refused",
          "[trace][hardening]") {
  const auto refused = [](const std::string& info, const std::string& key) {
    const fs::path p = scratch("dist.json");
    spit(p, two_kernels("", "\"distributedInfo\": " + info + ", "));
    const CliResult r = cli({p.string()});
    INFO(info << "\n" << r.err);
    CHECK(r.rc == 2);
    CHECK(r.err.find("distributedInfo." + key) != std::string::npos);
  };
  refused(R"({"rank": 0.5, "world_size": 2})", "rank");
  refused(R"({"rank": 1.0, "world_size": 2})", "rank");
  refused(R"({"rank": -1, "world_size": 2})", "rank");
  refused(R"({"rank": "one", "world_size": 2})", "rank");
  refused(R"({"rank": null, "world_size": 2})", "rank");
  refused(R"({"rank": 0, "world_size": 0})", "world_size");
  refused(R"({"rank": 0, "world_size": 16777217})", "world_size");
  refused(R"({"rank": 0, "world_size": [2]})", "world_size");
  // Read as written: rank 1 of 2, also as a string of digits.
  spit(scratch("dist_ok.json"), two_kernels("", R"("distributedInfo": {"rank": "1", "world_size": 2}, )"));
  const nlohmann::json j = json_ok({scratch("dist_ok.json").string()});
  CHECK(j["ranks"][0]["rank"] == 1);
  CHECK(j["world_size"] == 2);
}

TEST_CASE("trace hardening: gzip is one stream (or several members), capped in size and ratio", "[trace][hardening]") {
  const std::string doc = two_kernels();
  SECTION("bytes after the stream refuse the file") {
    spit(scratch("trailing.json.gz"), gzip(doc) + "garbage");
    const CliResult r = cli({scratch("trailing.json.gz").string()});
    CHECK(r.rc == 2);
    CHECK(r.err.find("bytes after the end of the gzip stream") != std::string::npos);
  }
  SECTION("two members read as their concatenation (RFC 1952 section 2.2)") {
    const std::size_t half = doc.size() / 2;
    spit(scratch("members.json.gz"), gzip(doc.substr(0, half)) + gzip(doc.substr(half)));
    check_two_kernels(json_ok({scratch("members.json.gz").string()})["ranks"][0]["figures"]);
  }
  SECTION("a gzip bomb stops at the ratio cap") {
    // 100 MiB of whitespace inside the document deflates about 1000:1; past the first 64 MiB the
    // ratio cap (200:1) stops it.
    std::string bomb = "{\"traceEvents\": [";
    bomb.append(std::size_t{100} << 20, ' ');
    bomb += "]}";
    const std::string z = gzip(bomb);
    REQUIRE(z.size() * traces::kMaxGzipRatio < (std::size_t{100} << 20));
    spit(scratch("bomb.json.gz"), z);
    const CliResult r = cli({scratch("bomb.json.gz").string()});
    CHECK(r.rc == 2);
    CHECK(r.err.find("gzip bomb") != std::string::npos);
  }
  SECTION("a truncated stream") {
    const std::string z = gzip(doc);
    spit(scratch("cut.json.gz"), z.substr(0, z.size() / 2));
    const CliResult r = cli({scratch("cut.json.gz").string()});
    CHECK(r.rc == 2);
    CHECK(r.err.find("truncated or corrupt gzip stream") != std::string::npos);
  }
}

TEST_CASE("trace hardening: JSON tokens are bounded; whitespace runs are read, not held", "[trace][hardening]") {
  SECTION("3 MiB of whitespace between two events reads as one space") {
    std::string doc = two_kernels();
    doc.insert(doc.find("},") + 2, std::string(std::size_t{3} << 20, '\n'));
    spit(scratch("spaces.json"), doc);
    check_two_kernels(json_ok({scratch("spaces.json").string()})["ranks"][0]["figures"]);
  }
  SECTION("a name longer than the token cap is refused") {
    std::string doc = two_kernels(R"(,{"ph": "X", "cat": "kernel", "name": ")" +
                                  std::string(traces::kMaxJsonTokenBytes + 1, 'a') + R"(", "ts": 1, "dur": 1})");
    spit(scratch("long.json"), doc);
    const CliResult r = cli({scratch("long.json").string()});
    CHECK(r.rc == 2);
    CHECK(r.err.find("a JSON string longer than 16 MiB") != std::string::npos);
  }
}

TEST_CASE("trace hardening: a FIFO or a directory is refused at once, not read", "[trace][hardening]") {
  const fs::path fifo = scratch("trace.fifo");
  fs::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  const CliResult r = cli({fifo.string()});
  CHECK(r.rc == 2);
  CHECK(r.err.find("FIFO") != std::string::npos);
  const CliResult f = overlap::test::cli({"profile", "fit", fifo.string(), "--hardware", "h100-sxm-8x-nvswitch", "-o",
                                          scratch("fit.yaml").string()});
  CHECK(f.rc == 2);
  CHECK(f.err.find("FIFO") != std::string::npos);
  CHECK(!fs::exists(scratch("fit.yaml")));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  const CliResult d = cli({scratch("").string()});
  CHECK(d.rc == 2);
  CHECK(d.err.find("is a directory") != std::string::npos);
}

TEST_CASE("trace hardening: nsys rows with text, NULL or backward times are counted, or refused", "[trace][hardening]") {
  // (A column of INTEGER affinity stores '300000' and 450000.0 as integers: SQLite "Datatypes In
  // SQLite" section 3; text and reals that do not convert stay as written.)
  const std::string db = nsys_db("rows.sqlite", kGoodRows +
                                                    "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES "
                                                    "('soon', 400000, 0, 3, NULL, 1),"     // start as text
                                                    "(NULL, 400000, 0, 4, NULL, 1),"       // start NULL
                                                    "(500000, 400000, 0, 5, NULL, 1),"     // end before start
                                                    "(300000, 450000.5, 0, 6, NULL, 1),"   // end a real
                                                    "(-1, 400000, 0, 7, NULL, 1),"         // start negative
                                                    "(300000, 400000, 1.5, 8, NULL, 1),"   // device a real
                                                    "(300000, 400000, 0, 'c', NULL, 1);");  // correlation text
  const nlohmann::json j = json_ok({db});
  check_two_kernels(j["ranks"][0]["figures"]);
  const nlohmann::json expected = {{"kernel: start not an integer", 1}, {"kernel: start missing (NULL)", 1},
                                   {"kernel: end before start", 1},     {"kernel: end not an integer", 1},
                                   {"kernel: start out of range", 1},   {"kernel: deviceId not an integer", 1},
                                   {"kernel: correlationId not an integer", 1}};
  CHECK(j["ranks"][0]["skipped_events"] == expected);
  const CliResult r = cli({db, "--strict"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("CUPTI_ACTIVITY_KIND_KERNEL.start") != std::string::npos);
}

TEST_CASE("trace hardening: a view named like an export's table is refused, never run", "[trace][hardening]") {
  // StringIds as a view over a recursive CTE with no end: running it would never return.
  const fs::path path = scratch("view.sqlite");
  fs::remove(path);
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db,
                       "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, "
                       "correlationId INTEGER, demangledName INTEGER);"
                       "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2, 0, 1, 1);"
                       "CREATE VIEW StringIds AS WITH RECURSIVE c(id, value) AS (SELECT 1, 'x' UNION ALL "
                       "SELECT id + 1, value FROM c) SELECT id, value FROM c;",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  const auto start = std::chrono::steady_clock::now();
  const CliResult r = cli({path.string()});
  CHECK(r.rc == 2);
  CHECK(r.err.find("StringIds") != std::string::npos);
  CHECK(r.err.find("is a view in this file, not a table") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("trace hardening: an export of many processes reads in time linear in them", "[trace][hardening]") {
  // 30000 processes, one kernel each: 30000 ranks. A lookup per rank over all the ranks (naming each
  // process, matching collectives per rank) would take 30000^2 steps; the bound is far above linear.
  constexpr int kProcesses = 30000;
  const std::string db = nsys_db("many.sqlite",
                                 "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT 1000 + x, 2000 + x, x % 8, x, x * 16777216, "
                                 "1 + x % 2 FROM (WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < " +
                                     std::to_string(kProcesses) + ") SELECT x FROM n);");
  const auto start = std::chrono::steady_clock::now();
  std::vector<traces::RankReport> ranks;
  for (const traces::RankTrace& t : traces::read_traces(db, "")) ranks.push_back(traces::analyze(t));
  (void)traces::split_collective_waits(ranks);
  CHECK(ranks.size() == kProcesses);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}

TEST_CASE("trace hardening: names that are not UTF-8 reach JSON as U+FFFD", "[trace][hardening]") {
  // A GEMM kernel's name ending in a lone 0xFF byte, in a file whose own name has one too.
  const fs::path path = scratch(std::string("bad\xff") + "name.sqlite");
  const std::string db = nsys_db(path.filename().string(), "UPDATE StringIds SET value = 'sm90_xmma_gemm_bf16' || X'FF' WHERE id = 1;" + kGoodRows);
  for (const char* kernels : {"", "--kernels"}) {
    std::vector<std::string> args = {db, "--format", "json"};
    if (*kernels) args.push_back(kernels);
    const CliResult r = cli(args);
    INFO(r.err);
    REQUIRE(r.rc == 0);
    const nlohmann::json j = nlohmann::json::parse(r.out);  // valid UTF-8, or parse throws
    CHECK(r.out.find("sm90_xmma_gemm_bf16\xef\xbf\xbd\"") != std::string::npos);
    CHECK(j["ranks"][0]["file"].get<std::string>().find("bad\xef\xbf\xbdname") != std::string::npos);
  }
}

namespace {

// One rank's Kineto trace of `count` GEMM kernels of one shape, each `dur_us` long and linked to its
// aten::mm op (Input Dims [[m, k], [k, n]], BFloat16) by External id: what `profile fit` fits.
std::string gemm_trace(std::int64_t m, std::int64_t n, std::int64_t k, double dur_us, int count) {
  nlohmann::json events = nlohmann::json::array();
  double t = 1000;
  for (int id = 1; id <= count; ++id) {
    events.push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", "aten::mm"}, {"pid", 100}, {"tid", 100}, {"ts", t - 0.5},
                      {"dur", 0.2},
                      {"args", {{"External id", id}, {"Input Dims", {{m, k}, {k, n}}}, {"Input type", {"c10::BFloat16", "c10::BFloat16"}}}}});
    events.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", kGemm}, {"pid", 0}, {"tid", 7}, {"ts", t}, {"dur", dur_us},
                      {"args", {{"External id", id}, {"device", 0}, {"stream", 7}, {"correlation", id}}}});
    t += dur_us + 1;
  }
  return nlohmann::json{{"traceEvents", events}}.dump();
}

}  // namespace

TEST_CASE("trace hardening: profile fit writes only a profile its own loader reads", "[trace][hardening][fit]") {
  const fs::path out = scratch("fitted.yaml");
  const auto fit = [&](const std::string& trace, std::vector<std::string> extra = {}) {
    fs::remove(out);
    const fs::path t = scratch("fit_trace.json");
    spit(t, trace);
    std::vector<std::string> args = {"profile", "fit", t.string(), "--hardware", "h100-sxm-8x-nvswitch", "-o", out.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return overlap::test::cli(args);
  };
  SECTION("a shape the schema allows, measured in range: written, and it loads") {
    const CliResult r = fit(gemm_trace(4096, 4096, 4096, 900.0, 3));
    INFO(r.err);
    CHECK(r.rc == 0);
    CHECK(fs::exists(out));
  }
  SECTION("a GEMM measured at 2 s (gemm_profiles[].duration_us is at most 1e6 us): refused, nothing written") {
    const CliResult r = fit(gemm_trace(4096, 4096, 4096, 2.0e6, 3));
    CHECK(r.rc == 2);
    CHECK(r.err.find("the fitted profile would not load") != std::string::npos);
    CHECK(r.err.find("duration_us") != std::string::npos);
    CHECK(!fs::exists(out));
  }
  SECTION("a shape past 2^24 rows (gemm_profiles[].m): refused, nothing written") {
    const CliResult r = fit(gemm_trace(std::int64_t{1} << 25, 1024, 1024, 900.0, 3));
    CHECK(r.rc == 2);
    CHECK(r.err.find("gemm_profiles") != std::string::npos);
    CHECK(!fs::exists(out));
  }
  SECTION("a --name that is not UTF-8: refused, nothing written") {
    const CliResult r = fit(gemm_trace(4096, 4096, 4096, 900.0, 3), {"--name", "fit\xff"});
    CHECK(r.rc == 2);
    CHECK(r.err.find("--name") != std::string::npos);
    CHECK(!fs::exists(out));
  }
}

TEST_CASE("trace hardening: an escape split across the reader's 256 KiB chunks is read as written", "[trace][hardening]") {
  // The bounded stream (calibrate/traces/trace_stream.cpp) hands the parser 256 KiB at a time and
  // tracks whether it is inside a string: a backslash as a chunk's last byte must still escape the
  // quote that opens the next chunk, else the string would end early and the name be cut.
  constexpr std::size_t kChunk = 256 * 1024;
  const std::string head = R"({"traceEvents": [{"ph": "X", "cat": "kernel", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "name": "x)";
  const std::string pad(kChunk - 1 - head.size(), 'p');  // the backslash lands on byte kChunk - 1
  const std::string doc = head + pad + R"(\"y"}]})";
  REQUIRE(doc[kChunk - 1] == '\\');
  spit(scratch("split_escape.json"), doc);
  const nlohmann::json j = json_ok({scratch("split_escape.json").string(), "--kernels"});
  REQUIRE(j["ranks"][0]["kernels"].size() == 1);
  CHECK(j["ranks"][0]["kernels"][0]["kernel"] == "x" + pad + "\"y");
}
