// ROCm traces: PyTorch profiler traces taken on AMD GPUs, in the layouts of Kineto's two ROCm back
// ends (tests/data/trace/make_rocm_fixtures.py), read, linked to their ops, recognised by family and
// priced against the MI300X profile.
#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "calibrate/traces/attention_pricing.hpp"
#include "calibrate/traces/gemm_pricing.hpp"
#include "calibrate/traces/memory_pricing.hpp"
#include "calibrate/traces/trace_model.hpp"
#include "cost_model/profile_loader.hpp"
#include "tests/support/cli_run.hpp"

using namespace overlap;
using namespace overlap::traces;

namespace {

const std::string kRocmData = std::string(OVERLAP_SOURCE_DIR) + "/tests/data/trace/";

const HardwareProfile& mi300x() {
  static const HardwareProfile hw = load_profile("mi300x-8x", std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware");
  return hw;
}

}  // namespace

TEST_CASE("ROCm traces: both Kineto ROCm layouts read, every kernel linked to its op and given its family",
          "[trace][rocm]") {
  for (const char* name : {"rocm_roctracer.json", "rocm_rocprof.json"}) {
    INFO(name);
    const RankTrace t = read_trace(kRocmData + name, "ProfilerStep#");
    REQUIRE(t.activities.size() == 4);
    std::map<std::string, const GpuActivity*> by_kind;
    for (const GpuActivity& a : t.activities) by_kind[kind_name(a.kind)] = &a;
    REQUIRE(by_kind.size() == 4);
    // The hipBLASLt kernel reaches its aten::mm (8192 x 4096 x 4096 bf16) through its External id,
    // which in the roctracer layout is all a kernel carries (no correlation id).
    const GpuActivity& gemm = *by_kind.at("gemm");
    REQUIRE(gemm.link == OpLink::gemm);
    const GemmOp& g = t.gemm_ops.at(static_cast<std::size_t>(gemm.op));
    CHECK(g.m == 8192);
    CHECK(g.n == 4096);
    CHECK(g.k == 4096);
    CHECK(t.names[g.dtype] == "c10::BFloat16");
    // Composable Kernel's FMHA to SDPA's shape; the blit kernel to aten::copy_'s bytes.
    CHECK(by_kind.at("attention")->link == OpLink::shaped);
    CHECK(t.shaped_ops.at(static_cast<std::size_t>(by_kind.at("attention")->op)).seq_q == 4096);
    REQUIRE(by_kind.at("memory_bound")->link == OpLink::shaped);
    // aten::copy_ of [8, 4096] bf16 reads one tensor and writes the other: 2 x 8 x 4096 x 2 bytes.
    CHECK(t.shaped_ops.at(static_cast<std::size_t>(by_kind.at("memory_bound")->op)).bytes == 2 * 8 * 4096 * 2);
    // RCCL keeps NCCL's kernel names; its args are on record_param_comms.
    const GpuActivity& rccl = *by_kind.at("collective");
    CHECK(rccl.library == CommLibrary::nccl);
    CHECK(rccl.cls == ActivityClass::communication);
    REQUIRE(rccl.link == OpLink::comm);
    CHECK(t.comm_ops.at(static_cast<std::size_t>(rccl.op)).in_nelems == 1048576);
    // pid is the device (GPU 2) in both layouts; the queue the stream.
    CHECK(gemm.device == 2);
    CHECK(rccl.stream == 2);
  }
}

TEST_CASE("ROCm traces: trace --hardware prices the kernels against the MI300X profile", "[trace][rocm]") {
  using overlap::test::cli;
  const HardwareProfile& hw = mi300x();
  for (const char* name : {"rocm_roctracer.json", "rocm_rocprof.json"}) {
    INFO(name);
    const auto r = cli({"trace", kRocmData + name, "--hardware", "mi300x-8x", "--format", "json"});
    INFO(r.err);
    REQUIRE(r.rc == 0);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    CHECK(j["predictions"]["hardware"] == "mi300x-8x");
    std::map<std::string, nlohmann::json> rows;
    for (const auto& x : j["predictions"]["rows"]) rows[x["class"].get<std::string>()] = x;
    // Each figure is the pricing function's for the shape the op recorded: the link and the profile
    // are what this checks (the functions' closed forms: test_trace_pricing.cpp).
    const traces::GemmShape shape{1, 8192, 4096, 4096, "c10::BFloat16"};
    const GemmPrice gemm = price_gemm(hw, shape, rows["gemm"]["kernel"].get<std::string>());
    REQUIRE(gemm.ns);
    CHECK(rows["gemm"]["predicted_ns"].get<double>() == *gemm.ns);
    // 8192 x 4096 tiles of 256 x 128 on 304 compute units: 1024 tiles, 4 waves, compute-bound (96 MiB
    // of operands stream in about 25 us at 5300 x 0.755 GB/s; a wave's 2 x 256 x 128 x 4096 flop at
    // 1307 x 0.7 / 304 TFLOPS per CU takes 89 us).
    CHECK(gemm.launch.waves == 4);
    CHECK(*gemm.ns == Approx(4 * 2.0 * 256 * 128 * 4096 / (1307e12 * 0.7 / 304) * 1e9).epsilon(1e-6));
    const AttentionShape a{2, 16, 4096, 4096, 128, true, AttentionPass::forward, "c10::BFloat16"};
    const auto attention_ps = attention_time_ps(hw, a, rows["attention"]["kernel"].get<std::string>());
    REQUIRE(attention_ps);
    CHECK(rows["attention"]["predicted_ns"].get<double>() == static_cast<double>(*attention_ps) / 1000.0);
    CHECK(rows["memory_bound"]["predicted_ns"].get<double>() ==
          static_cast<double>(streaming_kernel_ps(hw, 2 * 8 * 4096 * 2)) / 1000.0);
    // One rank: the RCCL kernel's time includes waiting for its peers, and is priced whole.
    CHECK(rows["collective"]["measured_part"] == "whole kernel");
    CHECK(rows["collective"]["predicted_ns"].is_number());
  }
}

TEST_CASE("ROCm traces: a ROCm trace without its GPU side is refused, saying so", "[trace][rocm]") {
  using overlap::test::cli;
  const std::string file = kRocmData + "rocm_no_kernels.json";
  const auto r = cli({"trace", file});
  CHECK(r.rc == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find(file) != std::string::npos);
  CHECK(r.err.find("no GPU kernels") != std::string::npos);
  CHECK(r.err.find("HIP runtime calls: a ROCm trace") != std::string::npos);
}
