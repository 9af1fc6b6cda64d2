// `overlap-sim trace` on the traces tests/data/trace/make_fixtures.py lays out by hand: an older
// profiler's layout (kernels reach their ops through the launching thread), a GEMM op's helper
// kernels, communication that is not NCCL's (DeepEP, a peer copy, userbuffers), and two ranks that
// each arrive late at a collective (wait vs transfer). Every figure is a sum of interval lengths
// worked out in the comments; exact, as times are integer nanoseconds.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "calibrate/traces/collective_wait.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"

namespace {

const std::string kData = std::string(OVERLAP_SOURCE_DIR) + "/tests/data/trace/";

overlap::test::CliResult trace(std::vector<std::string> args) {
  args.insert(args.begin(), "trace");
  return overlap::test::cli(args);
}

nlohmann::json json_of(std::vector<std::string> args) {
  args.insert(args.end(), {"--format", "json"});
  const auto r = trace(args);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  return nlohmann::json::parse(r.out);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const nlohmann::json& group_of(const nlohmann::json& list, const std::string& kernel_prefix) {
  for (const auto& g : list)
    if (g["kernel"].get<std::string>().rfind(kernel_prefix, 0) == 0) return g;
  FAIL("no group " << kernel_prefix);
  return list;
}

}  // namespace

TEST_CASE("trace: an older profiler's layout links kernels to ops through the launching thread", "[trace][layout]") {
  // The fixture is that layout: every kernel's External id is its own correlation id (1001..), and
  // none is an op's External id (1..8), so External ids alone give no kernel an op.
  const nlohmann::json doc = nlohmann::json::parse(slurp(kData + "old_layout.json"));
  std::vector<std::int64_t> op_ids;
  for (const auto& e : doc["traceEvents"])
    if (e["cat"] == "cpu_op") op_ids.push_back(e["args"]["External id"].get<std::int64_t>());
  for (const auto& e : doc["traceEvents"]) {
    if (e["cat"] != "kernel") continue;
    CHECK(e["args"]["External id"] == e["args"]["correlation"]);
    CHECK(std::find(op_ids.begin(), op_ids.end(), e["args"]["External id"].get<std::int64_t>()) == op_ids.end());
  }
  const nlohmann::json j = json_of({kData + "old_layout.json"});
  const auto& r = j["ranks"][0];
  // Four GEMM kernels; three launched inside a matmul op on their thread.
  CHECK(r["gemm_kernels"] == 4);
  CHECK(r["gemm_shape_unknown"] == 1);
  // The GEMM launched at 30 us inside aten::linear > aten::addmm: the innermost op, addmm,
  // [512, 1024] x [1024, 4096].
  const auto& addmm = group_of(r["gemms"], "sm90_xmma_gemm");
  CHECK(addmm["op"] == "aten::addmm");
  CHECK(addmm["shape"] == nlohmann::json{{"batch", 1}, {"m", 512}, {"n", 4096}, {"k", 1024}, {"dtype", "c10::BFloat16"}});
  // aten::mm's split-K GEMM: only the GEMM kernel (40 us) carries the shape; cuBLAS' reduction of
  // its partial sums (10 us, launched by the same op) is a memory-bound kernel of its own.
  const auto& mm = group_of(r["gemms"], "nvjet_tst_64x8");
  CHECK(mm["op"] == "aten::mm");
  CHECK(mm["shape"]["m"] == 256);
  CHECK(mm["shape"]["n"] == 1024);
  CHECK(mm["shape"]["k"] == 8192);
  CHECK(mm["count"] == 1);
  CHECK(mm["total_ns"] == 40000);
  const auto& bmm = group_of(r["gemms"], "void cutlass::Kernel2");
  CHECK(bmm["shape"] == nlohmann::json{{"batch", 8}, {"m", 128}, {"n", 256}, {"k", 64}, {"dtype", "float"}});
  // Launched at 75 us on thread 200 while aten::mm was open on thread 100: not aten::mm's.
  const auto& other_thread = group_of(r["gemms"], "ampere_sgemm_32x32");
  CHECK(other_thread["shape"].is_null());
  CHECK(other_thread["op"] == "");
  // The all-reduce reaches record_param_comms the same way: 1048576 BFloat16 in a group of 8.
  REQUIRE(r["comms"].size() == 1);
  CHECK(r["comms"][0]["bytes"] == 2097152);
  CHECK(r["comms"][0]["group_size"] == 8);
  // The helpers listed under their own family: the bias copy (inside aten::copy_), the split-K
  // reduction, the GELU.
  const nlohmann::json k = json_of({kData + "old_layout.json", "--kernels"});
  int memory_bound = 0;
  for (const auto& g : k["ranks"][0]["kernels"]) {
    const std::string name = g["kernel"];
    if (name.find("splitKreduce") != std::string::npos || name.find("direct_copy") != std::string::npos ||
        name.find("Gelu") != std::string::npos) {
      CHECK(g["kind"] == "memory_bound");
      CHECK(g["what"] == "");
      ++memory_bound;
    }
  }
  CHECK(memory_bound == 3);
}

TEST_CASE("trace: a GEMM op's helper kernels keep their own family in today's layout too", "[trace][layout]") {
  // rank0.json with a split-K reduction launched by the same aten::mm (External id 11) as its GEMM.
  std::string text = slurp(kData + "rank0.json");
  const std::string anchor = R"(    {"ph": "f", "id": 101)";
  const auto at = text.find(anchor);
  REQUIRE(at != std::string::npos);
  text.insert(at, R"J(    {"ph": "X", "cat": "kernel", "name": "void splitKreduce_kernel<32, 16, int, float, __nv_bfloat16>(cublasSplitKParams<float>)", "pid": 0, "tid": 7, "ts": 150.000, "dur": 4.000, "args": {"External id": 11, "device": 0, "stream": 7, "correlation": 109}},
)J");
  const std::filesystem::path path = overlap::test::binary_dir() / "trace_test_tmp_splitk.json";
  std::ofstream(path) << text;
  const nlohmann::json j = json_of({path.string()});
  const auto& mm = group_of(j["ranks"][0]["gemms"], "sm90_xmma_gemm");
  CHECK(mm["op"] == "aten::mm");
  CHECK(mm["count"] == 1);
  CHECK(mm["total_ns"] == 50000);  // the GEMM's 50 us alone, not (50 + 4) / 2 per kernel
  CHECK(j["ranks"][0]["gemm_kernels"] == 2);
}

TEST_CASE("trace: DeepEP, peer copies and userbuffers count as communication", "[trace][layout]") {
  const nlohmann::json j = json_of({kData + "deepep_rank0.json"});
  const auto& f = j["ranks"][0]["figures"];
  // Compute: DeepEP's layout kernel [0, 10), the grouped GEMM [100, 200), FlashAttention [270, 310):
  // 10 + 100 + 40 = 150 us. Communication: notify_dispatch [10, 20) and dispatch [20, 120), combine
  // [180, 260), the peer copy [260, 280), userbuffers [280, 300): [10, 120) + [180, 300) = 230 us.
  // Hidden: [100, 120) + [180, 200) + [270, 300) = 70 us, so 160 exposed.
  CHECK(f["compute_ns"] == 150000);
  CHECK(f["communication_ns"] == 230000);
  CHECK(f["exposed_communication_ns"] == 160000);
  CHECK(f["memory_ns"] == 0);
  std::map<std::string, int> libraries;
  for (const auto& g : j["ranks"][0]["comms"]) ++libraries[g["library"].get<std::string>()];
  CHECK(libraries == std::map<std::string, int>{{"deepep", 3}, {"peer_copy", 1}, {"userbuffers", 1}});
  CHECK(group_of(j["ranks"][0]["comms"], "void deep_ep::intranode::dispatch")["collective"] == "dispatch");
  const nlohmann::json k = json_of({kData + "deepep_rank0.json", "--kernels"});
  std::map<std::string, std::string> kind;
  for (const auto& g : k["ranks"][0]["kernels"]) kind[g["kernel"].get<std::string>().substr(0, 30)] = g["kind"];
  CHECK(kind["void cutlass::device_kernel<cu"] == "grouped_gemm");
  CHECK(kind["void flash::flash_fwd_kernel<F"] == "attention");
  CHECK(kind["void deep_ep::layout::get_disp"] == "memory_bound");
  const auto table = trace({kData + "deepep_rank0.json"});
  CHECK(table.out.find("Communication kernels (NCCL's and other libraries'") != std::string::npos);
  CHECK(table.out.find("other communication kernels: deepep 3, peer_copy 1, userbuffers 1") != std::string::npos);
}

TEST_CASE("trace: two ranks' collectives split into waiting for the last peer and the transfer", "[trace][wait]") {
  const nlohmann::json j = json_of({kData + "late_rank1.json", kData + "late_rank0.json"});
  const auto& r0 = j["ranks"][0];
  const auto& r1 = j["ranks"][1];
  // Rank 1's clock reads 1000 us more: both all-reduces end at 220 and 360 on rank 0, 1220 and 1360
  // on rank 1, so the offset (median of the end differences) is exactly 1000 us.
  CHECK(r0["clock_offset_ns"] == 0);
  CHECK(r1["clock_offset_ns"] == 1000000);
  // First all-reduce: rank 0 [100, 220), rank 1 [160, 220) in rank 0's time; the last arrives at 160:
  // rank 0 waits 60 and transfers 60, rank 1 waits 0 and transfers 60. Second: rank 0 [300, 360),
  // rank 1 [280, 360); last at 300: rank 0 waits 0, transfers 60; rank 1 waits 20, transfers 60.
  const auto& ar0 = group_of(r0["comms"], "ncclDevKernel_AllReduce");
  const auto& ar1 = group_of(r1["comms"], "ncclDevKernel_AllReduce");
  CHECK(ar0["matched"] == 2);
  CHECK(ar0["wait_ns"] == 60000);
  CHECK(ar0["transfer_ns"] == 120000);
  CHECK(ar1["wait_ns"] == 20000);
  CHECK(ar1["transfer_ns"] == 120000);
  for (const auto* g : {&ar0, &ar1}) CHECK((*g)["wait_ns"].get<std::int64_t>() + (*g)["transfer_ns"].get<std::int64_t>() == (*g)["total_ns"]);
  // The all-gather ran twice on rank 0 and once on rank 1: not matched, whole times, and a note.
  const auto& ag0 = group_of(r0["comms"], "ncclDevKernel_AllGather");
  CHECK(ag0["matched"] == 0);
  CHECK(ag0["wait_ns"].is_null());
  REQUIRE(j["collective_notes"].size() == 1);
  CHECK(j["collective_notes"][0].get<std::string>().find("2 kernels on rank 0, 1 on rank 1") != std::string::npos);
  CHECK(j["collectives_matched"] == 2);
  // The model sees only the transfer: 60 us per all-reduce on both ranks, where the whole kernels
  // averaged 90 and 70.
  const nlohmann::json p = json_of({kData + "late_rank0.json", kData + "late_rank1.json", "--hardware", "h100-sxm-8x-nvswitch"});
  int transfers = 0;
  for (const auto& row : p["predictions"]["rows"]) {
    if (row["class"] != "collective") continue;
    if (row["kernel"].get<std::string>().rfind("ncclDevKernel_AllReduce", 0) == 0) {
      CHECK(row["measured_part"] == "transfer");
      CHECK(row["measured_ns"] == 60000);
      ++transfers;
    } else {
      CHECK(row["measured_part"] == "whole kernel");
    }
  }
  CHECK(transfers == 2);
  const auto table = trace({kData + "late_rank0.json", kData + "late_rank1.json"});
  CHECK(table.out.find("Collectives across ranks (2 matched;") != std::string::npos);
  CHECK(table.out.find("rank 1 1000.000") != std::string::npos);
  CHECK(table.out.find("4 kernel(s) not matched across ranks") != std::string::npos);  // 2 + 1 all-gathers, the reduce-scatter
}

TEST_CASE("trace: with one rank the collective times say that they include waiting", "[trace][wait]") {
  const auto table = trace({kData + "late_rank0.json"});
  REQUIRE(table.rc == 0);
  CHECK(table.out.find("one rank's trace cannot tell the wait from the transfer") != std::string::npos);
  CHECK(table.out.find("Collectives across ranks") == std::string::npos);
  const nlohmann::json p = json_of({kData + "late_rank0.json", "--hardware", "h100-sxm-8x-nvswitch"});
  for (const auto& row : p["predictions"]["rows"])
    if (row["class"] == "collective") CHECK(row["measured_part"] == "whole kernel");
  const auto h = trace({kData + "late_rank0.json", "--hardware", "h100-sxm-8x-nvswitch"});
  CHECK(h.out.find("collective: measured = the whole kernel, which includes waiting for the other ranks to arrive (one "
                   "rank's trace)") != std::string::npos);
}

TEST_CASE("split_collective_waits: wait + transfer is each kernel's duration; one rank is left alone", "[trace][wait]") {
  using namespace overlap::traces;
  // Three ranks, one all-reduce; rank 2's clock 5 us behind. Aligned starts 10, 40, 25 us; every
  // kernel ends at 100 (rank 2's reads 95). The last arrives at 40: waits 30, 0, 15; transfers 60.
  std::vector<RankReport> ranks(3);
  const std::int64_t starts[] = {10000, 40000, 20000}, ends[] = {100000, 100000, 95000};
  for (int i = 0; i < 3; ++i) {
    ranks[i].rank = i;
    ranks[i].file = "rank" + std::to_string(i) + ".json";  // one file per rank: clocks aligned
    CommGroup g;
    g.kernel = "ncclDevKernel_AllReduce";
    g.collective = "all_reduce";
    g.library = "nccl";
    g.count = 1;
    g.total_ns = ends[i] - starts[i];
    ranks[i].comms.push_back(g);
    ranks[i].comm_sequence.push_back({starts[i], ends[i], 0});
  }
  const CollectiveSplit s = split_collective_waits(ranks);
  CHECK(s.matched == 1);
  CHECK(ranks[2].clock_offset_ns == -5000);
  const std::int64_t wait[] = {30000, 0, 15000};
  for (int i = 0; i < 3; ++i) {
    CHECK(ranks[i].comms[0].wait_ns == wait[i]);
    CHECK(ranks[i].comms[0].transfer_ns == 60000);
    CHECK(ranks[i].comms[0].wait_ns + ranks[i].comms[0].transfer_ns == ranks[i].comms[0].total_ns);
  }
  std::vector<RankReport> one(ranks.begin(), ranks.begin() + 1);
  one[0].comms[0].matched = 0;
  one[0].comms[0].wait_ns = one[0].comms[0].transfer_ns = 0;
  one[0].clock_offset_ns.reset();
  CHECK(split_collective_waits(one).matched == 0);
  CHECK(one[0].comms[0].matched == 0);
  CHECK_FALSE(one[0].clock_offset_ns.has_value());
}

TEST_CASE("trace: in today's layout a kernel whose External id equals its correlation id by chance keeps its op", "[trace][layout]") {
  // rank0.json with the aten::mm GEMM's launch and kernel renumbered to correlation 11, its op's
  // External id: the other kernels' ids differ, so the trace is of today's layout and 11 is the op.
  std::string text = slurp(kData + "rank0.json");
  for (std::size_t at; (at = text.find("\"correlation\": 101}")) != std::string::npos;) text.replace(at, 19, "\"correlation\": 11}");
  for (std::size_t at; (at = text.find("\"correlation\": 101,")) != std::string::npos;) text.replace(at, 19, "\"correlation\": 11,");
  const std::filesystem::path path = overlap::test::binary_dir() / "trace_test_tmp_coincide.json";
  std::ofstream(path) << text;
  const nlohmann::json j = json_of({path.string()});
  const auto& mm = group_of(j["ranks"][0]["gemms"], "sm90_xmma_gemm");
  CHECK(mm["op"] == "aten::mm");
  CHECK(mm["shape"]["m"] == 4096);
  CHECK(j["ranks"][0]["steps"][0]["figures"]["kernels"] == 3);  // still launched in ProfilerStep#1
}
