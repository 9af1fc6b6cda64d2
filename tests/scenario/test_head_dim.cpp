// Attention heads wider than hidden_size / heads (Transformer::head_dim, AttentionTpSp::head_dim; Qwen3's
// MoE models): Qwen3-235B-A22B's per-rank qkv / out_proj and core attention at TP 8 in closed form, its 4
// KV heads replicated over 8 ranks, a head_dim equal to d_model / heads giving exactly today's shapes, the
// Qwen3 configs read (decoder_sparse_step, mlp_only_layers), a step of no_overlap its forward plus its
// backward with the backward's GEMMs twice the forward's, and what stays refused.
#include <catch2/catch.hpp>

#include <string>

#include "cost_model/input_error.hpp"
#include "sim/backward_shapes.hpp"
#include "sim/engine.hpp"
#include "sim/model_config.hpp"
#include "sim/node_builder.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/workload_shapes.hpp"
#include "tests/schemes/ideal_profile.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/moe_fixtures.hpp"
#include "tests/support/temp_file.hpp"
#include "tests/support/transformer_fixtures.hpp"

using namespace overlap;
using namespace overlap::sim;

namespace {

double flops_of(const RankGemm& g) {
  return 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
}

// A built-in Qwen3-MoE config as a MoE transformer of `layers` layers at TP = EP = tp, one `seq`-token
// sequence (every layer MoE: decoder_sparse_step 1, mlp_only_layers []).
Workload qwen3(const std::string& name, int tp, int layers, std::int64_t seq) {
  const auto c = builtin_model_config(name);
  REQUIRE(c);
  Transformer t = sim::test::moe_transformer_from_config(name, *c, tp, layers, seq);
  t.head_dim = c->head_dim;
  t.dense_layers = c->moe->first_dense_layers;
  return sim::test::transformer_on(t, tp);
}

using sim::test::with_pass;

bool same(const RankGemm& a, const RankGemm& b) { return a.m == b.m && a.n == b.n && a.k == b.k && a.dtype == b.dtype; }

// A config directory per test case, removed after it.
struct Scratch : overlap::test::TempDir {
  Scratch() : TempDir("head-dim") {}
};

// A Qwen3-MoE-like config.json with `extra` keys appended.
std::string qwen_like(const std::string& extra) {
  return R"({"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 2048, "intermediate_size": 6144,
    "moe_intermediate_size": 768, "num_hidden_layers": 8, "num_attention_heads": 32, "num_key_value_heads": 4,
    "head_dim": 128, "num_experts": 128, "num_experts_per_tok": 8, "norm_topk_prob": true)" +
         extra + "}";
}

}  // namespace

TEST_CASE("head_dim: the Qwen3-MoE configs are read with their head width and every layer MoE", "[head_dim][model]") {
  const auto big = builtin_model_config("qwen3-235b-a22b");
  REQUIRE(big);
  CHECK(big->architecture == "Qwen3MoeForCausalLM");
  CHECK((big->d_model == 4096 && big->heads == 64 && big->kv_heads == 4 && big->head_dim == 128));
  CHECK((big->layers == 94 && big->d_ffn == 12288));
  REQUIRE(big->moe);
  CHECK((big->moe->experts == 128 && big->moe->top_k == 8 && big->moe->expert_ffn == 1536));
  CHECK((big->moe->shared_experts == 0 && big->moe->first_dense_layers == 0));
  CHECK_FALSE(big->mla);
  const auto small = builtin_model_config("qwen3-30b-a3b");
  REQUIRE(small);
  CHECK((small->d_model == 2048 && small->heads == 32 && small->kv_heads == 4 && small->head_dim == 128));
  CHECK(small->layers == 48);
  REQUIRE(small->moe);
  CHECK((small->moe->experts == 128 && small->moe->top_k == 8 && small->moe->expert_ffn == 768));
  CHECK(small->moe->first_dense_layers == 0);
  // A config writing the default head_dim (hidden_size / heads) keeps 0: the same model as without it.
  const Scratch s;
  const auto llama = read_model_config(s.write("llama.json", R"({"hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128})"));
  CHECK(llama.head_dim == 0);
  // head_dim frees hidden_size from being a multiple of heads.
  const auto odd = read_model_config(s.write("odd.json", R"({"hidden_size": 1000, "intermediate_size": 4000,
    "num_hidden_layers": 2, "num_attention_heads": 16, "head_dim": 64})"));
  CHECK(odd.head_dim == 64);
}

TEST_CASE("head_dim: Qwen3's MoE layer pattern is read where the transformer can express it, else refused",
          "[head_dim][model][errors]") {
  const Scratch s;
  // decoder_sparse_step 1 and a prefix of mlp_only_layers: the first k layers dense (first_dense_layers).
  CHECK(read_model_config(s.write("step1.json", qwen_like(R"(, "decoder_sparse_step": 1, "mlp_only_layers": [])")))
            .moe->first_dense_layers == 0);
  CHECK(read_model_config(s.write("prefix.json", qwen_like(R"(, "mlp_only_layers": [1, 0, 2])"))).moe->first_dense_layers == 3);
  const struct {
    const char* extra;
    const char* key;
    const char* says;
  } bad[] = {
      {R"(, "decoder_sparse_step": 2)", "decoder_sparse_step", "a MoE layer every 2 layers is not modelled"},
      {R"(, "decoder_sparse_step": 0)", "decoder_sparse_step", "must be in"},
      {R"(, "mlp_only_layers": [1])", "mlp_only_layers", "a prefix"},
      {R"(, "mlp_only_layers": [0, 2])", "mlp_only_layers", "a prefix"},
      {R"(, "mlp_only_layers": [8])", "mlp_only_layers", "not a layer index"},
      {R"(, "mlp_only_layers": "0")", "mlp_only_layers", "must be a list"},
      {R"(, "mlp_only_layers": [0], "first_k_dense_replace": 2)", "mlp_only_layers", "first_k_dense_replace says 2"},
  };
  int i = 0;
  for (const auto& b : bad) {
    INFO(b.extra);
    const std::string path = s.write("bad" + std::to_string(i++) + ".json", qwen_like(b.extra));
    const InputError e = sim::test::model_config_error(path);
    CHECK(e.file() == path);
    CHECK(e.key_path() == b.key);
    CHECK_THAT(e.message(), Catch::Contains(b.says));
  }
}

TEST_CASE("head_dim: Qwen3-235B-A22B's per-rank attention at TP 8 in closed form", "[head_dim][attention]") {
  // T = 8192 tokens; 64 / 8 = 8 query heads per rank; 4 KV heads cannot split 8 ways, so each rank holds
  // one (replicated, max(1, 4 / 8)); head_dim 128; hidden 4096.
  const Workload w = qwen3("qwen3-235b-a22b", 8, 4, 8192);
  const Transformer& t = std::get<Transformer>(w.shape);
  const AttentionShapes s = attention_shapes(transformer_attention(t), 8);
  CHECK((s.qkv.m == 8192 && s.qkv.n == (8 + 2 * 1) * 128 && s.qkv.k == 4096));
  CHECK((s.out.m == 8192 && s.out.n == 4096 && s.out.k == 8 * 128));
  // Causal: half of 2 x T^2 x heads x (128 + 128).
  CHECK(s.attention_flops == 8192.0 * 8192 * 8 * 256);
  CHECK(s.attention_tiles == 8 * (8192 / 128));
  CHECK(s.all_gather_bytes == 8192 * 4096 * 2);
  CHECK(s.reduce_scatter_bytes == 8192 * 4096 * 2);
  CHECK(forward_flops(w, Block::attention) == 2.0 * 8192 * 1280 * 4096 + 8192.0 * 8192 * 8 * 256 + 2.0 * 8192 * 4096 * 1024);
  CHECK(block_parameters(w, Block::attention) == 4096 * 1280 + 1024 * 4096);
  // At TP 4 the 4 KV heads split one per rank: 16 query heads, qkv N = (16 + 2) x 128.
  const AttentionShapes s4 = attention_shapes(transformer_attention(t), 4);
  CHECK((s4.qkv.n == 18 * 128 && s4.out.k == 16 * 128));
  // The same through attention_tpsp's own shape.
  AttentionTpSp a{1, 8192, 4096, 64, 4, true, DType::bf16, true};
  a.head_dim = 128;
  const AttentionShapes direct = attention_shapes(a, 8);
  CHECK((same(direct.qkv, s.qkv) && same(direct.out, s.out) && direct.attention_flops == s.attention_flops));
}

TEST_CASE("head_dim: a head width of d_model / heads gives exactly the shapes without it", "[head_dim][attention]") {
  for (const char* name : {"llama3-70b", "llama3-8b", "mixtral-8x7b", "qwen2.5-72b"}) {
    INFO(name);
    const auto c = builtin_model_config(name);
    REQUIRE(c);
    CHECK(c->head_dim == 0);
    for (int tp : {1, 2, 4, 8}) {
      AttentionTpSp a{1, 4096, c->d_model, c->heads, c->kv_heads, true, DType::bf16, true};
      const AttentionShapes implicit = attention_shapes(a, tp);
      a.head_dim = c->d_model / c->heads;
      const AttentionShapes explicit_width = attention_shapes(a, tp);
      CHECK(same(implicit.qkv, explicit_width.qkv));
      CHECK(same(implicit.out, explicit_width.out));
      CHECK(implicit.attention_flops == explicit_width.attention_flops);
      CHECK(implicit.attention_tiles == explicit_width.attention_tiles);
      CHECK(implicit.all_gather_bytes == explicit_width.all_gather_bytes);
      CHECK(implicit.reduce_scatter_bytes == explicit_width.reduce_scatter_bytes);
    }
  }
}

TEST_CASE("head_dim: a Qwen3-235B step of no_overlap is its forward plus its backward, the backward's GEMMs twice "
          "the forward's",
          "[head_dim][moe][moe_transformer]") {
  const Workload base = qwen3("qwen3-235b-a22b", 8, 2, 8192);
  const AttentionShapes s = attention_shapes(transformer_attention(std::get<Transformer>(base.shape)), 8);
  double backward = 0;
  for (const BackwardStep& b : backward_steps(base, Block::attention)) {
    if (b.kind == BackwardStep::Kind::flops) CHECK(b.flops == 2.5 * s.attention_flops);  // FlashAttention-2
    if (b.kind == BackwardStep::Kind::linear) backward += flops_of(b.linear.dgrad) + flops_of(b.linear.wgrad);
  }
  CHECK(backward == 2 * (flops_of(s.qkv) + flops_of(s.out)));

  const HardwareProfile hw = sim::test::ideal_profile(8);
  const NodeConfig node = make_node(hw, 8);
  const Ps forward = sim::test::moe_scheme_latency("no_overlap", base, hw);
  const Ps bwd = sim::test::moe_scheme_latency("no_overlap", with_pass(base, Pass::backward), hw);
  CHECK(forward > 0);
  CHECK(bwd > forward);
  const BuiltScheme step = sim::test::build_moe_scheme("no_overlap", with_pass(base, Pass::step), hw);
  CHECK(run(step.graph, node).makespan_ps == forward + bwd);
  // Every GEMM dimension is a multiple of 128 (qkv 1280 x 4096, out_proj 4096 x 1024, router 128, experts
  // 1536 wide, 8192 x 8 / 128 = 512 rows each under uniform routing): the backward's GEMM tiles cost exactly
  // twice the forward's.
  const Ps fwd_tiles = sim::test::gemm_tile_ps(step, StepPass::forward);
  REQUIRE(fwd_tiles > 0);
  CHECK(sim::test::gemm_tile_ps(step, StepPass::backward) == 2 * fwd_tiles);
}

TEST_CASE("head_dim: scenarios run Qwen3-MoE as a transformer and kinds without a head width refuse it",
          "[head_dim][scenario][cli]") {
  const Scratch s;
  const std::string scen = s.write("t.yaml",
                                   "hardware: h100-sxm-8x-nvswitch\n"
                                   "workload: {kind: transformer, tp: 8, batch: 1, seq: 4096, layers: 1, "
                                   "model: qwen3-30b-a3b}\n"
                                   "schemes: [no_overlap]\n");
  CHECK(overlap::test::cli({"run", scen}).rc == 0);
  const std::string attn = s.write("a.yaml",
                                   "hardware: h100-sxm-8x-nvswitch\n"
                                   "workload: {kind: attention_tpsp, tp: 8, batch: 1, seq: 4096, "
                                   "model: qwen3-235b-a22b}\n"
                                   "schemes: [no_overlap]\n");
  CHECK(overlap::test::cli({"run", attn}).rc == 0);
  // head_dim as a key of its own (a custom model): d_model need not be a multiple of heads then.
  const std::string custom = s.write("c.yaml",
                                     "hardware: h100-sxm-8x-nvswitch\n"
                                     "workload: {kind: attention_tpsp, tp: 8, batch: 1, seq: 4096, d_model: 4000, "
                                     "heads: 64, kv_heads: 4, head_dim: 128}\n"
                                     "schemes: [no_overlap]\n");
  CHECK(overlap::test::cli({"run", custom}).rc == 0);
  const overlap::test::CliResult bad = overlap::test::cli({"run", custom, "--set", "workload.head_dim=0"});
  CHECK(bad.rc == 2);
  CHECK_THAT(bad.err, Catch::Contains("head_dim"));
  // Ulysses takes head_dim = d_model / heads: refused at the model key, naming head_dim.
  const std::string uly = s.write("u.yaml",
                                  "hardware: h100-sxm-8x-nvswitch\n"
                                  "workload: {kind: attention_ulysses, tp: 8, batch: 1, seq: 4096, "
                                  "model: qwen3-235b-a22b}\n"
                                  "schemes: [no_overlap]\n");
  const overlap::test::CliResult refused = overlap::test::cli({"run", uly});
  CHECK(refused.rc == 2);
  CHECK_THAT(refused.err, Catch::Contains("workload.model") && Catch::Contains("head_dim 128"));
}
