// async_tp and commfuse over a whole model step (workload `transformer`): per layer attention_tpsp
// then mlp_tpsp, layer l+1 after layer l's MLP reduce-scatter on each rank (async-tp-illustrated
// reports Llama-3-70B end to end). Layers are the single-layer builders composed, so a model of L
// layers moves L times one layer's bytes, computes L times its FLOPs, and takes L times its time.
#include <catch2/catch.hpp>

#include "ideal_profile.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "sim/node_builder.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/workload_shapes.hpp"
#include "tests/support/transformer_fixtures.hpp"

using namespace overlap;
using namespace overlap::sim;
using namespace overlap::sim::test;

namespace {

constexpr int kTp = 4;

Transformer small_model(int layers) { return custom_transformer(layers, 1, 2048, 1024, 2048, 8, 2); }

Workload transformer_workload(int layers) { return transformer_on(small_model(layers), kTp); }

Workload attention_workload() { return Workload{WorkloadKind::attention_tpsp, kTp, transformer_attention(small_model(1))}; }

Workload mlp_workload() { return Workload{WorkloadKind::mlp_tpsp, kTp, transformer_mlp(small_model(1))}; }

const nlohmann::json& no_params() {
  static const nlohmann::json none = nlohmann::json::object();
  return none;
}

BuiltScheme build(const SchemeInfo& s, const Workload& w, const HardwareProfile& hw,
                  const nlohmann::json& params = no_params()) {
  return s.build(BuildContext{w, hw, params, Fidelity::curve});
}

Ps latency(const SchemeInfo& s, const Workload& w, const HardwareProfile& hw) {
  const BuiltScheme b = build(s, w, hw);
  return run(b.graph, make_node(hw, kTp)).makespan_ps;
}

Ps compute_only(const SchemeInfo& s, const Workload& w, const HardwareProfile& hw) {
  const BuiltScheme b = build(s, w, hw);
  EngineOptions o;
  o.zero_comm = true;
  return run(b.graph, make_node(hw, kTp), o).makespan_ps;
}

// GEMM and attention FLOPs one rank computes in one layer (workload_shapes.hpp).
double layer_flops_per_rank() {
  const Transformer t = small_model(1);
  const AttentionShapes a = attention_shapes(transformer_attention(t), kTp);
  const MlpShapes m = mlp_shapes(transformer_mlp(t), kTp);
  auto gemm = [](const GemmShape& g) { return 2.0 * static_cast<double>(g.m * g.n) * static_cast<double>(g.k); };
  return gemm(a.qkv) + a.attention_flops + gemm(a.out) + gemm(m.col) + gemm(m.row);
}

// The schemes that compose layers, each found in the registry (the test fails on one it does not find).
std::vector<const SchemeInfo*> composed_schemes() {
  std::vector<const SchemeInfo*> out;
  for (const char* name : {"async_tp", "commfuse"}) {
    out.push_back(find_scheme(name));
    REQUIRE(out.back());
  }
  return out;
}

}  // namespace

TEST_CASE("async_tp and commfuse apply to a transformer", "[transformer][async_tp][commfuse]") {
  for (const SchemeInfo* s : composed_schemes()) {
    INFO(s->name);
    CHECK(s->applies(transformer_workload(3)));
    Workload one_rank = transformer_workload(3);
    one_rank.tp = 1;
    CHECK_FALSE(s->applies(one_rank));
  }
}

TEST_CASE("a 3-layer transformer moves 3x one layer's bytes, one layer what attention + MLP move",
          "[transformer][bytes]") {
  const HardwareProfile hw = ideal_profile(kTp, 1000);
  for (const SchemeInfo* s : composed_schemes()) {
    INFO(s->name);
    const BuiltScheme three = build(*s, transformer_workload(3), hw);
    const BuiltScheme one = build(*s, transformer_workload(1), hw);
    const BuiltScheme att = build(*s, attention_workload(), hw);
    const BuiltScheme mlp = build(*s, mlp_workload(), hw);
    Bytes total = 0;
    for (int src = 0; src < kTp; ++src)
      for (int dst = 0; dst < kTp; ++dst) {
        const auto i = static_cast<std::size_t>(src), j = static_cast<std::size_t>(dst);
        CHECK(three.required_bytes[i][j] == 3 * one.required_bytes[i][j]);
        CHECK(one.required_bytes[i][j] == att.required_bytes[i][j] + mlp.required_bytes[i][j]);
        total += three.required_bytes[i][j];
      }
    // Per layer four collectives of S = tokens x d_model x 2 bytes, each rank receiving (T-1)/T S.
    const Bytes S = 2048 * 1024 * 2;
    CHECK(total == 3 * 4 * kTp * (S / kTp * (kTp - 1)));
  }
}

TEST_CASE("a 3-layer transformer's compute-only time: at most 3x one layer's blocks, at least its FLOPs at peak",
          "[transformer][compute]") {
  const HardwareProfile hw = ideal_profile(kTp, 1000);
  // gemm_tile_us replaces peak_tflops as the per-SM rate (hardware_profile.hpp): the GPU's peak is
  // sm_count tiles of 2*128*128*1024 FLOP per gemm_tile_us.
  REQUIRE(hw.gpu.gemm_tile_us == 1.0);
  const double peak_flop_per_ps = hw.gpu.sm_count * 2.0 * 128 * 128 * 1024 / 1e6;
  const double flops = 3 * layer_flops_per_rank();
  for (const SchemeInfo* s : composed_schemes()) {
    INFO(s->name);
    const Ps three = compute_only(*s, transformer_workload(3), hw);
    const Ps blocks = compute_only(*s, attention_workload(), hw) + compute_only(*s, mlp_workload(), hw);
    CHECK(three <= 3 * blocks);
    // Layers run one after another, so nothing is saved either (ideal node: no launch overhead).
    CHECK(three >= 3 * blocks - 3 * blocks / 100);
    CHECK(static_cast<double>(three) >= flops / peak_flop_per_ps);
  }
}

TEST_CASE("a 3-layer transformer's latency is at least its bound, the port time of every layer's bytes",
          "[transformer][bound]") {
  const HardwareProfile hw = ideal_profile(kTp, 200);  // slow links: the port bound exceeds compute
  for (const SchemeInfo* s : composed_schemes()) {
    INFO(s->name);
    const BuiltScheme three = build(*s, transformer_workload(3), hw);
    const BuiltScheme one = build(*s, transformer_workload(1), hw);
    const BuiltScheme mlp = build(*s, mlp_workload(), hw);
    // 12 collectives of S through each rank's port; one layer 4; a single block its largest one.
    const Bytes S = 2048 * 1024 * 2;
    CHECK(three.bound_ps == port_bound_ps(hw, kTp, 12 * (S / kTp * (kTp - 1))));
    CHECK(one.bound_ps == port_bound_ps(hw, kTp, 4 * (S / kTp * (kTp - 1))));
    CHECK(mlp.bound_ps == port_bound_ps(hw, kTp, S / kTp * (kTp - 1)));
    const SchemeResult r = evaluate(*s, BuildContext{transformer_workload(3), hw, no_params(), Fidelity::curve});
    CHECK(r.bound_ps >= three.bound_ps);
    CHECK(r.latency_ps >= r.bound_ps);
  }
}

TEST_CASE("on fast links a 3-layer transformer takes 3x one layer, and one layer attention + MLP",
          "[transformer][composition]") {
  const HardwareProfile hw = ideal_profile(kTp, 1e6);  // communication takes (almost) nothing
  for (const SchemeInfo* s : composed_schemes()) {
    INFO(s->name);
    const Ps one = latency(*s, transformer_workload(1), hw);
    const Ps three = latency(*s, transformer_workload(3), hw);
    const Ps blocks = latency(*s, attention_workload(), hw) + latency(*s, mlp_workload(), hw);
    CHECK(std::llabs(three - 3 * one) <= 3 * one / 50);
    CHECK(std::llabs(one - blocks) <= blocks / 50);
  }
}

TEST_CASE("layer l+1 starts on each rank only after layer l has ended there", "[transformer][order]") {
  const HardwareProfile hw = ideal_profile(kTp, 300);
  for (const SchemeInfo* s : composed_schemes()) {
    INFO(s->name);
    const BuiltScheme b = build(*s, transformer_workload(3), hw);
    const Timeline tl = run(b.graph, make_node(hw, kTp));
    for (int rank = 0; rank < kTp; ++rank)
      for (int l = 0; l + 1 < 3; ++l) {
        const std::string cur = "L" + std::to_string(l) + ".", next = "L" + std::to_string(l + 1) + ".";
        Ps cur_end = 0, next_start = std::numeric_limits<Ps>::max();
        int cur_ops = 0, next_ops = 0;
        for (OpId i = 0; i < static_cast<OpId>(b.graph.ops().size()); ++i) {
          if (b.graph.rank_of(i) != rank) continue;
          const std::string& nm = b.graph.op(i).name;
          const OpRecord& rec = tl.ops[static_cast<std::size_t>(i)];
          if (nm.rfind(cur, 0) == 0) cur_end = std::max(cur_end, rec.end_ps), ++cur_ops;
          if (nm.rfind(next, 0) == 0) next_start = std::min(next_start, rec.start_ps), ++next_ops;
        }
        INFO("rank " << rank << " layer " << l);
        REQUIRE(cur_ops > 0);
        REQUIRE(cur_ops == next_ops);
        CHECK(next_start >= cur_end);
      }
  }
}

TEST_CASE("multi-layer transformers keep byte accounting and the bound under every variant",
          "[transformer][invariants]") {
  const HardwareProfile hw = ideal_profile(kTp, 500);
  const Workload w = transformer_workload(2);
  const std::vector<std::pair<std::string, nlohmann::json>> variants = {
      {"async_tp", {{"streams", 1}}},
      {"async_tp", {{"transport", "sm"}, {"copy_sms", 8}}},
      {"commfuse", {{"schedule", "pairwise"}, {"m", 2}}},
      {"commfuse", {{"schedule", "circular"}, {"attention", "row_parallel"}}},
  };
  for (const auto& [name, params] : variants) {
    const SchemeInfo* s = find_scheme(name);
    REQUIRE(s);
    for (Fidelity f : {Fidelity::curve, Fidelity::steps}) {
      INFO(name << " " << params.dump() << (f == Fidelity::steps ? " steps" : " curve"));
      const SchemeResult r = evaluate(*s, BuildContext{w, hw, params, f});  // byte accounting checked inside
      CHECK(r.latency_ps >= r.bound_ps);
      CHECK(r.compute_only_ps <= r.latency_ps);
      CHECK(r.exposed_comm_ps <= r.scheme_comm_ps);
    }
  }
}
