// moe_tile_fused (sim/schemes/moe_tile_fused.cpp) on the idealised node of ideal_profile.hpp: when
// every piece of the dispatch and combine is hidden under the expert GEMMs, the layer takes the
// compute (router, then the expert GEMMs on sm_count - comm_sms SMs) plus the last combine piece's
// transfer; under skew the busiest rank's GEMMs set it; it moves no_overlap's bytes.
#include <catch2/catch.hpp>

#include <algorithm>

#include "cost_model/all_to_allv.hpp"
#include "cost_model/gemm_model.hpp"
#include "cost_model/input_error.hpp"
#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "sim/node_builder.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/schemes/moe.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/workload_shapes.hpp"
#include "tests/schemes/ideal_profile.hpp"
#include "tests/support/moe_fixtures.hpp"

using namespace overlap;
using namespace overlap::sim;
using test::moe_workload;

namespace {

// Rounding of the memory kernel (SwiGLU) on the ideal profile's near-infinite HBM, and of each
// transfer's rate: a few ps per op on the path.
constexpr Ps kSlackPs = 16;

// Rank r's down projection as moe_tile_fused orders it: every local expert's rows of rank r+1, then
// of r+2, ..., its own last.
std::vector<GemmShape> down_by_destination(const Moe& m, const CountMatrix& tokens, int r) {
  const int n = m.ep, per_rank = m.experts / m.ep;
  std::vector<GemmShape> down;
  for (int i = 1; i <= n; ++i)
    for (int e = 0; e < per_rank; ++e)
      down.push_back(GemmShape{tokens[static_cast<std::size_t>((r + i) % n)][static_cast<std::size_t>(r * per_rank + e)],
                               m.d_model, m.d_ffn_expert, m.dtype});
  return down;
}

// Rank r's expert GEMMs on `sms` SMs up to the down projection: the gate+up GEMM of its own tokens,
// then of each of pieces - 1 groups of its peers in ring order r-1, r-2, ... (one kernel each, in
// order), and the SwiGLU (rounded down).
Ps up_ps(const HardwareProfile& hw, const Moe& m, const MoeShapes& sh, int r, int pieces, int sms) {
  const int n = m.ep, per_rank = m.experts / m.ep;
  REQUIRE(pieces >= 2);
  Ps t = 0;
  for (int p = 0; p < pieces; ++p) {
    const int j0 = p == 0 ? 0 : 1 + (n - 1) * (p - 1) / (pieces - 1);
    const int j1 = p == 0 ? 1 : 1 + (n - 1) * p / (pieces - 1);
    std::vector<GemmShape> up;
    for (int e = 0; e < per_rank; ++e) {
      std::int64_t rows = 0;
      for (int j = j0; j < j1; ++j)
        rows += sh.tokens[static_cast<std::size_t>((r - j + n) % n)][static_cast<std::size_t>(r * per_rank + e)];
      up.push_back(GemmShape{rows, 2 * m.d_ffn_expert, m.d_model, m.dtype});
    }
    t += plan_grouped_gemm(hw, up).time_ps(sms);
  }
  const double hbm_bytes_per_ps = hw.gpu.hbm_bandwidth_gbps * hw.gpu.hbm_efficiency * 1e-3;
  return t + static_cast<Ps>(static_cast<double>(sh.activation_bytes[static_cast<std::size_t>(r)]) / hbm_bytes_per_ps);
}

Ps experts_ps(const HardwareProfile& hw, const Moe& m, const MoeShapes& sh, int r, int pieces, int sms) {
  return up_ps(hw, m, sh, r, pieces, sms) + plan_grouped_gemm(hw, down_by_destination(m, sh.tokens, r)).time_ps(sms);
}

}  // namespace

TEST_CASE("moe_tile_fused: the combine steps follow the down projection's waves; compute + the exposed tail",
          "[moe][moe_tile_fused][closed_form]") {
  // Top 1 of 4 experts, one per rank, uniform: every source sends 1024 rows to every expert, so every
  // rank is the same. The links are so fast that a dispatch piece lands before the gate+up piece
  // before it is done. The down projection's tiles run rank r+1's rows, r+2's, r+3's, then its own;
  // combine step j (one 2 MiB flow per rank, x) starts when the wave holding the last tile of rank
  // r+j's rows ends and after step j-1: e_j = max(done_j, e_(j-1)) + x. The layer ends at
  // max(down projection's end, e_3).
  const double link_gbps = 50000;
  const HardwareProfile hw = test::ideal_profile(4, link_gbps);
  const Workload w = moe_workload(4, 4, 1, 4096, 1024, 1024);
  const Moe& m = std::get<Moe>(w.shape);
  const MoeRouting routing = moe_routing(m);
  for (const auto& row : routing.tokens)
    for (const std::int64_t c : row) REQUIRE(c == 1024);
  const MoeShapes sh = moe_shapes(m, routing.tokens);
  const Ps router = gemm_time_ps(hw, moe_router_gemm(m));
  const Ps x = static_cast<Ps>(1024.0 * 1024 * 2 / (link_gbps * 1e-3));
  for (const int comm_sms : {4, 32}) {
    INFO("comm_sms " << comm_sms);
    const int sms = hw.gpu.sm_count - comm_sms;
    const GroupedGemmPlan down = plan_grouped_gemm(hw, down_by_destination(m, routing.tokens, 0));
    REQUIRE(down.groups.size() == 4);
    for (const GemmPlan& g : down.groups) REQUIRE(g.tiles == down.groups[0].tiles);  // one tile time
    const std::int64_t slots = static_cast<std::int64_t>(sms) * down.ctas_per_sm;
    const Ps start = router + up_ps(hw, m, sh, 0, 4, sms);
    // A dispatch piece (x) lands within the gate+up piece before it.
    REQUIRE(x < plan_grouped_gemm(hw, {GemmShape{1024, 2048, 1024, DType::bf16}}).time_ps(sms));
    Ps e = 0;
    for (int j = 1; j <= 3; ++j) {
      const std::int64_t through = j * down.groups[0].tiles;
      e = std::max(start + (through + slots - 1) / slots * down.cta_ps, e) + x;
    }
    const Ps end = start + down.time_ps(sms);
    // On 128 GEMM SMs (two waves) the last step waits for the last wave: x is exposed. On 100 SMs
    // (three waves) the own rows' wave hides it.
    if (comm_sms == 4) REQUIRE(e > end);
    if (comm_sms == 32) REQUIRE(e < end);
    const Ps closed = std::max(end, e);
    const Ps fused =
        test::moe_scheme_latency("moe_tile_fused", w, hw, {{"comm_sms", comm_sms}, {"dispatch_pieces", 4}, {"tile_signal_overhead", 0.0}});
    CHECK(fused >= closed - kSlackPs);
    CHECK(fused <= closed + kSlackPs);
  }
}

TEST_CASE("moe_tile_fused: the per-tile signal stretches every expert tile by its fraction",
          "[moe][moe_tile_fused]") {
  const HardwareProfile hw = test::ideal_profile(4, 50000);
  const Workload w = moe_workload(4, 4, 1, 4096, 1024, 1024);
  const BuiltScheme with = test::build_moe_scheme("moe_tile_fused", w, hw, {{"tile_signal_overhead", 0.1}});
  const BuiltScheme without = test::build_moe_scheme("moe_tile_fused", w, hw, {{"tile_signal_overhead", 0.0}});
  REQUIRE(with.graph.ops().size() == without.graph.ops().size());
  int experts = 0;
  for (std::size_t i = 0; i < with.graph.ops().size(); ++i) {
    const Op& a = with.graph.ops()[i];
    const Op& b = without.graph.ops()[i];
    if (a.name.rfind("experts.up", 0) == 0 || a.name.rfind("experts.down", 0) == 0) {
      ++experts;
      CHECK(a.cta_ps == b.cta_ps + static_cast<Ps>(std::llround(0.1 * static_cast<double>(b.cta_ps))));
    } else if (a.kind == OpKind::tiled || a.kind == OpKind::persistent) {
      CHECK(a.cta_ps == b.cta_ps);  // the router
    }
  }
  CHECK(experts == 4 * (4 + 1));  // per rank: 4 gate+up pieces and the down projection
}

TEST_CASE("moe_tile_fused: under Zipf skew the busiest rank's GEMMs set the latency", "[moe][moe_tile_fused]") {
  const HardwareProfile hw = test::ideal_profile(4, 50000);
  MoeRoutingSpec zipf;
  zipf.kind = MoeRoutingSpec::Kind::zipf;
  zipf.zipf_s = 1.5;
  zipf.seed = 3;
  const Workload w = moe_workload(4, 8, 2, 2048, 1024, 512, zipf);
  const Moe& m = std::get<Moe>(w.shape);
  const MoeRouting routing = moe_routing(m);
  const MoeShapes sh = moe_shapes(m, routing.tokens);
  const int comm_sms = 8, pieces = 2;
  Ps slowest = 0, fastest = -1;
  for (int r = 0; r < 4; ++r) {
    const Ps g = experts_ps(hw, m, sh, r, pieces, hw.gpu.sm_count - comm_sms);
    slowest = std::max(slowest, g);
    fastest = fastest < 0 ? g : std::min(fastest, g);
  }
  REQUIRE(slowest > fastest + fastest / 2);  // the skew is real
  const Ps router = gemm_time_ps(hw, moe_router_gemm(m));
  const Ps fused = test::moe_scheme_latency("moe_tile_fused", w, hw,
                           {{"comm_sms", comm_sms}, {"dispatch_pieces", pieces}, {"tile_signal_overhead", 0.0}});
  // At least the busiest rank's chain; at most that chain plus every byte of both all-to-alls moved
  // one after the other at the ideal line rate (what any delay of a piece can add).
  CHECK(fused >= router + slowest);
  const Ps comm = all_to_allv_cost(hw, sh.dispatch, "nvlink").time_ps + all_to_allv_cost(hw, sh.combine, "nvlink").time_ps;
  CHECK(fused <= router + slowest + comm + kSlackPs);
}

TEST_CASE("moe_tile_fused: moves no_overlap's bytes, and refuses comm_sms that leave no SM to compute",
          "[moe][moe_tile_fused][params]") {
  const HardwareProfile hw = test::ideal_profile(4);
  MoeRoutingSpec zipf;
  zipf.kind = MoeRoutingSpec::Kind::zipf;
  zipf.zipf_s = 1.0;
  zipf.seed = 7;
  const Workload w = moe_workload(4, 16, 4, 1000, 512, 256, zipf);
  const BuiltScheme plain = test::build_moe_scheme("no_overlap", w, hw);
  for (const int pieces : {1, 3, 4, 9}) {
    INFO("dispatch_pieces " << pieces);
    const BuiltScheme fused = test::build_moe_scheme("moe_tile_fused", w, hw, {{"dispatch_pieces", pieces}});
    CHECK(fused.required_bytes == plain.required_bytes);
  }
  CHECK_THROWS_AS(test::build_moe_scheme("moe_tile_fused", w, hw, {{"comm_sms", hw.gpu.sm_count}}), InputError);
  CHECK_THROWS_AS(test::build_moe_scheme("moe_tile_fused", w, hw, {{"dispatch_pieces", 0}}), InputError);
}
