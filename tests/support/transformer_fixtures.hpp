#pragma once
// Transformers the scheme and scenario tests build (test_transformer_schemes.cpp, test_moe_transformer*.cpp,
// test_mla_attention.cpp, test_flashoverlap_backward.cpp, test_head_dim.cpp): a "custom" model given by
// its widths, the MoE block over EP = TP added to it, a built-in MoE config as a transformer, a workload
// of one at a pass, and the InputError a config.json's read raises (model_config_test.cpp).
#include <cstdint>
#include <string>
#include <variant>

#include <catch2/catch.hpp>

#include "cost_model/input_error.hpp"
#include "sim/model_config.hpp"
#include "sim/workload.hpp"
#include "tests/support/moe_fixtures.hpp"

namespace overlap::sim::test {

// A "custom" transformer of `layers` layers: batch x seq tokens of width d_model, a dense FFN of width
// d_ffn, `heads` attention heads over `kv_heads` KV heads.
inline Transformer custom_transformer(int layers, std::int64_t batch, std::int64_t seq, std::int64_t d_model,
                                      std::int64_t d_ffn, std::int64_t heads, std::int64_t kv_heads) {
  Transformer t;
  t.model = "custom";
  t.layers = layers;
  t.batch = batch;
  t.seq = seq;
  t.d_model = d_model;
  t.d_ffn = d_ffn;
  t.heads = heads;
  t.kv_heads = kv_heads;
  return t;
}

// `t` with every layer from `dense` on a MoE block over EP = tp ranks: `experts` experts of FFN width
// expert_ffn (plus `shared` shared ones), top_k per token, each rank routing its batch x seq / tp shard.
inline Transformer with_moe(Transformer t, int tp, int experts, int top_k, std::int64_t expert_ffn, int dense,
                            MoeRoutingSpec routing = {}, int shared = 0) {
  Moe m = std::get<Moe>(moe_workload(tp, experts, top_k, t.batch * t.seq / tp, t.d_model, expert_ffn, routing).shape);
  m.shared_experts = shared;
  t.moe = m;
  t.dense_layers = dense;
  return t;
}

// A built-in MoE config (`name`) as a transformer of `layers` layers at TP = EP = tp, one `seq`-token
// sequence. Its head width, shared experts, dense layers and MLA are the caller's to add from `c`.
inline Transformer moe_transformer_from_config(const std::string& name, const ModelConfig& c, int tp, int layers,
                                               std::int64_t seq) {
  REQUIRE(c.moe);
  Transformer t;
  t.model = name;
  t.layers = layers;
  t.batch = 1;
  t.seq = seq;
  t.d_model = c.d_model;
  t.d_ffn = c.d_ffn;
  t.heads = c.heads;
  t.kv_heads = c.kv_heads;
  t.moe = std::get<Moe>(moe_workload(tp, c.moe->experts, c.moe->top_k, seq / tp, c.d_model, c.moe->expert_ffn).shape);
  return t;
}

inline Workload transformer_on(const Transformer& t, int tp) { return Workload{WorkloadKind::transformer, tp, t}; }

inline Workload with_pass(Workload w, Pass p, Recompute r = Recompute::none) {
  w.training.pass = p;
  w.training.recompute = r;
  return w;
}

// The InputError reading the config.json at `path` raises (the test fails if it reads).
inline InputError model_config_error(const std::string& path) {
  try {
    (void)read_model_config(path);
  } catch (const InputError& e) {
    return e;
  }
  FAIL("expected an InputError");
  return InputError("", 0, "", "");
}

}  // namespace overlap::sim::test
