// workload.all_to_all (sim/schemes/moe_all_to_all.cpp): the MoE schemes' dispatch and combine on DeepEP's
// normal and low-latency kernels and the hierarchical all-to-all take their cost model's time exactly
// and hold the SMs the algorithm holds; the default stays NCCL's all-to-allv; the loader refuses what
// cannot run, naming the key.
#include <catch2/catch.hpp>

#include <string>

#include "cost_model/deepep.hpp"
#include "cost_model/hierarchical_all_to_all.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/profile_loader.hpp"
#include "sim/scenario.hpp"
#include "sim/schemes/moe.hpp"
#include "tests/support/moe_fixtures.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

const std::string kSource = OVERLAP_SOURCE_DIR;

// DeepSeek-V3's MoE layer at EP 16 (two nodes of 8 H100): 256 experts, top 8, 7168 wide, 4096 tokens a
// rank. Uniform routing gives every (rank, expert) pair 4096 x 8 / 256 = 128 tokens: every pair of
// ranks exchanges the same 128 x 16 experts x 7168 x 2 bytes, so the pairs are the uniform expectation.
Workload deepseek_ep16(MoeAllToAll a, int max_nodes = 0) {
  Workload w = sim::test::moe_workload(16, 256, 8, 4096, 7168, 2048);
  Moe& m = std::get<Moe>(w.shape);
  m.all_to_all = a;
  m.max_nodes = max_nodes;
  return w;
}

const Op& first_op(const BuiltScheme& b, const std::string& name) {
  for (const Op& o : b.graph.ops())
    if (o.name == name) return o;
  FAIL("no op " << name);
  return b.graph.ops().front();
}

}  // namespace

TEST_CASE("moe all_to_all: DeepEP and hierarchical dispatch take their cost model's time", "[moe][deepep]") {
  const HardwareProfile hw = load_profile("h100-2node-ib400", kSource + "/scenarios/hardware");
  const double token_bytes = 7168.0 * 2;
  const std::int64_t pair = 128 * 16 * 7168 * 2;
  const overlap::PairBytes pairs(16, std::vector<Bytes>(16, pair));
  for (const int max_nodes : {0, 1, 2}) {
    const BuiltScheme b = sim::test::build_moe_scheme("no_overlap", deepseek_ep16(MoeAllToAll::deepep, max_nodes), hw);
    const Op& d = first_op(b, "dispatch");
    const DeepEpLayout l{16, 8, 256, 8, max_nodes};
    // The pairs are the expectation, so the ports are deepep_expected_port_bytes (tests/cost_model/deepep_test.cpp);
    // time within a picosecond of the rounding of two routes to the same figure.
    const Ps expected = deepep_time_ps(deepep_expected_port_bytes(DeepEpKernel::normal, l, 4096, token_bytes), deepep_rates(hw));
    CHECK(std::abs(d.duration_ps - expected) <= 1);
    CHECK(d.channels == kDeepEpNormalSms);  // DeepEP's README: Buffer.set_num_sms(24)
    CHECK(d.curve_latency_ps == checked_ps(kDeepEpFixedCostUs * 1e6));
  }
  // Fewer nodes a token reaches, fewer RDMA copies: the dispatch gets faster with max_nodes.
  const auto dispatch_ps = [&](int max_nodes) {
    return first_op(sim::test::build_moe_scheme("no_overlap", deepseek_ep16(MoeAllToAll::deepep, max_nodes), hw), "dispatch").duration_ps;
  };
  CHECK(dispatch_ps(1) < dispatch_ps(2));
  CHECK(dispatch_ps(2) == dispatch_ps(0));  // two nodes: at most 2 is no limit

  const BuiltScheme ll = sim::test::build_moe_scheme("moe_pipeline", deepseek_ep16(MoeAllToAll::deepep_low_latency), hw,
                                                {{"chunks", 1}});
  const Op& lld = first_op(ll, "dispatch");
  CHECK(lld.channels == 0);  // hook-based: no SM held once issued
  CHECK(std::abs(lld.duration_ps - deepep_time_ps(deepep_port_bytes_of_pairs(DeepEpKernel::low_latency,
                                                                             {16, 8, 256, 8, 0}, pairs),
                                                  deepep_rates(hw))) <= 1);

  const BuiltScheme h = sim::test::build_moe_scheme("no_overlap", deepseek_ep16(MoeAllToAll::hierarchical), hw);
  CHECK(first_op(h, "combine").duration_ps == hierarchical_all_to_all(pairs, 8, hierarchical_rates(hw)).time_ps);

  // NCCL (the default) is the all-to-allv exactly as before.
  const BuiltScheme n = sim::test::build_moe_scheme("no_overlap", deepseek_ep16(MoeAllToAll::nccl), hw);
  CHECK(first_op(n, "dispatch").duration_ps ==
        all_to_allv_cost(hw, pairs, collective_link_class(hw, 16)).time_ps);
}

TEST_CASE("moe all_to_all: DeepEP's normal kernels hold SMs in the engine, low latency none", "[moe][deepep]") {
  // The engine's record of each dispatch: the SMs it held (taken from the GPU's pool, so an overlapped
  // GEMM runs on the rest) and, alone on an idle fabric (no_overlap), exactly its cost model's time.
  const HardwareProfile hw = load_profile("h100-2node-ib400", kSource + "/scenarios/hardware");
  for (const MoeAllToAll a : {MoeAllToAll::deepep, MoeAllToAll::deepep_low_latency, MoeAllToAll::hierarchical}) {
    const BuiltScheme b = sim::test::build_moe_scheme("no_overlap", deepseek_ep16(a), hw);
    const Timeline t = run(b.graph, make_node(hw, 16));
    int seen = 0;
    for (const Op& o : b.graph.ops()) {
      if (o.name != "dispatch") continue;
      const OpRecord& r = t.ops[static_cast<std::size_t>(&o - b.graph.ops().data())];
      CHECK(r.sms_held == (a == MoeAllToAll::deepep ? kDeepEpNormalSms : a == MoeAllToAll::hierarchical ? o.channels : 0));
      CHECK(r.end_ps - r.start_ps == o.duration_ps);
      ++seen;
    }
    CHECK(seen == 16);
  }
}

TEST_CASE("moe all_to_all: the loader refuses what cannot run, naming the key", "[moe][deepep][scenario]") {
  ScenarioOptions o;
  o.hardware_dir = kSource + "/scenarios/hardware";
  const std::string base =
      "hardware: h100-2node-ib400\n"   // 1
      "workload:\n"                    // 2
      "  kind: moe\n"                  // 3
      "  experts: 256\n"               // 4
      "  top_k: 8\n"                   // 5
      "  d_model: 7168\n"              // 6
      "  d_ffn_expert: 2048\n"         // 7
      "  tokens: 512\n"                // 8
      "  ep: 16\n";                    // 9
  auto error_of = [&](const std::string& extra) -> InputError {
    try {
      (void)load_scenario_text(base + extra, "t.yaml", o);
    } catch (const InputError& e) {
      return e;
    }
    FAIL("expected an InputError for " << extra);
    return InputError("", 0, "", "");
  };
  CHECK(load_scenario_text(base + "  all_to_all: deepep\n  max_nodes: 2\n", "t.yaml", o).workload.kind == WorkloadKind::moe);
  const InputError unknown = error_of("  all_to_all: deep_ep\n");
  CHECK(unknown.key_path() == "workload.all_to_all");
  CHECK(unknown.line() == 10);
  CHECK(error_of("  max_nodes: 2\n").key_path() == "workload.max_nodes");  // nccl has no node-limited routing
  CHECK(error_of("  all_to_all: deepep\n  max_nodes: 3\n").key_path() == "workload.max_nodes");  // 2 nodes
  try {  // EP 8 x expert TP 2 on the 16 GPUs
    std::string text = base;
    text.replace(text.find("ep: 16"), 6, "ep: 8");
    (void)load_scenario_text(text + "  expert_tp: 2\n  all_to_all: hierarchical\n", "t.yaml", o);
    FAIL("hierarchical with expert_tp should be refused");
  } catch (const InputError& e) {
    CHECK(e.key_path() == "workload.all_to_all");
  }
  // One node: hierarchical has nothing to gather; DeepEP runs (its EP 8 rows are one node).
  const std::string one_node =
      "hardware: h100-sxm-8x-nvswitch\nworkload:\n  kind: moe\n  experts: 64\n  top_k: 4\n  d_model: 1024\n"
      "  d_ffn_expert: 512\n  tokens: 256\n  ep: 8\n";
  try {
    (void)load_scenario_text(one_node + "  all_to_all: hierarchical\n", "t.yaml", o);
    FAIL("hierarchical on one node should be refused");
  } catch (const InputError& e) {
    CHECK(e.key_path() == "workload.all_to_all");
  }
  CHECK(load_scenario_text(one_node + "  all_to_all: deepep\n", "t.yaml", o).workload.kind == WorkloadKind::moe);
  // moe_tile_fused moves its own rows: listed with DeepEP it is refused on the key.
  try {
    (void)load_scenario_text(base + "  all_to_all: deepep\nschemes: [moe_tile_fused]\n", "t.yaml", o);
    FAIL("moe_tile_fused with deepep should be refused");
  } catch (const InputError& e) {
    CHECK(e.key_path() == "workload.all_to_all");
  }
}
