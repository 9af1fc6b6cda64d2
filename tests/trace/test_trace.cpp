// `overlap-sim trace` (tools/cmd_trace.hpp, calibrate/traces/): the fixtures under tests/data/trace
// are small traces written for these tests with overlap laid out by hand, so every figure below is
// a sum of interval lengths worked out in the comments (exact: times are integer nanoseconds).
#include <sqlite3.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "calibrate/traces/gemm_pricing.hpp"
#include "calibrate/traces/trace_analysis.hpp"
#include "cost_model/collective_model.hpp"
#include "cost_model/gemm_model.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/profile_loader.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "tests/support/cli_run.hpp"
#include "tools/cli.hpp"
#include "tests/support/temp_file.hpp"

using namespace overlap;
namespace fs = std::filesystem;

namespace {

const std::string kData = std::string(OVERLAP_SOURCE_DIR) + "/tests/data/trace/";

using overlap::test::CliResult;

// `overlap-sim trace ARGS...`.
CliResult cli(std::vector<std::string> args) {
  args.insert(args.begin(), "trace");
  return overlap::test::cli(args);
}

fs::path scratch(const std::string& name) {
  const fs::path dir = overlap::test::binary_dir() / "trace_test_tmp";
  fs::create_directories(dir);
  return dir / name;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void spit(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

void gzip_to(const fs::path& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  gzclose(f);
}

// The committed SQL text loaded into a fresh SQLite database, as `nsys export --type sqlite` writes one.
std::string nsys_db(const std::string& name, const std::string& extra_sql = "",
                    const std::string& fixture = "nsys_rank.sql") {
  const fs::path path = scratch(name);
  fs::remove(path);
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  const std::string sql = slurp(kData + fixture) + extra_sql;
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  const std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  INFO(message);
  REQUIRE(rc == SQLITE_OK);
  return path.string();
}

nlohmann::json json_of(const std::vector<std::string>& args) {
  std::vector<std::string> a = args;
  a.insert(a.end(), {"--format", "json"});
  const CliResult r = cli(a);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("trace: exposed communication of a Kineto trace is HTA's union arithmetic", "[trace]") {
  const nlohmann::json j = json_of({kData + "rank0.json"});
  REQUIRE(j["ranks"].size() == 1);
  const auto& r = j["ranks"][0];
  CHECK(r["rank"] == 0);
  CHECK(r["rank_from_trace"] == true);
  CHECK(j["world_size"] == 2);
  // Compute kernels: GEMM [100, 150), GELU [160, 180), nvjet GEMM [200, 230): 50 + 20 + 30 = 100 us.
  // NCCL: all-reduce [130, 170), all-gather [210, 220): 40 + 10 = 50 us.
  // Communication under compute: [130, 150) + [160, 170) + [210, 220) = 40 us, so 10 us exposed
  // ([150, 160)) and overlap 1 - 10/50 = 0.8. The copy [240, 245) is memory time, in neither.
  const auto& f = r["figures"];
  CHECK(f["compute_ns"] == 100000);
  CHECK(f["communication_ns"] == 50000);
  CHECK(f["exposed_communication_ns"] == 10000);
  // Named apart from run's exposed comm (latency - compute-only); the old key stays as an alias.
  CHECK(f["unoverlapped_communication_ns"] == 10000);
  CHECK(f["memory_ns"] == 5000);
  CHECK(f["span_ns"] == 145000);
  CHECK(f["kernels"] == 5);
  CHECK(f["overlap"].get<double>() == Approx(0.8).epsilon(1e-12));
  CHECK(j["overall"] == f);
}

TEST_CASE("trace: a kernel belongs to the step whose CPU range launched it", "[trace]") {
  const nlohmann::json j = json_of({kData + "rank0.json"});
  const auto& steps = j["ranks"][0]["steps"];
  REQUIRE(steps.size() == 2);
  // ProfilerStep#1 is [90, 140) on the CPU; it launched the GEMM (95), the all-reduce (120) and the
  // GELU (135), which runs at [160, 180), after the step's CPU range ended.
  // Compute [100, 150) + [160, 180) = 70; comm 40; hidden [130, 150) + [160, 170) = 30; exposed 10.
  CHECK(steps[0]["name"] == "ProfilerStep#1");
  CHECK(steps[0]["figures"]["kernels"] == 3);
  CHECK(steps[0]["figures"]["compute_ns"] == 70000);
  CHECK(steps[0]["figures"]["communication_ns"] == 40000);
  CHECK(steps[0]["figures"]["exposed_communication_ns"] == 10000);
  // ProfilerStep#2: nvjet [200, 230), all-gather [210, 220) wholly hidden, the copy [240, 245).
  CHECK(steps[1]["name"] == "ProfilerStep#2");
  CHECK(steps[1]["figures"]["compute_ns"] == 30000);
  CHECK(steps[1]["figures"]["communication_ns"] == 10000);
  CHECK(steps[1]["figures"]["exposed_communication_ns"] == 0);
  CHECK(steps[1]["figures"]["memory_ns"] == 5000);
  CHECK(steps[1]["figures"]["overlap"].get<double>() == 1.0);
}

TEST_CASE("trace: GEMM shapes come from the launching op; a kernel with none is 'shape unknown'", "[trace]") {
  const nlohmann::json j = json_of({kData + "rank0.json"});
  const auto& r = j["ranks"][0];
  CHECK(r["gemm_kernels"] == 2);
  CHECK(r["gemm_shape_unknown"] == 1);  // nvjet: External id 13 names no recorded op
  REQUIRE(r["gemms"].size() == 2);
  // Longest first: the aten::mm GEMM (50 us), then the nvjet one (30 us).
  const auto& mm = r["gemms"][0];
  CHECK(mm["op"] == "aten::mm");
  CHECK(mm["shape"]["m"] == 4096);
  CHECK(mm["shape"]["n"] == 2048);
  CHECK(mm["shape"]["k"] == 8192);
  CHECK(mm["shape"]["batch"] == 1);
  CHECK(mm["shape"]["dtype"] == "c10::BFloat16");
  CHECK(r["gemms"][1]["kernel"] == "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN");
  CHECK(r["gemms"][1]["shape"].is_null());

  const CliResult table = cli({kData + "rank0.json"});
  CHECK(table.out.find("shape unknown") != std::string::npos);
  CHECK(table.out.find("4096x2048x8192") != std::string::npos);
  CHECK(table.out.find("GEMM kernels: 2 (1 shape unknown); NCCL kernels: 2 (0 size unknown)") != std::string::npos);
}

TEST_CASE("trace: NCCL kernels carry collective, message size and group size from the comm op", "[trace]") {
  const nlohmann::json j = json_of({kData + "rank0.json"});
  const auto& comms = j["ranks"][0]["comms"];
  REQUIRE(comms.size() == 2);
  // record_param_comms: allreduce of 1048576 BFloat16 elements = 2 MiB; _allgather_base 1024 in,
  // 2048 out -> max 2048 elements x 2 bytes.
  CHECK(comms[0]["collective"] == "all_reduce");
  CHECK(comms[0]["bytes"] == 2097152);
  CHECK(comms[0]["group_size"] == 2);
  CHECK(comms[0]["process_group"] == "0");
  CHECK(comms[1]["collective"] == "all_gather");
  CHECK(comms[1]["nelems"] == 2048);
  CHECK(comms[1]["bytes"] == 4096);
}

TEST_CASE("trace: two ranks, one gzip-compressed, per rank and overall", "[trace]") {
  const nlohmann::json j = json_of({kData + "rank1.json.gz", kData + "rank0.json"});
  REQUIRE(j["ranks"].size() == 2);
  CHECK(j["ranks"][0]["rank"] == 0);  // sorted by rank, whatever the order given
  const auto& r1 = j["ranks"][1];
  CHECK(r1["rank"] == 1);
  // Rank 1: SGEMM [1000.25, 1060.25), all-reduce [1050.25, 1100.25): 10 us hidden, 40 exposed.
  CHECK(r1["figures"]["compute_ns"] == 60000);
  CHECK(r1["figures"]["communication_ns"] == 50000);
  CHECK(r1["figures"]["exposed_communication_ns"] == 40000);
  // Its NCCL kernel carries the collective's args itself: 524288 floats = 2 MiB.
  CHECK(r1["comms"][0]["bytes"] == 2097152);
  CHECK(r1["comms"][0]["collective"] == "all_reduce");
  // aten::addmm: Input Dims [bias, [512, 1024], [1024, 2048], ...] -> M 512, N 2048, K 1024.
  CHECK(r1["gemms"][0]["shape"]["m"] == 512);
  CHECK(r1["gemms"][0]["shape"]["n"] == 2048);
  CHECK(r1["gemms"][0]["shape"]["k"] == 1024);
  // Overall: compute 100 + 60, comm 50 + 50, exposed 10 + 40 -> overlap 1 - 50/100.
  CHECK(j["overall"]["compute_ns"] == 160000);
  CHECK(j["overall"]["communication_ns"] == 100000);
  CHECK(j["overall"]["exposed_communication_ns"] == 50000);
  CHECK(j["overall"]["overlap"].get<double>() == Approx(0.5).epsilon(1e-12));
}

TEST_CASE("trace: gzip and plain JSON give the same report; output is deterministic", "[trace]") {
  const fs::path gz = scratch("rank0.json.gz");
  gzip_to(gz, slurp(kData + "rank0.json"));
  nlohmann::json plain = json_of({kData + "rank0.json"});
  nlohmann::json zipped = json_of({gz.string()});
  plain["ranks"][0].erase("file");
  zipped["ranks"][0].erase("file");
  CHECK(plain == zipped);
  for (const char* format : {"table", "json", "csv"}) {
    const CliResult a = cli({kData + "rank0.json", kData + "rank1.json.gz", "--format", format});
    const CliResult b = cli({kData + "rank0.json", kData + "rank1.json.gz", "--format", format});
    REQUIRE(a.rc == 0);
    CHECK(a.out == b.out);
  }
}

TEST_CASE("trace: CSV rows per rank, per step and overall", "[trace]") {
  const CliResult r = cli({kData + "rank0.json", kData + "rank1.json.gz", "--format", "csv"});
  REQUIRE(r.rc == 0);
  std::istringstream in(r.out);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() == 1 + 2 + 2 + 1);
  CHECK(lines[0] == "scope,rank,file,step,kernels,compute_us,comm_us,unoverlapped_us,overlap_pct,memory_us,span_us");
  CHECK(lines.back() == "overall,,,,7,160.000,100.000,50.000,50.0000,5.000,145.000");
  CHECK(lines[3] == "step,0," + kData + "rank0.json,ProfilerStep#1,3,70.000,40.000,10.000,75.0000,0.000,80.000");
}

TEST_CASE("trace: an Nsight Systems SQLite export", "[trace][nsys]") {
  const std::string db = nsys_db("nsys_rank.sqlite");
  const nlohmann::json j = json_of({db});
  const auto& r = j["ranks"][0];
  CHECK(r["format"] == "nsys");
  CHECK(r["rank_from_trace"] == false);
  // Compute [1000, 5000) + [6500, 6800) + [8200, 8600) = 4700 ns; reduce-scatter [4000, 7000) = 3000;
  // hidden [4000, 5000) + [6500, 6800) = 1300, exposed 1700.
  CHECK(r["figures"]["compute_ns"] == 4700);
  CHECK(r["figures"]["communication_ns"] == 3000);
  CHECK(r["figures"]["exposed_communication_ns"] == 1700);
  CHECK(r["figures"]["memory_ns"] == 500);
  // NVTX steps: ProfilerStep#0 (inline text) and ProfilerStep#1 (textId); 'forward' and the
  // instant marker are no steps. The elementwise kernel was launched at 8100, in step 1.
  REQUIRE(r["steps"].size() == 2);
  CHECK(r["steps"][0]["name"] == "ProfilerStep#0");
  CHECK(r["steps"][0]["figures"]["compute_ns"] == 4300);
  CHECK(r["steps"][0]["figures"]["exposed_communication_ns"] == 1700);
  CHECK(r["steps"][1]["name"] == "ProfilerStep#1");
  CHECK(r["steps"][1]["figures"]["compute_ns"] == 400);
  CHECK(r["steps"][1]["figures"]["overlap"].is_null());
  // No shapes or message sizes in an export: counted, reported unknown.
  CHECK(r["gemm_kernels"] == 2);
  CHECK(r["gemm_shape_unknown"] == 2);
  CHECK(r["comm_size_unknown"] == 1);
  CHECK(r["comms"][0]["collective"] == "reduce_scatter");
}

TEST_CASE("trace: an nsys peer copy (copyKind 10) is communication, other copies memory", "[trace][nsys]") {
  // nsys_rank.sql plus a peer copy [7500, 8000): communication [4000, 7000) + [7500, 8000) = 3500 ns,
  // compute unchanged (4700), hidden [4000, 5000) + [6500, 6800) = 1300, so 2200 exposed; the
  // device-to-host copy [7000, 7500) stays memory time.
  const std::string db = nsys_db("nsys_peer.sqlite", "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (7500, 8000, 0, 1, 7, 6, 100, 1048576, 10);");
  const nlohmann::json j = json_of({db});
  const auto& f = j["ranks"][0]["figures"];
  CHECK(f["communication_ns"] == 3500);
  CHECK(f["compute_ns"] == 4700);
  CHECK(f["exposed_communication_ns"] == 2200);
  CHECK(f["memory_ns"] == 500);
  bool peer = false;
  for (const auto& g : j["ranks"][0]["comms"]) peer = peer || (g["kernel"] == "[memcpy PtoP]" && g["library"] == "peer_copy");
  CHECK(peer);
}

TEST_CASE("trace: an nsys export of two processes is two ranks; emit_nvtx ranges give GEMM shapes", "[trace][nsys]") {
  const std::string db = nsys_db("nsys_two_ranks.sqlite", "", "nsys_two_ranks.sql");
  const nlohmann::json j = json_of({db});
  REQUIRE(j["ranks"].size() == 2);
  // Ranks by the GPU each process used first: pid 2000 on GPU 0, pid 1000 on GPU 1.
  const auto& r0 = j["ranks"][0];
  const auto& r1 = j["ranks"][1];
  CHECK(r0["part"] == "pid 2000, GPU 0");
  CHECK(r1["part"] == "pid 1000, GPU 1");
  // Rank 0: GEMM [1000, 2000) + [3000, 3500), all-reduce [2000, 3000) not hidden.
  CHECK(r0["figures"]["compute_ns"] == 1500);
  CHECK(r0["figures"]["communication_ns"] == 1000);
  CHECK(r0["figures"]["exposed_communication_ns"] == 1000);
  // Rank 1: GEMM [1000, 1600), all-reduce [1200, 2600): 400 hidden, 1000 exposed.
  CHECK(r1["figures"]["compute_ns"] == 600);
  CHECK(r1["figures"]["exposed_communication_ns"] == 1000);
  CHECK(j["overall"]["exposed_communication_ns"] == 2000);
  // Launch 1 of rank 0 ran inside aten::linear > aten::addmm: the innermost op, addmm, gives
  // [4096, 1024] x [1024, 4096]; the dtype from the kernel's name (bf16). Its launch 3 ran in no op:
  // shape unknown. Correlation id 1 of rank 1 is another kernel: aten::mm [256, 512] x [512, 128],
  // Float from "sgemm".
  CHECK(r0["gemm_kernels"] == 2);
  CHECK(r0["gemm_shape_unknown"] == 1);
  nlohmann::json shaped;
  for (const auto& g : r0["gemms"])
    if (!g["shape"].is_null()) shaped = g;
  CHECK(shaped["op"] == "aten::addmm");
  CHECK(shaped["shape"] == nlohmann::json{{"batch", 1}, {"m", 4096}, {"n", 4096}, {"k", 1024}, {"dtype", "BFloat16"}});
  REQUIRE(r1["gemms"].size() == 1);
  CHECK(r1["gemms"][0]["op"] == "aten::mm");
  CHECK(r1["gemms"][0]["shape"] == nlohmann::json{{"batch", 1}, {"m", 256}, {"n", 128}, {"k", 512}, {"dtype", "Float"}});
  CHECK(r1["gemm_shape_unknown"] == 0);
  // The export has no collective arguments: counted as size unknown on both ranks.
  CHECK(r0["comm_size_unknown"] == 1);
  CHECK(r1["comm_size_unknown"] == 1);
  // The step range is rank 1's (its thread's process).
  CHECK(r0["steps"].empty());
  REQUIRE(r1["steps"].size() == 1);
  CHECK(r1["steps"][0]["name"] == "ProfilerStep#3");
  // The table names each part and how ranks were numbered.
  const CliResult t = cli({db});
  CHECK(t.out.find("ranks by the order of the files, an export's processes by the GPU each used first") != std::string::npos);
  CHECK(t.out.find("nsys_two_ranks.sqlite [pid 1000, GPU 1]") != std::string::npos);
}

TEST_CASE("trace --hardware prices an nsys export's GEMMs from its emit_nvtx shapes", "[trace][nsys]") {
  // nsys_two_ranks.sql: rank 0's addmm [4096, 1024] x [1024, 4096] (the range text "aten::addmm, seq = 7,
  // op_id = 12, sizes = [...]"), its dtype bf16 from the kernel's name. Priced as the Kineto reader's
  // GEMMs are: the same function on the same shape and kernel; the GEMM launched in no op range is
  // not priced (shape unknown).
  const std::string db = nsys_db("nsys_two_ranks_hw.sqlite", "", "nsys_two_ranks.sql");
  const nlohmann::json j = json_of({db, "--hardware", "h100-sxm-8x-nvswitch"});
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware");
  int priced = 0, unknown = 0;
  for (const auto& row : j["predictions"]["rows"]) {
    if (row["class"] != "gemm" || row["rank"] != 0) continue;
    if (row["predicted_ns"].is_null()) {
      CHECK(row["not_predicted"] == "shape unknown");
      ++unknown;
      continue;
    }
    CHECK(row["what"] == "4096x4096x1024");
    const overlap::traces::GemmPrice p =
        overlap::traces::price_gemm(hw, overlap::traces::GemmShape{1, 4096, 4096, 1024, "BFloat16"}, row["kernel"].get<std::string>());
    REQUIRE(p.ns);
    CHECK(row["predicted_ns"].get<double>() == *p.ns);
    ++priced;
  }
  CHECK(priced == 1);
  CHECK(unknown == 1);
}

TEST_CASE("trace --kernels: every kernel group with its class, shape or message, in table, JSON and CSV", "[trace]") {
  const nlohmann::json j = json_of({kData + "rank0.json", kData + "rank1.json.gz", "--kernels"});
  REQUIRE(j["ranks"].size() == 2);
  const auto& k0 = j["ranks"][0]["kernels"];
  // Rank 0: 2 GEMM groups, 2 collectives, the elementwise kernel and the copy; longest total first.
  REQUIRE(k0.size() == 6);
  CHECK(k0[0]["kind"] == "gemm");
  CHECK(k0[0]["what"] == "4096x2048x8192 c10::BFloat16");
  CHECK(k0[0]["total_ns"] == 50000);
  std::int64_t total = 0, previous = INT64_MAX;
  std::map<std::string, int> kinds;
  for (const auto& k : k0) {
    total += k["total_ns"].get<std::int64_t>();
    CHECK(k["total_ns"].get<std::int64_t>() <= previous);
    previous = k["total_ns"].get<std::int64_t>();
    ++kinds[k["kind"].get<std::string>()];
    CHECK(k["mean_ns"] == k["total_ns"].get<std::int64_t>() / k["count"].get<std::int64_t>());
  }
  // Every activity counted once: compute 100 us + communication 50 us (no overlap among their own
  // kind on this rank) + the 5 us copy.
  CHECK(total == 155000);
  CHECK(kinds == std::map<std::string, int>{{"collective", 2}, {"copy", 1}, {"gemm", 2}, {"memory_bound", 1}});
  for (const auto& k : k0)
    if (k["kind"] == "collective") CHECK(k["class"] == "communication");
  const CliResult csv = cli({kData + "rank0.json", kData + "rank1.json.gz", "--kernels", "--format", "csv"});
  REQUIRE(csv.rc == 0);
  CHECK(csv.out.rfind("rank,file,class,kind,kernel,what,count,total_us,mean_us,min_us,max_us\n", 0) == 0);
  CHECK(std::count(csv.out.begin(), csv.out.end(), '\n') == 1 + 6 + 2);
  const CliResult table = cli({kData + "rank0.json", kData + "rank1.json.gz", "--kernels"});
  CHECK(table.out.find("8 group(s) of 8 kernel(s) and copies; GEMM kernels with shape unknown: 1") != std::string::npos);
  // --kernels is a listing, not a prediction.
  CHECK(cli({kData + "rank0.json", "--kernels", "--hardware", "h100-sxm-8x-nvswitch"}).rc == 2);
}

TEST_CASE("trace: files of different runs are refused", "[trace]") {
  const std::string rank0 = slurp(kData + "rank0.json");
  SECTION("a world_size that differs") {
    std::string other = rank0;
    const std::string from = "\"rank\": 0, \"world_size\": 2";
    other.replace(other.find(from), from.size(), "\"rank\": 1, \"world_size\": 4");
    const fs::path p = scratch("ws4.json");
    spit(p, other);
    const CliResult r = cli({kData + "rank0.json", p.string()});
    CHECK(r.rc == 2);
    CHECK(r.err.find("ws4.json") != std::string::npos);
    CHECK(r.err.find("distributedInfo.world_size") != std::string::npos);
    CHECK(r.err.find("different runs") != std::string::npos);
  }
  SECTION("a rank given twice") {
    const CliResult r = cli({kData + "rank0.json", kData + "rank0.json"});
    CHECK(r.rc == 2);
    CHECK(r.err.find("rank 0 is also") != std::string::npos);
  }
  SECTION("a rank outside 0..world_size-1") {
    std::string other = rank0;
    other.replace(other.find("\"rank\": 0,"), 10, "\"rank\": 5,");
    const fs::path p = scratch("rank5.json");
    spit(p, other);
    const CliResult r = cli({p.string()});
    CHECK(r.rc == 2);
    CHECK(r.err.find("rank 5 is outside 0..1") != std::string::npos);
  }
  SECTION("some files with a rank, some without") {
    const CliResult r = cli({kData + "rank0.json", nsys_db("nsys_norank.sqlite")});
    CHECK(r.rc == 2);
    CHECK(r.err.find("nsys_norank.sqlite") != std::string::npos);
    CHECK(r.err.find("distributedInfo.rank") != std::string::npos);
  }
  SECTION("a missing rank is a warning, the rest is reported") {
    const CliResult r = cli({kData + "rank0.json"});
    CHECK(r.rc == 0);
    CHECK(r.err.find("warning: no trace of rank(s) 1 (world_size 2)") != std::string::npos);
  }
}

TEST_CASE("trace: bad input names the file and what is wrong, exit 2", "[trace]") {
  const std::string rank0 = slurp(kData + "rank0.json");
  const auto refused = [](const std::string& path, const std::string& what) {
    const CliResult r = cli({path});
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find(path) != std::string::npos);
    CHECK(r.err.find(what) != std::string::npos);
  };
  SECTION("truncated JSON") {
    const fs::path p = scratch("truncated.json");
    spit(p, rank0.substr(0, rank0.size() / 2));
    refused(p.string(), "not valid JSON (truncated?)");
  }
  SECTION("truncated gzip") {
    const fs::path whole = scratch("whole.json.gz");
    gzip_to(whole, rank0);
    const std::string bytes = slurp(whole.string());
    const fs::path p = scratch("truncated.json.gz");
    spit(p, bytes.substr(0, bytes.size() * 2 / 3));
    refused(p.string(), "truncated or corrupt gzip stream");
  }
  SECTION("no GPU kernels") {
    const fs::path p = scratch("cpu_only.json");
    spit(p, R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]})");
    refused(p.string(), "no GPU kernels");
  }
  SECTION("JSON that is no trace") {
    const fs::path p = scratch("not_trace.json");
    spit(p, R"({"name": "something else", "events": []})");
    refused(p.string(), "no traceEvents");
  }
  SECTION("neither format") {
    refused(std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware/h100-sxm-8x-nvswitch.yaml", "not a trace");
  }
  SECTION("an empty file") {
    const fs::path p = scratch("empty.json");
    spit(p, "");
    refused(p.string(), "empty file");
  }
  SECTION("an SQLite file without the kernel table") {
    const fs::path p = scratch("no_kernels.sqlite");
    fs::remove(p);
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(p.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
    refused(p.string(), "CUPTI_ACTIVITY_KIND_KERNEL");
  }
  SECTION("an SQLite export cut short") {
    const std::string bytes = slurp(nsys_db("whole.sqlite"));
    const fs::path p = scratch("cut.sqlite");
    spit(p, bytes.substr(0, 1024));
    const CliResult r = cli({p.string()});
    CHECK(r.rc == 2);
    CHECK(r.err.find("cut.sqlite") != std::string::npos);
  }
  SECTION("a file that does not exist") {
    refused(scratch("absent.json").string(), "cannot open");
  }
}

TEST_CASE("trace: -o writes the report atomically", "[trace]") {
  const fs::path p = scratch("report.json");
  fs::remove(p);
  const CliResult r = cli({kData + "rank0.json", "--format", "json", "-o", p.string()});
  REQUIRE(r.rc == 0);
  CHECK(r.out.empty());
  CHECK(r.err.find("wrote") != std::string::npos);
  CHECK(nlohmann::json::parse(slurp(p.string()))["overall"]["exposed_communication_ns"] == 10000);
  CHECK(cli({kData + "rank0.json", "-o", ""}).rc == 2);
}

TEST_CASE("trace: kernel classes and GEMM shapes by name and op", "[trace]") {
  using namespace overlap::traces;
  // Every family's names: tests/trace/test_kernel_kind.cpp.
  CHECK(activity_class(builtin_kernel_family("ncclDevKernel_AllReduce_Sum_bf16_RING_LL")) == ActivityClass::communication);
  CHECK(activity_class(builtin_kernel_family("sm90_xmma_gemm_bf16bf16")) == ActivityClass::compute);
  CHECK(builtin_kernel_family("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN").kind == KernelKind::gemm);
  CHECK(builtin_kernel_family("void at::native::vectorized_elementwise_kernel<4>").kind == KernelKind::memory_bound);
  CHECK(collective_from_kernel_name("ncclKernel_ReduceScatter_RING_LL_Sum_half") == "reduce_scatter");
  CHECK(collective_from_kernel_name("ncclDevKernel_SendRecv") == "send_recv");
  CHECK(collective_from_kernel_name("reduce_scatter_tensor_coalesced") == "reduce_scatter");
  OpInfo bmm;
  bmm.name = "aten::bmm";
  bmm.input_dims = {{8, 128, 64}, {8, 64, 256}};
  const auto s = gemm_shape(bmm);
  REQUIRE(s);
  CHECK(s->batch == 8);
  CHECK(s->m == 128);
  CHECK(s->n == 256);
  CHECK(s->k == 64);
  OpInfo linear;
  linear.name = "aten::linear";
  linear.input_dims = {{4, 512, 1024}, {3072, 1024}, {3072}};
  const auto l = gemm_shape(linear);
  REQUIRE(l);
  CHECK(l->m == 2048);
  CHECK(l->n == 3072);
  CHECK(l->k == 1024);
  OpInfo mismatched;
  mismatched.name = "aten::mm";
  mismatched.input_dims = {{4, 5}, {6, 7}};  // K disagrees: no shape rather than a guess
  CHECK_FALSE(gemm_shape(mismatched));
}

TEST_CASE("trace --hardware: each GEMM and collective predicted by the cost model beside its measurement", "[trace]") {
  const nlohmann::json j = json_of({kData + "rank0.json", kData + "rank1.json.gz", "--hardware", "h100-sxm-8x-nvswitch"});
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware");
  const auto& p = j["predictions"];
  CHECK(p["hardware"] == hw.name);
  const auto& rows = p["rows"];
  REQUIRE(rows.size() == 6);  // rank 0: 2 GEMM groups, 2 collectives; rank 1: 1 + 1
  // The aten::mm GEMM (4096 x 2048 x 8192 bf16): the model's closed form, in ns.
  const double gemm_ns = static_cast<double>(gemm_time_ps(hw, overlap::GemmShape{4096, 2048, 8192, DType::bf16})) / 1000.0;
  CHECK(rows[0]["predicted_ns"].get<double>() == Approx(gemm_ns));
  CHECK(rows[0]["error"].get<double>() == Approx((gemm_ns - 50000.0) / 50000.0));
  CHECK(rows[1]["predicted_ns"].is_null());
  CHECK(rows[1]["not_predicted"] == "shape unknown");
  // The 2 MiB all-reduce over 2 ranks, as plan_collective with ranks = the group size.
  const double ar_ns = static_cast<double>(collective_time_ps(hw, CollectivePrimitive::all_reduce, 2097152, 2,
                                                              sim::collective_link_class(hw, 2))) / 1000.0;
  CHECK(rows[2]["class"] == "collective");
  CHECK(rows[2]["predicted_ns"].get<double>() == Approx(ar_ns));
  // Rank 1's SGEMM is fp32, which the profile has no peak for: listed, not predicted.
  CHECK(rows[4]["not_predicted"] == "dtype fp32 not in the profile");
  // Summary: |errors| of the three collectives (40, 10, 50 us measured); median = the middle one.
  std::vector<double> errors;
  for (const auto& r : rows)
    if (r["class"] == "collective") errors.push_back(std::abs(r["error"].get<double>()));
  std::sort(errors.begin(), errors.end());
  REQUIRE(errors.size() == 3);
  const auto& coll = p["summary"][1];
  CHECK(coll["class"] == "collective");
  CHECK(coll["predicted"] == 3);
  CHECK(coll["median_abs_error"].get<double>() == Approx(errors[1]));
  CHECK(coll["max_abs_error"].get<double>() == Approx(errors[2]));
  CHECK(p["summary"][0]["predicted"] == 1);
  CHECK(p["summary"][0]["groups"] == 3);
  const CliResult bad = cli({kData + "rank0.json", "--hardware", "no-such-profile"});
  CHECK(bad.rc == 2);
}

TEST_CASE("trace --step-prefix: steps are the ranges whose names start with it", "[trace]") {
  // In the Kineto fixture no annotation starts with "Iteration"; "ProfilerStep#2" alone with its prefix.
  CHECK(json_of({kData + "rank0.json", "--step-prefix", "Iteration"})["ranks"][0]["steps"].empty());
  const nlohmann::json j = json_of({kData + "rank0.json", "--step-prefix", "ProfilerStep#2"});
  REQUIRE(j["ranks"][0]["steps"].size() == 1);
  CHECK(j["ranks"][0]["steps"][0]["figures"]["compute_ns"] == 30000);
  // The nsys fixture's 'forward' NVTX range [600, 700) launched no kernel: a step with nothing in it.
  const nlohmann::json n = json_of({nsys_db("nsys_prefix.sqlite"), "--step-prefix", "forward"});
  REQUIRE(n["ranks"][0]["steps"].size() == 1);
  CHECK(n["ranks"][0]["steps"][0]["figures"]["kernels"] == 0);
}
