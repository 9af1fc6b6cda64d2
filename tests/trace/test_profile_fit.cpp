// `overlap-sim profile fit` (tools/cmd_profile_fit.hpp, calibrate/traces/profile_fit.hpp): traces of
// a made-up cluster whose kernels were timed with a known GEMM efficiency and a known all-reduce
// bandwidth; the fitted profile must recover both, predict shapes and sizes the traces did not hold,
// and keep the base's values wherever the traces hold too few samples.
//
// The cluster: an h100-sxm-8x-nvswitch whose GEMMs reach 0.6 of peak (the base says 0.8), timed by
// the cost model on that profile (so the GEMM rate is the only difference), and whose 8-rank
// all-reduce takes 30 us + S / 100 GB/s (a closed form: a line in S, which the fitted curve's linear
// interpolation reproduces exactly between its sizes, up to the nanosecond the trace rounds to).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "calibrate/traces/profile_fit.hpp"
#include "cost_model/collective_model.hpp"
#include "cost_model/gemm_model.hpp"
#include "cost_model/profile_loader.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"

using namespace overlap;
namespace fs = std::filesystem;

namespace {

constexpr double kTrueEfficiency = 0.6;
constexpr double kAlphaNs = 30000;      // 30 us
constexpr double kBetaBytesPerNs = 100;  // 100 GB/s

std::int64_t true_all_reduce_ns(std::int64_t bytes) {
  return static_cast<std::int64_t>(std::llround(kAlphaNs + static_cast<double>(bytes) / kBetaBytesPerNs));
}

HardwareProfile truth() { return load_profile("h100-sxm-8x-nvswitch", default_hardware_dir(), {"gpu.gemm_efficiency=0.6"}); }

std::int64_t true_gemm_ns(std::int64_t m, std::int64_t n, std::int64_t k) {
  return static_cast<std::int64_t>(std::llround(static_cast<double>(gemm_time_ps(truth(), {m, n, k, DType::bf16})) / 1000.0));
}

fs::path scratch(const std::string& name) {
  const fs::path dir = overlap::test::binary_dir() / "profile_fit_test_tmp";
  fs::create_directories(dir);
  return dir / name;
}

struct Shape {
  std::int64_t m, n, k;
  int per_rank;  // kernels of this shape on each rank
};

// A Kineto trace of one rank, in the fields the reader follows (calibrate/traces/kineto_reader.hpp):
// an aten::mm cpu_op per GEMM (Input Dims, Input type) and a record_param_comms op per all-reduce
// (Collective name, In/Out msg nelems, Group size, dtype), each joined to its kernel by External id;
// kernels back to back on one stream, ts and dur in microseconds with three decimals.
std::string trace_json(int rank, const std::vector<Shape>& gemms, const std::vector<std::pair<std::int64_t, int>>& all_reduces,
                       bool with_gemms = true) {
  nlohmann::json events = nlohmann::json::array();
  std::int64_t t_ns = 1000000, id = 1;
  const auto us = [](std::int64_t ns) { return static_cast<double>(ns) / 1000.0; };
  const auto kernel = [&](const std::string& name, std::int64_t dur_ns, const nlohmann::json& op) {
    nlohmann::json cpu = op;
    cpu["ph"] = "X";
    cpu["pid"] = 100 + rank;
    cpu["tid"] = 100 + rank;
    cpu["ts"] = us(t_ns - 500);
    cpu["dur"] = 0.2;
    cpu["args"]["External id"] = id;
    events.push_back(cpu);
    events.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", name}, {"pid", 0}, {"tid", 7}, {"ts", us(t_ns)},
                      {"dur", us(dur_ns)}, {"args", {{"External id", id}, {"device", 0}, {"stream", 7}, {"correlation", id}}}});
    t_ns += dur_ns + 1000;
    ++id;
  };
  if (with_gemms)
    for (const Shape& s : gemms)
      for (int i = 0; i < s.per_rank; ++i)
        kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", true_gemm_ns(s.m, s.n, s.k),
               {{"cat", "cpu_op"},
                {"name", "aten::mm"},
                {"args", {{"Input Dims", {{s.m, s.k}, {s.k, s.n}}}, {"Input type", {"c10::BFloat16", "c10::BFloat16"}}}}});
  for (const auto& [bytes, count] : all_reduces)
    for (int i = 0; i < count; ++i)
      kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", true_all_reduce_ns(bytes),
             {{"cat", "cpu_op"},
              {"name", "record_param_comms"},
              {"args", {{"Collective name", "allreduce"}, {"In msg nelems", bytes / 2}, {"Out msg nelems", bytes / 2},
                        {"Group size", 8}, {"dtype", "BFloat16"}}}});
  nlohmann::json doc{{"schemaVersion", 1},
                     {"distributedInfo", {{"backend", "nccl"}, {"rank", rank}, {"world_size", 2}}},
                     {"traceEvents", events}};
  return doc.dump();
}

constexpr std::int64_t MiB = 1 << 20;
// Two kernels per rank of each shape: 4 over the two ranks, above --min-samples 3 only when pooled.
const std::vector<Shape> kShapes = {{4096, 4096, 4096, 2}, {8192, 2048, 8192, 2}, {2048, 8192, 4096, 2}, {4096, 14336, 4096, 2}};
const std::vector<std::pair<std::int64_t, int>> kSizes = {{1 * MiB, 2}, {4 * MiB, 2}, {16 * MiB, 2}, {64 * MiB, 2}};

std::vector<std::string> write_traces(const std::string& stem, const std::vector<Shape>& shapes,
                                      const std::vector<std::pair<std::int64_t, int>>& sizes, bool with_gemms = true) {
  std::vector<std::string> files;
  for (int rank = 0; rank < 2; ++rank) {
    const fs::path p = scratch(stem + std::to_string(rank) + ".json");
    std::ofstream(p) << trace_json(rank, shapes, sizes, with_gemms);
    files.push_back(p.string());
  }
  return files;
}

overlap::test::CliResult fit(const std::vector<std::string>& files, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"profile", "fit"};
  args.insert(args.end(), files.begin(), files.end());
  args.insert(args.end(), extra.begin(), extra.end());
  return overlap::test::cli(args);
}

double rel(double a, double b) { return std::abs(a - b) / b; }

}  // namespace

TEST_CASE("profile fit: the fitted profile reproduces the cluster the traces were timed on; the base did not", "[trace][fit]") {
  const auto files = write_traces("cluster", kShapes, kSizes);
  const fs::path out = scratch("cluster.yaml");
  const auto r = fit(files, {"--hardware", "h100-sxm-8x-nvswitch", "-o", out.string(), "--format", "json"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const auto report = nlohmann::json::parse(r.out);
  // The YAML loads back as a profile.
  const HardwareProfile fitted = load_profile(out.string());
  const HardwareProfile base = load_profile("h100-sxm-8x-nvswitch");
  CHECK(fitted.name == "h100-sxm-8x-nvswitch-fit");

  // The rate: every shape is compute-bound and timed at 0.6, so base / measured = 0.8 / 0.6 up to the
  // picosecond rounding of one CTA time (a few parts per million).
  CHECK(fitted.gpu.gemm_efficiency == Approx(kTrueEfficiency).epsilon(1e-4));
  // Every trace shape as measured (its entry), and shapes the traces did not hold from the rate alone.
  for (const Shape& s : kShapes)
    CHECK(rel(static_cast<double>(gemm_time_ps(fitted, {s.m, s.n, s.k, DType::bf16})) / 1000.0,
              static_cast<double>(true_gemm_ns(s.m, s.n, s.k))) < 1e-6);
  for (const Shape s : {Shape{8192, 8192, 8192, 0}, Shape{3072, 5120, 2048, 0}, Shape{16384, 1024, 4096, 0}}) {
    const double t = static_cast<double>(true_gemm_ns(s.m, s.n, s.k));
    CHECK(rel(static_cast<double>(gemm_time_ps(fitted, {s.m, s.n, s.k, DType::bf16})) / 1000.0, t) < 1e-4);
    CHECK(rel(static_cast<double>(gemm_time_ps(base, {s.m, s.n, s.k, DType::bf16})) / 1000.0, t) > 0.2);  // 0.6 vs 0.8
  }
  // The all-reduce curve: the sizes measured, and sizes between them (the line is exact there).
  const std::string link = sim::collective_link_class(fitted, 8);
  REQUIRE(fitted.curves.count("all_reduce.n8") == 1);
  for (const std::int64_t bytes : {1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB, 2 * MiB, 10 * MiB, 32 * MiB}) {
    const double t = kAlphaNs + static_cast<double>(bytes) / kBetaBytesPerNs;
    const double fitted_ns = static_cast<double>(collective_time_ps(fitted, CollectivePrimitive::all_reduce, bytes, 8, link)) / 1000.0;
    const double base_ns = static_cast<double>(collective_time_ps(base, CollectivePrimitive::all_reduce, bytes, 8, link)) / 1000.0;
    INFO(bytes << " B: fitted " << fitted_ns << " ns, base " << base_ns << " ns, true " << t);
    CHECK(std::abs(fitted_ns - t) <= 1.0);  // the nanosecond the trace rounds each sample to
    CHECK(rel(base_ns, t) > 0.2);
  }
  // The report: every fitted row within a ppm after, and each key's line.
  int fitted_rows = 0;
  for (const auto& row : report["rows"]) {
    if (row["status"] != "fitted") continue;
    ++fitted_rows;
    CHECK(row["samples"] == 4);
    CHECK(rel(row["fitted_us"].get<double>(), row["measured_us"].get<double>()) < 1e-6);
    CHECK(rel(row["base_us"].get<double>(), row["measured_us"].get<double>()) > 0.1);
  }
  CHECK(fitted_rows == 8);
  std::vector<std::string> fitted_keys;
  for (const auto& k : report["keys"])
    if (k["fitted"].get<bool>()) fitted_keys.push_back(k["key"]);
  CHECK(fitted_keys == std::vector<std::string>{"gemm_profiles", "gpu.gemm_efficiency", "curves.all_reduce.n8"});
  // The YAML says where its fitted values came from.
  std::ifstream in(out);
  std::stringstream yaml;
  yaml << in.rdbuf();
  CHECK(yaml.str().rfind("# overlap-sim profile fit: the base profile h100-sxm-8x-nvswitch fitted to 2 trace file(s)", 0) == 0);
  CHECK(yaml.str().find("# gpu.gemm_efficiency: fitted: 0.8 -> 0.") != std::string::npos);
  CHECK(yaml.str().find("# curves.all_reduce.n8: fitted: 4 sizes, 1048576 .. 67108864 B (measured medians; fit 30 us + S / 100 GB/s)") != std::string::npos);
}

TEST_CASE("profile fit: too few samples keep the base's values, and the report says so", "[trace][fit]") {
  // One kernel per rank of each shape (2 < --min-samples 3), one all-reduce size with enough kernels
  // (a curve needs two sizes).
  std::vector<Shape> few = kShapes;
  for (Shape& s : few) s.per_rank = 1;
  const auto files = write_traces("few", few, {{4 * MiB, 3}});
  const fs::path out = scratch("few.yaml");
  const auto r = fit(files, {"--hardware", "h100-sxm-8x-nvswitch", "-o", out.string()});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const HardwareProfile fitted = load_profile(out.string());
  const HardwareProfile base = load_profile("h100-sxm-8x-nvswitch");
  CHECK(fitted.gpu.gemm_efficiency == base.gpu.gemm_efficiency);
  CHECK(fitted.gemm_profiles.size() == base.gemm_profiles.size());
  CHECK(fitted.curves.count("all_reduce.n8") == base.curves.count("all_reduce.n8"));
  CHECK(r.out.find("2 kernel(s), fewer than --min-samples 3: not used") != std::string::npos);
  CHECK(r.out.find("gpu.gemm_efficiency          kept   kept the base's: 0 compute-bound GEMM shape(s)") != std::string::npos);
  CHECK(r.out.find("curves.all_reduce.n8         kept   kept the base's model: 1 message size(s)") != std::string::npos);
  // --min-samples 2 takes the same traces.
  const auto r2 = fit(files, {"--hardware", "h100-sxm-8x-nvswitch", "-o", out.string(), "--min-samples", "2"});
  REQUIRE(r2.rc == 0);
  CHECK(load_profile(out.string()).gpu.gemm_efficiency == Approx(kTrueEfficiency).epsilon(1e-4));
}

TEST_CASE("profile fit: bad input names the file and the key, exit 2", "[trace][fit]") {
  const auto good = write_traces("bad", kShapes, kSizes);
  SECTION("no GEMM kernels") {
    const auto files = write_traces("nogemm", kShapes, kSizes, false);
    const auto r = fit(files, {"--hardware", "h100-sxm-8x-nvswitch", "-o", scratch("x.yaml").string()});
    CHECK(r.rc == 2);
    CHECK(r.err.find(files[0]) != std::string::npos);
    CHECK(r.err.find("traceEvents[cat=kernel]: no GEMM kernels") != std::string::npos);
    CHECK(!fs::exists(scratch("x.yaml")));
  }
  SECTION("an unknown base profile") {
    const auto r = fit(good, {"--hardware", "no-such-gpu", "-o", scratch("x.yaml").string()});
    CHECK(r.rc == 2);
    CHECK(r.err.find("unknown hardware profile 'no-such-gpu'") != std::string::npos);
  }
  SECTION("an output that is a directory") {
    const fs::path dir = scratch("a-directory");
    fs::create_directories(dir);
    const auto r = fit(good, {"--hardware", "h100-sxm-8x-nvswitch", "-o", dir.string()});
    CHECK(r.rc == 2);
    CHECK(r.err.find(dir.string()) != std::string::npos);
  }
  SECTION("-o is required") {
    const auto r = fit(good, {"--hardware", "h100-sxm-8x-nvswitch"});
    CHECK(r.rc == 2);
    CHECK(r.err.find("--output") != std::string::npos);
  }
}
