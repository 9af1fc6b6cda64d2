// Async TP (async-tp-illustrated): with one stream the decomposed all-gather-matmul pays a partial
// wave per sub-matmul ("Amplified wave quantization due to decomposition", N + S waves); with two
// alternating streams the next sub-matmul fills the previous one's partial wave.
#include <catch2/catch.hpp>

#include "ideal_profile.hpp"
#include "tests/support/scheme_fixtures.hpp"

#include "cost_model/gemm_model.hpp"
#include "cost_model/input_error.hpp"
#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "sim/node_builder.hpp"
#include "sim/schemes/scheme.hpp"

using namespace overlap;
using namespace overlap::sim;
using namespace overlap::sim::test;

namespace {

// End of the local shard copy + start barrier on rank 0 (when the first sub-matmul may start).
Ps start_of_first_matmul(const TaskGraph& g, const Timeline& tl) {
  for (OpId i = 0; i < static_cast<OpId>(g.ops().size()); ++i)
    if (g.op(i).name == "ag.mm0" && g.rank_of(i) == 0) return tl.ops[static_cast<std::size_t>(i)].start_ps;
  FAIL("no ag.mm0");
  return 0;
}

}  // namespace

TEST_CASE("async TP all-gather-matmul: 1 stream pays N+S partial waves, 2 streams do not",
          "[async_tp][closed_form]") {
  const SchemeInfo* s = find_scheme("async_tp");
  REQUIRE(s);
  const int T = 4;
  // 4096 x 1024 x 1024 per rank: 256 tiles = 2 waves on 132 SMs undecomposed; each of the S = 4
  // sub-matmuls (1024 rows) is 64 tiles: one partial wave of c = 1 us.
  const Workload w = gemm_workload(T, Primitive::all_gather, 4096, 1024, 1024);
  const HardwareProfile hw = ideal_profile(T, 4000);
  const Ps c = plan_gemm(hw, overlap::GemmShape{1024, 1024, 1024, DType::bf16}).cta_ps;
  REQUIRE(c == kPsPerUs);
  REQUIRE(plan_gemm(hw, overlap::GemmShape{4096, 1024, 1024, DType::bf16}).tiles == 256);
  const Ps p = transfer_ps(1024 * 1024 * 2, 4000);  // one 2 MiB shard pulled by a copy engine
  REQUIRE(p < c);

  const nlohmann::json one = {{"streams", 1}};
  BuildContext ctx1{w, hw, one, Fidelity::steps};
  const BuiltScheme b1 = s->build(ctx1);
  const Timeline t1 = run(b1.graph, make_node(hw, T));
  const Ps t0 = start_of_first_matmul(b1.graph, t1);
  CHECK(t0 < 100);  // local shard copy into the symmetric buffer: picoseconds on this HBM
  // One stream: the four sub-matmuls run back to back, one (partial) wave each: S waves, not 2.
  CHECK(std::llabs(t1.makespan_ps - (t0 + 4 * c)) <= 8);

  const nlohmann::json two = {{"streams", 2}};
  BuildContext ctx2{w, hw, two, Fidelity::steps};
  const BuiltScheme b2 = s->build(ctx2);
  const Timeline t2 = run(b2.graph, make_node(hw, T));
  // Two streams: mm(r) || pull1 -> mm(r+1), then pull2 -> mm(r+2) || pull3 -> mm(r+3): sub-matmuls
  // pair up on the 132 SMs, so 2 waves plus the two pulls that gate the second stream.
  CHECK(std::llabs(t2.makespan_ps - (start_of_first_matmul(b2.graph, t2) + 2 * c + 2 * p)) <= 8);
  CHECK(t2.makespan_ps < t1.makespan_ps);
}

TEST_CASE("async TP copy-engine pulls hold no SMs, SM copies do", "[async_tp]") {
  const SchemeInfo* s = find_scheme("async_tp");
  REQUIRE(s);
  const int T = 2;
  const Workload w = gemm_workload(T, Primitive::reduce_scatter, 2048, 1024, 1024);
  const HardwareProfile hw = ideal_profile(T, 1000);
  for (const char* transport : {"copy_engine", "sm"}) {
    const nlohmann::json params = {{"transport", transport}, {"copy_sms", 12}};
    BuildContext ctx{w, hw, params, Fidelity::steps};
    const SchemeResult r = evaluate(*s, ctx);  // byte accounting checked inside
    INFO(transport);
    // Copy engines take no SMs (only the one-block barriers may show); SM copies hold copy_sms.
    if (std::string(transport) == "sm")
      CHECK(r.sms_lost_to_comm == 12);
    else
      CHECK(r.sms_lost_to_comm <= 1);
  }
}

TEST_CASE("async TP byte accounting on every workload it applies to", "[async_tp][bytes]") {
  const SchemeInfo* s = find_scheme("async_tp");
  REQUIRE(s);
  const HardwareProfile hw = ideal_profile(4, 1000);
  Workload mlp = mlp_tpsp_workload(4, 2048, 1024, 2048);
  for (const Workload& w : {gemm_workload(3, Primitive::all_gather, 1536, 512, 512),
                            gemm_workload(4, Primitive::reduce_scatter, 2048, 512, 512), mlp}) {
    REQUIRE(s->applies(w));
    for (int streams : {1, 2})
      for (const char* transport : {"copy_engine", "sm"}) {
        const nlohmann::json params = {{"transport", transport}, {"streams", streams}};
        BuildContext ctx{w, hw, params, Fidelity::curve};
        INFO(workload_kind_name(w.kind) << " tp=" << w.tp << " " << transport << " streams=" << streams);
        CHECK_NOTHROW(evaluate(*s, ctx));
      }
  }
}

TEST_CASE("async TP applies and validates its params", "[async_tp][params]") {
  const SchemeInfo* s = find_scheme("async_tp");
  REQUIRE(s);
  CHECK_FALSE(s->applies(gemm_workload(4, Primitive::all_reduce, 4096, 1024, 1024)));
  CHECK_FALSE(s->applies(gemm_workload(4, Primitive::all_to_all, 4096, 1024, 1024)));
  CHECK_FALSE(s->applies(gemm_workload(1, Primitive::all_gather, 4096, 1024, 1024)));
  const HardwareProfile hw = ideal_profile(4, 1000);
  const Workload w = gemm_workload(4, Primitive::all_gather, 4096, 1024, 1024);
  auto key_of = [&](const nlohmann::json& params) { return refused_key(*s, w, hw, params); };
  CHECK(key_of({{"streams", 3}}) == "params.streams");
  CHECK(key_of({{"transport", "nvshmem"}}) == "params.transport");
  CHECK(key_of({{"copy_sms", 0}}) == "params.copy_sms");
  CHECK(key_of({{"transport", "sm"}, {"streams", 1}}) == "none");
}
