// A GEMM's HBM traffic (sim::gemm_tile_hbm_bytes): the L2 capacity model when the profile gives
// gpu.l2_bytes, the gemm_l2_reuse constant otherwise. Closed forms.
#include <catch2/catch.hpp>

#include <cmath>

#include "cost_model/gemm_model.hpp"
#include "cost_model/profile_loader.hpp"
#include "sim/schemes/graph_builder.hpp"

using namespace overlap;

namespace {

// 32 SMs, one CTA each, a 50 MB L2 shared by `ranks` virtual ranks; calibrated 128x128 tiles so the
// tile shape is the test's.
HardwareProfile virtual_gpu(int ranks, std::int64_t l2_bytes, std::int64_t m, std::int64_t n, std::int64_t k) {
  HardwareProfile p = load_profile("h100-sxm-8x-nvswitch", std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware");
  p.gpu.sm_count = 32;
  p.gpu.gemm_ctas_per_sm = 1;
  p.gpu.l2_bytes = l2_bytes;
  p.fabric.topology = ranks > 1 ? "virtual" : "nvswitch";
  p.fabric.num_gpus = ranks;
  p.gemm_profiles.push_back(GemmProfileEntry{m, n, k, DType::bf16, 128, 128, 1000.0, {}});
  return p;
}

double whole_gemm_bytes(const HardwareProfile& p, const GemmShape& s) {
  const GemmPlan plan = plan_gemm(p, s);
  return static_cast<double>(sim::gemm_tile_hbm_bytes(p, s, plan)) * static_cast<double>(plan.tiles);
}

}  // namespace

TEST_CASE("L2 model: operands that fit in the GEMM's L2 share come from HBM once", "[engine][hbm][l2]") {
  // 4096 x 2048 x 2048 bf16: A 16 MiB, B 8 MiB, C 16 MiB. One rank with 50 MiB: A + B fit.
  const GemmShape s{4096, 2048, 2048, DType::bf16};
  const double mib = 1 << 20;
  const HardwareProfile one = virtual_gpu(1, 50 * (1 << 20), s.m, s.n, s.k);
  CHECK(whole_gemm_bytes(one, s) == Approx(16 * mib + 8 * mib + 16 * mib).epsilon(1e-6));
  // Four virtual ranks: 12.5 MiB each. A + B do not fit, B does: still read once.
  const HardwareProfile four = virtual_gpu(4, 50 * (1 << 20), s.m, s.n, s.k);
  CHECK(whole_gemm_bytes(four, s) == Approx(40 * mib).epsilon(1e-6));
}

TEST_CASE("L2 model: a B larger than the share is re-read once per wave of tile rows", "[engine][hbm][l2]") {
  // 4096 x 8192 x 2048: A 16 MiB, B 32 MiB, C 64 MiB; 32 rows x 64 columns of 128x128 tiles.
  const GemmShape s{4096, 8192, 2048, DType::bf16};
  const double mib = 1 << 20;
  // 4 ranks, 12.5 MiB each: a wave of 32 tiles covers half a row, so B is read once per row (32x).
  HardwareProfile four = virtual_gpu(4, 50 * (1 << 20), s.m, s.n, s.k);
  CHECK(whole_gemm_bytes(four, s) == Approx(16 * mib + 32 * 32 * mib + 64 * mib).epsilon(1e-6));
  // 128 SMs: a wave covers two rows, which read B together: 16 re-reads.
  four.gpu.sm_count = 128;
  CHECK(whole_gemm_bytes(four, s) == Approx(16 * mib + 16 * 32 * mib + 64 * mib).epsilon(1e-6));
  // More L2 per rank than A + B: once again.
  const HardwareProfile big = virtual_gpu(4, 256 * (1 << 20), s.m, s.n, s.k);
  CHECK(whole_gemm_bytes(big, s) == Approx(112 * mib).epsilon(1e-6));
  // A physical GPU (not virtual) keeps its whole L2: 50 MiB holds A + B.
  const HardwareProfile physical = virtual_gpu(1, 50 * (1 << 20), s.m, s.n, s.k);
  CHECK(whole_gemm_bytes(physical, s) == Approx(112 * mib).epsilon(1e-6));
}

TEST_CASE("without l2_bytes the HBM traffic is the gemm_l2_reuse model", "[engine][hbm][l2]") {
  const GemmShape s{4096, 8192, 2048, DType::bf16};
  const HardwareProfile p = virtual_gpu(4, 0, s.m, s.n, s.k);
  const double tiles = 32.0 * 64.0;
  const double per_tile = (256.0 * 2048 * 2 / p.gpu.gemm_l2_reuse) + 128.0 * 128 * 2;
  const double once = (4096.0 * 2048 + 2048.0 * 8192 + 4096.0 * 8192) * 2;
  CHECK(whole_gemm_bytes(p, s) == Approx(std::max(tiles * per_tile, once)).epsilon(1e-6));
}
