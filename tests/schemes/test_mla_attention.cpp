// DeepSeek's multi-head latent attention in a MoE transformer (sim/workload_shapes.hpp mla_shapes,
// sim/backward_shapes.cpp mla_backward, sim/schemes/moe_transformer.cpp): DeepSeek-V3's per-rank GEMMs at
// TP 8 in closed form from its config.json, the forward FLOPs, the backward's GEMMs twice the forward's,
// the latents' all-gathers against grouped-query attention's hidden-state gather, a step of no_overlap its
// forward plus its backward, determinism, every MoE scheme running it, and what stays refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "cost_model/input_error.hpp"
#include "sim/backward_shapes.hpp"
#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "sim/model_config.hpp"
#include "sim/node_builder.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/workload_shapes.hpp"
#include "tests/schemes/ideal_profile.hpp"
#include "tests/support/moe_fixtures.hpp"
#include "tests/support/transformer_fixtures.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

double flops_of(const RankGemm& g) {
  return 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
}

// DeepSeek-V3 (scenarios/models/deepseek-v3.json) as a MoE transformer of `layers` layers at TP = EP = tp,
// one `seq`-token sequence.
Workload deepseek_v3(int tp, int layers, std::int64_t seq) {
  const auto c = builtin_model_config("deepseek-v3");
  REQUIRE(c);
  REQUIRE(c->mla);
  Transformer t = test::moe_transformer_from_config("deepseek-v3", *c, tp, layers, seq);
  t.moe->shared_experts = c->moe->shared_experts;
  t.dense_layers = std::min(layers, c->moe->first_dense_layers);
  t.mla = c->mla;
  return test::transformer_on(t, tp);
}

// A small MLA MoE transformer whose every GEMM dimension is a multiple of 128 at tp 4: 8192 tokens of
// width 1024, 16 heads, q latent 256, kv latent 256 (+ RoPE 128: kv_down N = 384), nope 128, v 128.
Workload small_mla(int layers, int dense, std::int64_t q_lora = 256) {
  Transformer t = test::with_moe(test::custom_transformer(layers, 2, 4096, 1024, 2048, 16, 16), 4, 8, 2, 256, dense);
  t.mla = LatentAttention{q_lora, 256, 128, 128, 128};
  return test::transformer_on(t, 4);
}

using test::with_pass;

}  // namespace

TEST_CASE("mla: DeepSeek-V3's per-rank shapes at TP 8 from its config", "[mla][attention][moe]") {
  // T = 4096 tokens, T/tp = 512 per rank, 128 / 8 = 16 heads per rank; q_lora 1536, kv_lora 512,
  // qk_nope 128, qk_rope 64 (qk head 192), v 128, hidden 7168.
  const Workload w = deepseek_v3(8, 4, 4096);
  const Transformer& t = std::get<Transformer>(w.shape);
  const MlaShapes s = mla_shapes(t, 8);
  CHECK((s.q_down.m == 512 && s.q_down.n == 1536 && s.q_down.k == 7168));
  CHECK((s.kv_down.m == 512 && s.kv_down.n == 512 + 64 && s.kv_down.k == 7168));
  CHECK((s.q_up.m == 4096 && s.q_up.n == 16 * 192 && s.q_up.k == 1536));
  CHECK((s.kv_up.m == 4096 && s.kv_up.n == 16 * (128 + 128) && s.kv_up.k == 512));
  CHECK((s.out.m == 4096 && s.out.n == 7168 && s.out.k == 16 * 128));
  // Causal: half of 2 x T^2 x heads x (192 + 128).
  CHECK(s.attention_flops == 4096.0 * 4096 * 16 * (192 + 128));
  CHECK(s.attention_tiles == 16 * (4096 / 128));
  // The latents are gathered (bf16), not the 7168-wide hidden states grouped-query attention gathers; the
  // reduce-scatter is the same T x 7168.
  CHECK(s.q_all_gather_bytes == 4096 * 1536 * 2);
  CHECK(s.kv_all_gather_bytes == 4096 * 512 * 2);
  CHECK(s.rope_all_gather_bytes == 4096 * 64 * 2);
  CHECK(s.reduce_scatter_bytes == 4096 * 7168 * 2);
  const AttentionShapes gqa = attention_shapes(transformer_attention(t), 8);
  CHECK(s.reduce_scatter_bytes == gqa.reduce_scatter_bytes);
  CHECK((s.q_all_gather_bytes + s.kv_all_gather_bytes + s.rope_all_gather_bytes) * 7168 ==
        gqa.all_gather_bytes * (1536 + 512 + 64));
  CHECK(s.latent_norm_bytes == 2 * 512 * (1536 + 512) * 2);
  CHECK(s.rope_bytes == 2 * 4096 * (16 * 64 + 64) * 2);

  // Forward FLOPs per rank: the five GEMMs and core attention.
  const double expected = 2.0 * 512 * 1536 * 7168 + 2.0 * 512 * 576 * 7168 + 2.0 * 4096 * 3072 * 1536 +
                          2.0 * 4096 * 4096 * 512 + 4096.0 * 4096 * 16 * 320 + 2.0 * 4096 * 7168 * 2048;
  CHECK(forward_flops(w, Block::attention) == expected);
  // Weights per rank: the replicated down-projections whole, the rest a 1/8 share.
  CHECK(block_parameters(w, Block::attention) ==
        7168 * 1536 + 7168 * 576 + 1536 * 3072 + 512 * 4096 + 2048 * 7168);
}

TEST_CASE("mla: the backward's GEMMs are twice the forward's, its collectives the forward's conjugates",
          "[mla][attention][moe]") {
  const Workload w = deepseek_v3(8, 4, 4096);
  const Transformer& t = std::get<Transformer>(w.shape);
  const MlaShapes s = mla_shapes(t, 8);
  double forward = 0, backward = 0;
  for (const RankGemm& g : {s.q_down, s.kv_down, s.q_up, s.kv_up, s.out}) forward += flops_of(g);
  Bytes gathered = 0, scattered = 0, regathered = 0;
  for (const BackwardStep& b : backward_steps(w, Block::attention)) {
    if (b.kind == BackwardStep::Kind::flops) CHECK(b.flops == 2.5 * s.attention_flops);  // FlashAttention-2
    if (b.kind != BackwardStep::Kind::linear) continue;
    backward += flops_of(b.linear.dgrad) + flops_of(b.linear.wgrad);
    gathered += b.linear.gather_bytes;
    scattered += b.linear.scatter_bytes;
    regathered += b.linear.regather_bytes;
  }
  CHECK(backward == 2 * forward);
  // dY all-gathered before out_proj; d(latents) and d(k_pe) reduce-scattered (what the forward gathered);
  // the latents gathered again for q_up's and kv_up's wgrad; the down-projections none.
  CHECK(gathered == s.reduce_scatter_bytes);
  CHECK(scattered == s.q_all_gather_bytes + s.kv_all_gather_bytes + s.rope_all_gather_bytes);
  CHECK(regathered == s.q_all_gather_bytes + s.kv_all_gather_bytes);

  // The same in a built graph (dimensions multiples of 128 on the ideal node), and recomputation:
  // full redoes the forward's GEMMs, selective only core attention.
  const HardwareProfile hw = test::ideal_profile(4);
  // (Both layers dense: the router's 8 columns are no multiple of 128.)
  const Workload step = with_pass(small_mla(2, 2), Pass::step);
  const BuiltScheme none = test::build_moe_scheme("no_overlap", step, hw);
  const Ps fwd = test::gemm_tile_ps(none, StepPass::forward);
  REQUIRE(fwd > 0);
  CHECK(test::gemm_tile_ps(none, StepPass::backward) == 2 * fwd);
  const BuiltScheme full = test::build_moe_scheme("no_overlap", with_pass(step, Pass::step, Recompute::full), hw);
  CHECK(test::gemm_tile_ps(full, StepPass::backward) == 3 * fwd);
}

TEST_CASE("mla: without a query latent (DeepSeek-V2-Lite) q is a column-parallel projection of the hidden states",
          "[mla][attention][moe]") {
  const Workload w = small_mla(1, 0, 0);
  const MlaShapes s = mla_shapes(std::get<Transformer>(w.shape), 4);
  CHECK(s.q_down.m == 0);
  CHECK((s.q_up.m == 8192 && s.q_up.n == 4 * 256 && s.q_up.k == 1024));
  CHECK(s.q_all_gather_bytes == 8192 * 1024 * 2);
  CHECK(s.latent_norm_bytes == 2 * 2048 * 256 * 2);
  const BuiltScheme b = test::build_moe_scheme("no_overlap", with_pass(w, Pass::step), test::ideal_profile(4));
  bool q_proj = false, q_down = false;
  for (const Op& op : b.graph.ops()) {
    q_proj = q_proj || op.name == "L0.attn.q_proj";
    q_down = q_down || op.name.find("q_down") != std::string::npos;
  }
  CHECK(q_proj);
  CHECK_FALSE(q_down);
}

TEST_CASE("mla: a DeepSeek-V3 step of no_overlap is its forward plus its backward; every MoE scheme runs it",
          "[mla][attention][moe][moe_transformer]") {
  const HardwareProfile hw = test::ideal_profile(8);
  // 4 layers: DeepSeek-V3's 3 dense (first_k_dense_replace) and one MoE layer of 256 experts, top 8.
  const Workload base = deepseek_v3(8, 4, 4096);
  const NodeConfig node = make_node(hw, 8);
  const Ps forward = test::moe_scheme_latency("no_overlap", base, hw);
  const Ps backward = test::moe_scheme_latency("no_overlap", with_pass(base, Pass::backward), hw);
  CHECK(backward > forward);
  const BuiltScheme step = test::build_moe_scheme("no_overlap", with_pass(base, Pass::step), hw);
  CHECK(run(step.graph, node).makespan_ps == forward + backward);
  CHECK_THAT(step.reason, Catch::Contains("latent (MLA) attention"));
  // The step ends with the TP all-reduce of the replicated down-projections' weight gradients, one per
  // rank, in the backward; the forward has none.
  int finalize = 0;
  for (const Op& op : step.graph.ops())
    if (op.name.rfind("bwd.finalize.mla_down_proj_grads_all_reduce", 0) == 0) {
      ++finalize;
      CHECK(op.pass == StepPass::backward);
    }
  CHECK(finalize == 8);
  // Determinism: the same graph and time twice.
  const BuiltScheme again = test::build_moe_scheme("no_overlap", with_pass(base, Pass::step), hw);
  CHECK(step.graph.digest() == again.graph.digest());
  CHECK(run(again.graph, node).makespan_ps == forward + backward);
  // Every MoE scheme's forward builds the MLA attention (the MoE block is what they differ in).
  for (const std::string scheme : {"no_overlap", "moe_pipeline", "moe_flashoverlap", "moe_tile_fused"}) {
    INFO(scheme);
    const BuiltScheme b = test::build_moe_scheme(scheme, base, hw);
    int kv_up = 0, qkv = 0;
    for (const Op& op : b.graph.ops()) {
      kv_up += op.name == "L3.attn.kv_up" ? 1 : 0;
      qkv += op.name.find("attn.qkv") != std::string::npos ? 1 : 0;
    }
    CHECK(kv_up == 8);  // one per rank
    CHECK(qkv == 0);
    CHECK(run(b.graph, node).makespan_ps > 0);
  }
}

TEST_CASE("mla: a DeepSeek-V3 step's MFU counts the latent attention's FLOPs", "[mla][attention][moe][moe_transformer]") {
  const HardwareProfile hw = test::ideal_profile(8);
  const Workload w = with_pass(deepseek_v3(8, 4, 4096), Pass::step);
  const Transformer& t = std::get<Transformer>(w.shape);
  const SchemeResult r = evaluate(*find_scheme("no_overlap"), BuildContext{w, hw, nlohmann::json::object(), Fidelity::curve}, {});
  REQUIRE(r.step.present);
  // Per GPU: four layers' MLA (the closed form of the shapes test), three dense MLPs (gate+up and down of
  // FFN 18432 / 8 on the 4096 gathered tokens), one MoE block; forward 1x, backward 2x.
  const double attention = 2.0 * 512 * 1536 * 7168 + 2.0 * 512 * 576 * 7168 + 2.0 * 4096 * 3072 * 1536 +
                           2.0 * 4096 * 4096 * 512 + 4096.0 * 4096 * 16 * 320 + 2.0 * 4096 * 7168 * 2048;
  const double mlp = 2.0 * 4096 * (2 * 18432 / 8) * 7168 + 2.0 * 4096 * 7168 * (18432 / 8);
  CHECK(r.step.model_flops == Approx(3 * (4 * attention + 3 * mlp + moe_forward_flops(*t.moe))).epsilon(1e-12));
}

TEST_CASE("mla: what stays unmodelled is refused", "[mla][attention][moe][errors]") {
  // A config with kv_lora_rank but no qk_rope_head_dim: refused naming the file and the key.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "overlap_test_mla";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "no-rope.json").string();
  {
    std::ofstream f(path);
    f << R"({"hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 4, "num_attention_heads": 16,
             "kv_lora_rank": 512, "q_lora_rank": null, "qk_nope_head_dim": 128, "v_head_dim": 128})";
  }
  try {
    (void)read_model_config(path);
    FAIL("a latent attention config without qk_rope_head_dim was read");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("no-rope.json") && Catch::Contains("qk_rope_head_dim"));
  }
  // q_lora_rank null reads as no query latent.
  {
    std::ofstream f(path);
    f << R"({"hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 4, "num_attention_heads": 16,
             "kv_lora_rank": 512, "q_lora_rank": null, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
             "v_head_dim": 128})";
  }
  const ModelConfig lite = read_model_config(path);
  REQUIRE(lite.mla);
  CHECK((lite.mla->q_lora == 0 && lite.mla->kv_lora == 512 && lite.mla->qk_rope == 64));
  std::filesystem::remove_all(dir);
  // A dense transformer with MLA: its schemes build grouped-query attention, so it is refused.
  Workload dense = small_mla(2, 0);
  std::get<Transformer>(dense.shape).moe.reset();
  CHECK_THROWS_WITH(validate_workload(dense), Catch::Contains("workload.model"));
}
