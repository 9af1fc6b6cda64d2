// no_overlap on an idealised node (even waves, alpha-beta links with zero latency, no launch
// overhead, no interference): latency is exactly GEMM + collective (closed_forms.hpp no_overlap_ps),
// for a collective after the GEMM and an all-gather before it; the MLP layer is the sum of its parts.
#include <catch2/catch.hpp>

#include "ideal_profile.hpp"
#include "cost_model/profile_loader.hpp"

#include "cost_model/closed_forms.hpp"
#include "cost_model/collective_model.hpp"
#include "cost_model/gemm_model.hpp"
#include "sim/metrics.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/workload_shapes.hpp"

using namespace overlap;
using namespace overlap::sim;
using namespace overlap::sim::test;

namespace {

Ps collective_alone_ps(const HardwareProfile& hw, Primitive p, Bytes bytes, int tp) {
  return collective_time_ps(hw, to_collective_primitive(p), bytes, tp, "nvlink", default_algorithm(hw, p));
}

}  // namespace

TEST_CASE("no_overlap = GEMM + collective on an idealised node", "[no_overlap][closed_form]") {
  const HardwareProfile hw = ideal_profile(4);
  const SchemeInfo* s = find_scheme("no_overlap");
  REQUIRE(s != nullptr);
  const nlohmann::json params = nlohmann::json::object();
  for (Primitive p : {Primitive::all_reduce, Primitive::reduce_scatter, Primitive::all_to_all, Primitive::all_gather}) {
    // 2048 x 1536: 256x128 tiles -> 8 x 12 = 96 tiles (one wave); K = 4096 -> 4 us per tile... the
    // plan decides; the closed form reads the same plan.
    for (std::int64_t k : {1024, 4096}) {
      INFO("primitive " << primitive_name(p) << " k " << k);
      const Workload w = gemm_workload(4, p, 2048, 1536, k);
      const BuildContext ctx{w, hw, params, Fidelity::curve};
      const SchemeResult r = evaluate(*s, ctx);
      const Ps gemm = gemm_time_ps(hw, GemmShape{2048, 1536, k, DType::bf16});
      const Bytes bytes = p == Primitive::all_gather ? 2048 * k * 2 : 2048 * 1536 * 2;
      const Ps comm = collective_alone_ps(hw, p, bytes, 4);
      REQUIRE(gemm > 0);
      REQUIRE(comm > 0);
      CHECK(r.latency_ps == no_overlap_ps(gemm, comm));
      CHECK(r.compute_only_ps == gemm);
      CHECK(r.comm_ps == comm);
      CHECK(r.scheme_comm_ps == comm);
      CHECK(r.exposed_comm_ps == comm);
      CHECK(r.overlap_efficiency == 0.0);
      CHECK(r.sms_lost_to_comm == 8);
    }
  }
}

TEST_CASE("no_overlap at steps fidelity matches the curve on an idle node", "[no_overlap][fidelity]") {
  const HardwareProfile hw = ideal_profile(4);
  const SchemeInfo* s = find_scheme("no_overlap");
  REQUIRE(s != nullptr);
  const nlohmann::json params = nlohmann::json::object();
  const Workload w = gemm_workload(4, Primitive::reduce_scatter, 2048, 2048, 1024);
  const SchemeResult curve = evaluate(*s, BuildContext{w, hw, params, Fidelity::curve});
  const SchemeResult steps = evaluate(*s, BuildContext{w, hw, params, Fidelity::steps});
  // collective_model.hpp: steps take the alpha-beta time up to 1 ps of rounding per step.
  CHECK(std::llabs(curve.latency_ps - steps.latency_ps) <= 4);
  CHECK(curve.compute_only_ps == steps.compute_only_ps);
}

TEST_CASE("the two collective fidelities agree on an idle node of every built-in profile", "[no_overlap][fidelity]") {
  // design.md "Collectives": `curve` (one op timed by the collective model) and `steps` (the
  // algorithm's transfers run through the fabric) must agree on an idle fabric, up to rounding.
  // Not where the steps share a link: pairwise all-to-all across the NUMA nodes of a PCIe box sends
  // several ranks' data over the one host link in the same step, a contention the curve's alpha-beta
  // model does not see (the steps fidelity is there to show it; README "Known limits").
  const std::string dir = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";
  const SchemeInfo* s = find_scheme("no_overlap");
  REQUIRE(s != nullptr);
  const nlohmann::json params = nlohmann::json::object();
  for (const std::string& name : builtin_profile_names(dir)) {
    const HardwareProfile hw = load_profile(name, dir);
    for (int tp : {4, std::min(8, hw.fabric.num_gpus)})
    for (Primitive p : {Primitive::all_reduce, Primitive::reduce_scatter, Primitive::all_gather, Primitive::all_to_all}) {
      INFO(name << " tp=" << tp << " " << primitive_name(p));
      const bool shares_host_link = hw.fabric.topology == "pcie" && hw.fabric.gpus_per_numa < tp;
      if (p == Primitive::all_to_all && shares_host_link) continue;
      // Virtual ranks share one HBM: every step's copies contend for it, which NCCL's per-port model
      // (and NCCL itself, which cannot run two ranks on one GPU) does not describe.
      if (hw.fabric.topology == "virtual") continue;
      // NVLSTree has no steps model yet (graph_builder.cpp engine_schedule runs the ring's steps).
      const Bytes bytes = p == Primitive::all_gather ? Bytes{1024} * tp * 1024 * 2 : Bytes{1024} * tp * 4096 * 2;
      const NcclAlgorithm algo =
          plan_collective(hw, to_collective_primitive(p), bytes, tp, collective_link_class(hw, tp)).algorithm;
      if (algo == NcclAlgorithm::NVLSTree) continue;
      const Workload w = gemm_workload(tp, p, 1024 * tp, 4096, 1024);
      const SchemeResult curve = evaluate(*s, BuildContext{w, hw, params, Fidelity::curve});
      const SchemeResult steps = evaluate(*s, BuildContext{w, hw, params, Fidelity::steps});
      REQUIRE(curve.comm_ps > 0);
      CHECK(std::abs(static_cast<double>(steps.comm_ps) / static_cast<double>(curve.comm_ps) - 1.0) < 1e-4);
    }
  }
}

TEST_CASE("no_overlap MLP = all-gather + fc1 + activation + fc2 + reduce-scatter", "[no_overlap][closed_form]") {
  const HardwareProfile hw = ideal_profile(4);
  const SchemeInfo* s = find_scheme("no_overlap");
  REQUIRE(s != nullptr);
  Workload w;
  w.kind = WorkloadKind::mlp_tpsp;
  w.tp = 4;
  MlpTpSp mlp;
  mlp.tokens = 2048;
  mlp.d_model = 1024;
  mlp.d_ffn = 4096;
  mlp.gated = true;
  w.shape = mlp;
  const nlohmann::json params = nlohmann::json::object();
  const SchemeResult r = evaluate(*s, BuildContext{w, hw, params, Fidelity::curve});
  const MlpShapes sh = mlp_shapes(mlp, 4);
  CHECK(sh.col.n == 2 * 4096 / 4);
  CHECK(sh.row.k == 4096 / 4);
  const Ps ag = collective_alone_ps(hw, Primitive::all_gather, sh.all_gather_bytes, 4);
  const Ps rs = collective_alone_ps(hw, Primitive::reduce_scatter, sh.reduce_scatter_bytes, 4);
  const Ps fc1 = gemm_time_ps(hw, sh.col);
  const Ps fc2 = gemm_time_ps(hw, sh.row);
  const Ps act = transfer_ps(sh.activation_bytes, 1e9);  // HBM at 1e9 GB/s: a few picoseconds
  CHECK(r.comm_ps == ag + rs);
  CHECK(r.latency_ps == ag + fc1 + act + fc2 + rs);
  CHECK(r.exposed_comm_ps == ag + rs);
}

TEST_CASE("no_overlap transformer = layers x (attention layer + MLP layer)", "[no_overlap][closed_form]") {
  const HardwareProfile hw = ideal_profile(4);
  const SchemeInfo* s = find_scheme("no_overlap");
  REQUIRE(s != nullptr);
  const nlohmann::json params = nlohmann::json::object();
  Transformer base;
  base.batch = 1;
  base.seq = 512;
  const auto llama = named_model("llama3-70b", base);
  REQUIRE(llama.has_value());
  CHECK(llama->layers == 80);
  CHECK(llama->d_model == 8192);
  CHECK(llama->d_ffn == 28672);
  CHECK(llama->kv_heads == 8);
  CHECK_FALSE(named_model("gpt-5", base).has_value());

  Transformer t = *named_model("llama3-8b", base);
  t.layers = 2;
  Workload w;
  w.kind = WorkloadKind::transformer;
  w.tp = 4;
  w.shape = t;
  Workload att;
  att.kind = WorkloadKind::attention_tpsp;
  att.tp = 4;
  att.shape = transformer_attention(t);
  Workload mlp;
  mlp.kind = WorkloadKind::mlp_tpsp;
  mlp.tp = 4;
  mlp.shape = transformer_mlp(t);
  const SchemeResult whole = evaluate(*s, BuildContext{w, hw, params, Fidelity::curve});
  const SchemeResult a = evaluate(*s, BuildContext{att, hw, params, Fidelity::curve});
  const SchemeResult m = evaluate(*s, BuildContext{mlp, hw, params, Fidelity::curve});
  CHECK(whole.latency_ps == 2 * (a.latency_ps + m.latency_ps));
  CHECK(whole.comm_ps == 2 * (a.comm_ps + m.comm_ps));
}
