// The collective model against published nccl-tests tables (tests/data/nccl_fixture_*.txt, each with
// its source URL): every size a table covers, predicted by the matching built-in profile with NCCL's
// published tuning constants (nothing fitted to these tables).
//
// The target is 15 % at every size. Where NCCL's constants cannot reach it on that machine the
// measured error is recorded below (kKnown) and asserted as a bound, so the model cannot get worse
// unnoticed (`known` below); README "Collectives" lists the errors, which
// `overlap_tests "[.fixture-report]"` prints.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "cost_model/collective_model.hpp"
#include "cost_model/nccl_tests_import.hpp"
#include "cost_model/profile_loader.hpp"
#include "sim/schemes/graph_builder.hpp"

using namespace overlap;

namespace {

struct Sample {
  Bytes bytes = 0;
  double time_us = 0;
};

struct Fixture {
  std::string name;     // README row
  std::string file;     // under tests/data
  std::string profile;  // built-in profile
  CollectivePrimitive primitive = CollectivePrimitive::all_reduce;
  std::optional<NcclAlgorithm> algorithm;  // what the run forced (NCCL_ALGO), else NCCL's choice
  bool busbw_only = false;                 // a table of (size, busbw) rather than nccl-tests rows
  // Sizes where NCCL's constants miss by more than 15 % on this machine: the measured |error|
  // (rounded up to the next percent), asserted as the bound.
  std::map<Bytes, double> known;
};

std::string data_path(const std::string& file) { return std::string(OVERLAP_SOURCE_DIR) + "/tests/data/" + file; }

std::vector<Sample> read_fixture(const Fixture& f, int n) {
  std::vector<Sample> out;
  if (f.busbw_only) {
    std::ifstream in(data_path(f.file));
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream ss(line);
      Sample s;
      double busbw = 0;
      ss >> s.bytes >> busbw;
      // busbw = algbw x factor (nccl-tests), algbw = S / t.
      s.time_us = static_cast<double>(s.bytes) * busbw_factor(f.primitive, n) / busbw / 1e3;
      out.push_back(s);
    }
    return out;
  }
  const NcclTestsResult r = load_nccl_tests_file(data_path(f.file));
  for (const NcclTestsRow& row : r.rows)
    if (row.out_of_place) out.push_back(Sample{row.size_bytes, row.out_of_place->time_us});
  return out;
}

const std::vector<Fixture>& fixtures() {
  static const std::vector<Fixture> all = {
      {"8x H100 SXM, NVLS all-reduce (Azure ND H100 v5)", "nccl_fixture_h100_nvls_all_reduce.txt",
       "h100-sxm-8x-nvswitch", CollectivePrimitive::all_reduce, NcclAlgorithm::NVLS, true,
       // NCCL's NVLS latency is 25 us flat; measured NVLS takes ~42 us from 64 KiB to 2 MiB and
       // reaches its bandwidth more slowly than latency + S / bandwidth says.
       {{16384, 0.18},
        {32768, 0.26},
        {65536, 0.41},
        {131072, 0.41},
        {262144, 0.39},
        {524288, 0.38},
        {1048576, 0.32},
        {2097152, 0.28},
        {4194304, 0.30},
        {8388608, 0.35},
        {16777216, 0.32},
        {33554432, 0.26},
        {67108864, 0.18}}},
      {"8x H100 SXM, Ring reduce-scatter (NVIDIA/nccl issue 1047)", "nccl_fixture_h100_ring_reduce_scatter.txt",
       "h100-sxm-8x-nvswitch", CollectivePrimitive::reduce_scatter, NcclAlgorithm::Ring, false, {}},
      {"8x A100 SXM4, all-reduce (Azure ND A100 v4)", "nccl_fixture_a100_all_reduce.txt", "a100-sxm-8x-nvswitch",
       CollectivePrimitive::all_reduce, std::nullopt, true,
       // This VM's small-message floor is ~43 us, NCCL's LL ring 15 us; the middle sizes run below
       // NCCL's bandwidth model too.
       {{1024, 0.67},
        {2048, 0.67},
        {4096, 0.65},
        {8192, 0.66},
        {16384, 0.65},
        {32768, 0.63},
        {65536, 0.62},
        {131072, 0.61},
        {262144, 0.56},
        {524288, 0.47},
        {1048576, 0.30},
        {2097152, 0.18},
        {4194304, 0.29},
        {8388608, 0.35},
        {16777216, 0.36},
        {33554432, 0.33},
        {67108864, 0.23},
        {134217728, 0.24}}},
      {"8x RTX 5090 PCIe 5.0 with P2P, all-reduce (aikitoria/open-gpu-kernel-modules)",
       "nccl_fixture_rtx5090_pcie_all_reduce.txt", "rtx5090-8x-pcie", CollectivePrimitive::all_reduce, std::nullopt,
       false,
       // NCCL 2.29 switches at 4 KiB to a protocol with ~36 us of latency and the full bandwidth;
       // NCCL's published PCI constants keep LL (20.6 us) to 1 MiB, then Simple at 88 us.
       {{8, 0.20},
        {16, 0.17},
        {32, 0.17},
        {64, 0.17},
        {128, 0.17},
        {256, 0.17},
        {512, 0.17},
        {1024, 0.17},
        {2048, 0.16},
        {4096, 0.43},
        {8192, 0.43},
        {16384, 0.43},
        {32768, 0.42},
        {65536, 0.38},
        {131072, 0.29},
        {1048576, 0.32},
        {2097152, 0.59},
        {4194304, 0.38},
        {8388608, 0.23}}},
  };
  return all;
}

struct Error {
  Sample sample;
  double model_us = 0;
  double error = 0;  // signed, (model - measured) / measured
  CollectivePlan plan;
};

std::vector<Error> errors_of(const Fixture& f) {
  const HardwareProfile hw = load_profile(f.profile, std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware");
  const int n = 8;
  const std::string link = sim::collective_link_class(hw, n);
  std::vector<Error> out;
  for (const Sample& s : read_fixture(f, n)) {
    Error e;
    e.sample = s;
    e.plan = plan_collective(hw, f.primitive, s.bytes, n, link, CollectiveOverrides{f.algorithm, {}});
    e.model_us = us_from_ps(e.plan.time_ps);
    e.error = (e.model_us - s.time_us) / s.time_us;
    out.push_back(e);
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

}  // namespace

TEST_CASE("published nccl-tests tables: within 15 % where NCCL's constants reach it, never worse than measured",
          "[collective][fixtures]") {
  for (const Fixture& f : fixtures()) {
    const std::vector<Error> errs = errors_of(f);
    REQUIRE(errs.size() >= 7);
    for (const Error& e : errs) {
      INFO(f.name << ": " << e.sample.bytes << " B measured " << e.sample.time_us << " us, model " << e.model_us
                   << " us (" << nccl_algorithm_name(e.plan.algorithm) << "/" << nccl_protocol_name(e.plan.protocol)
                   << ")");
      const auto known = f.known.find(e.sample.bytes);
      const double bound = known == f.known.end() ? 0.15 : known->second;
      CHECK(std::abs(e.error) <= bound);
      // A recorded exception that the model now meets should be dropped from `known`.
      if (known != f.known.end()) CHECK(std::abs(e.error) > 0.15);
    }
  }
}

TEST_CASE("ring all-reduce on 8xH100 reaches the published ring busbw", "[collective][fixtures]") {
  // facts.md, NVIDIA/nccl issue 1455: NCCL_ALGO=RING all_reduce_perf -b 2G -e 4G on 8 H100s: busbw
  // about 365-370 GB/s.
  const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware");
  for (Bytes s : {Bytes{2} << 30, Bytes{4} << 30}) {
    const CollectivePlan plan = plan_collective(hw, CollectivePrimitive::all_reduce, s, 8, "nvlink",
                                                CollectiveOverrides{NcclAlgorithm::Ring, {}});
    const double algbw = static_cast<double>(s) / us_from_ps(plan.time_ps) / 1e3;
    const double busbw = busbw_from_algbw(CollectivePrimitive::all_reduce, 8, algbw);
    CHECK(busbw >= 365 * 0.97);
    CHECK(busbw <= 370 * 1.03);
  }
}

TEST_CASE("fixture report (README Collectives)", "[.fixture-report]") {
  for (const Fixture& f : fixtures()) {
    const std::vector<Error> errs = errors_of(f);
    std::vector<double> abs_err;
    int within = 0;
    for (const Error& e : errs) {
      abs_err.push_back(std::abs(e.error));
      within += std::abs(e.error) <= 0.15;
      std::cout << fmt::format("  {:>12} B  measured {:>10.2f} us  model {:>10.2f} us  {:>+7.1f} %  {}/{}\n",
                               e.sample.bytes, e.sample.time_us, e.model_us, 100 * e.error,
                               nccl_algorithm_name(e.plan.algorithm), nccl_protocol_name(e.plan.protocol));
    }
    std::cout << fmt::format("| {} | {} | {} .. {} B | {} | {:.1f} % | {:.1f} % | {} of {} |\n", f.name, f.profile,
                             errs.front().sample.bytes, errs.back().sample.bytes, errs.size(), 100 * median(abs_err),
                             100 * *std::max_element(abs_err.begin(), abs_err.end()), within, errs.size());
  }
}
