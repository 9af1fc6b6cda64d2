// Model configs (sim/model_config.hpp): Hugging Face config.json files read for their architecture,
// the shipped ones and the built-in names that alias them, and every refusal naming file and key.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "cost_model/input_error.hpp"
#include "sim/model_config.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"
#include "tests/support/transformer_fixtures.hpp"
#include "tools/cli.hpp"

using overlap::InputError;
using overlap::sim::builtin_model_config;
using overlap::sim::builtin_models;
using overlap::sim::read_model_config;

namespace {

using overlap::test::cli;
using overlap::test::CliResult;

// A config directory per test case, removed after it.
struct Scratch : overlap::test::TempDir {
  Scratch() : TempDir("model-config") {}
};

using overlap::sim::test::model_config_error;

const std::string kLlama = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
  "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "rope_theta": 500000.0})";

}  // namespace

TEST_CASE("the built-in names read the shipped configs with the model cards' shapes", "[scenario][model]") {
  // Llama 3 Herd of Models, Table 3 (8B, 70B, 405B); the names the scenarios used before configs.
  const auto l8 = builtin_model_config("llama3-8b");
  REQUIRE(l8);
  CHECK(l8->layers == 32);
  CHECK(l8->d_model == 4096);
  CHECK(l8->d_ffn == 14336);
  CHECK(l8->heads == 32);
  CHECK(l8->kv_heads == 8);
  CHECK_FALSE(l8->moe);
  const auto l70 = builtin_model_config("llama3-70b");
  REQUIRE(l70);
  CHECK((l70->layers == 80 && l70->d_model == 8192 && l70->d_ffn == 28672 && l70->heads == 64 && l70->kv_heads == 8));
  const auto l405 = builtin_model_config("llama3.1-405b");
  REQUIRE(l405);
  CHECK((l405->layers == 126 && l405->d_model == 16384 && l405->d_ffn == 53248 && l405->heads == 128));
  const auto mixtral = builtin_model_config("mixtral-8x7b");
  REQUIRE(mixtral);
  REQUIRE(mixtral->moe);
  CHECK(mixtral->moe->experts == 8);
  CHECK(mixtral->moe->top_k == 2);
  CHECK(mixtral->moe->expert_ffn == 14336);  // Mixtral's experts are intermediate_size wide
  CHECK(mixtral->moe->shared_experts == 0);
  const auto ds = builtin_model_config("deepseek-v3");
  REQUIRE(ds);
  REQUIRE(ds->moe);
  CHECK((ds->moe->experts == 256 && ds->moe->top_k == 8 && ds->moe->expert_ffn == 2048));
  CHECK((ds->moe->shared_experts == 1 && ds->moe->first_dense_layers == 3));
  CHECK(ds->mla.has_value());
  CHECK_FALSE(builtin_model_config("gpt-5"));
  for (const auto& b : builtin_models()) CHECK_NOTHROW(builtin_model_config(b.name));
}

TEST_CASE("a config.json missing or misstating a field is refused naming the file and the key", "[scenario][model][errors]") {
  const Scratch s;
  const auto llama = read_model_config(s.write("ok.json", kLlama));
  CHECK(llama.architecture == "LlamaForCausalLM");
  CHECK(llama.kv_heads == 8);

  // num_key_value_heads absent: Hugging Face's default is one key-value head per attention head.
  const auto mha = read_model_config(s.write("mha.json", R"({"hidden_size": 1024, "intermediate_size": 4096,
    "num_hidden_layers": 2, "num_attention_heads": 16})"));
  CHECK(mha.kv_heads == 16);

  const struct {
    const char* text;
    const char* key;
    const char* says;
  } bad[] = {
      {R"({"hidden_size": 4096})", "intermediate_size", "missing"},
      {R"({"hidden_size": "4096", "intermediate_size": 1, "num_hidden_layers": 1, "num_attention_heads": 1})",
       "hidden_size", "whole number"},
      {R"({"hidden_size": 0, "intermediate_size": 1, "num_hidden_layers": 1, "num_attention_heads": 1})", "hidden_size",
       "must be in"},
      {R"({"hidden_size": 4096, "intermediate_size": 1, "num_hidden_layers": 1, "num_attention_heads": 32,
           "num_key_value_heads": 5})", "num_key_value_heads", "do not divide"},
      {R"({"hidden_size": 4096, "intermediate_size": 1, "num_hidden_layers": 2, "num_attention_heads": 32,
           "num_experts": 8, "num_experts_per_tok": 2, "decoder_sparse_step": 2})", "decoder_sparse_step", "not modelled"},
      {R"({"hidden_size": 4096, "intermediate_size": 1, "num_hidden_layers": 1, "num_attention_heads": 32,
           "num_local_experts": 8})", "num_experts_per_tok", "missing"},
      {R"({"hidden_size": 4096, "intermediate_size": 1, "num_hidden_layers": 1, "num_attention_heads": 32,
           "num_local_experts": 8, "num_experts_per_tok": 9})", "num_experts_per_tok", "only 8 experts"},
      {R"({"hidden_size": 4096, "intermediate_size": 1, "num_hidden_layers": 4, "num_attention_heads": 32,
           "n_routed_experts": 8, "num_experts_per_tok": 2, "first_k_dense_replace": 5})", "first_k_dense_replace",
       "the model has 4"},
  };
  int i = 0;
  for (const auto& b : bad) {
    const std::string path = s.write("bad" + std::to_string(i++) + ".json", b.text);
    const InputError e = model_config_error(path);
    INFO(b.text);
    CHECK(e.file() == path);
    CHECK(e.key_path() == b.key);
    CHECK_THAT(e.message(), Catch::Contains(b.says));
  }
  CHECK_THAT(model_config_error(s.write("trunc.json", R"({"hidden_size": 40)")).message(), Catch::Contains("not a model config.json"));
  CHECK_THAT(model_config_error(s.write("list.json", "[1, 2]")).message(), Catch::Contains("must be an object"));
  CHECK_THAT(std::string(model_config_error(s.file("absent.json")).what()), Catch::Contains("absent.json"));
}

TEST_CASE("workload.model takes a built-in name or a config.json, and refuses parts it cannot model", "[scenario][model][cli]") {
  const Scratch s;
  s.write("config.json", kLlama);
  // A relative path in a scenario is read from the scenario's folder.
  const std::string scen = s.write("mlp.yaml",
                                   "hardware: h100-sxm-8x-nvswitch\n"
                                   "workload: {kind: mlp_tpsp, tp: 8, tokens: 8192, model: config.json}\n"
                                   "schemes: [no_overlap]\n");
  const CliResult from_file = cli({"run", scen, "--format", "json"});
  REQUIRE(from_file.rc == 0);
  // The same shapes as the built-in llama3-8b.
  const CliResult builtin = cli({"run", scen, "--format", "json", "--model", "llama3-8b"});
  REQUIRE(builtin.rc == 0);
  const auto latency = [](const std::string& json) { return json.substr(json.find("\"latency_ps\"")).substr(0, 40); };
  CHECK(latency(from_file.out) == latency(builtin.out));

  // A mixture-of-experts model's FFN is its experts: refused for an MLP, exit 2, at the model key.
  const CliResult moe = cli({"run", scen, "--model", "mixtral-8x7b"});
  CHECK(moe.rc == 2);
  CHECK_THAT(moe.err, Catch::Contains("--model mixtral-8x7b") && Catch::Contains("workload.model") &&
                          Catch::Contains("mixture of experts (8 experts, top 2)"));
  // Its attention is grouped-query attention like Llama's: attention_tpsp runs it.
  const std::string attn = s.write("attn.yaml",
                                   "hardware: h100-sxm-8x-nvswitch\n"
                                   "workload: {kind: attention_tpsp, tp: 8, batch: 1, seq: 8192, model: mixtral-8x7b}\n"
                                   "schemes: [no_overlap]\n");
  CHECK(cli({"run", attn}).rc == 0);
  // DeepSeek-V3's latent attention is not modelled: refused, never run as something else.
  const CliResult mla = cli({"run", attn, "--model", "deepseek-v3"});
  CHECK(mla.rc == 2);
  CHECK_THAT(mla.err, Catch::Contains("multi-head latent attention"));
  // A config missing a field: the scenario's model key and the config's file and key are named.
  s.write("broken.json", R"({"hidden_size": 4096})");
  const CliResult broken = cli({"run", scen, "--set", "workload.model=" + s.file("broken.json")});
  CHECK(broken.rc == 2);
  CHECK_THAT(broken.err, Catch::Contains("broken.json:1: intermediate_size: missing"));
}
