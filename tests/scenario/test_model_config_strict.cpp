// A config.json read as strictly as a scenario file (sim/model_config.hpp, cost_model/strict_json.hpp):
// repeated keys and numbers beyond a double refused naming the key, MoE fields that disagree or stand
// alone refused, architecture features that are not modelled refused naming them, multimodal
// checkpoints read through text_config, and a checkpoint directory read through its config.json.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "cost_model/input_error.hpp"
#include "sim/model_config.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"
#include "tests/support/transformer_fixtures.hpp"

using overlap::InputError;
using overlap::sim::builtin_model_config;
using overlap::sim::read_model_config;
using overlap::sim::test::model_config_error;
using overlap::test::cli;

namespace {

struct Scratch : overlap::test::TempDir {
  Scratch() : TempDir("model-strict") {}
};

// Llama-3.1-8B's architecture fields (scenarios/models/llama-3.1-8b.json) followed by `extra`.
std::string llama(const std::string& extra = "") {
  return R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
  "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_act": "silu")" +
         extra + "}";
}

std::string fixture(const std::string& name) {
  return (std::filesystem::path(OVERLAP_SOURCE_DIR) / "tests" / "scenario" / "model_configs" / name).string();
}

struct Refusal {
  const char* extra;  // appended to llama()
  const char* key;    // the key path the error names
  const char* says;
};

void check_refusals(const Scratch& s, std::initializer_list<Refusal> cases) {
  int i = 0;
  for (const Refusal& r : cases) {
    const std::string path = s.write("r" + std::to_string(i++) + ".json", llama(r.extra));
    INFO(r.extra);
    const InputError e = model_config_error(path);
    CHECK(e.file() == path);
    CHECK(e.key_path() == r.key);
    CHECK_THAT(e.message(), Catch::Contains(r.says));
  }
}

}  // namespace

TEST_CASE("config.json: a repeated key or a number beyond a double is refused naming the key path", "[scenario][model][errors]") {
  const Scratch s;
  check_refusals(s, {
                        {R"(, "hidden_size": 8192)", "hidden_size", "duplicate key"},
                        {R"(, "rope_scaling": {"factor": 8.0, "factor": 4.0})", "rope_scaling.factor", "duplicate key"},
                        // A key the reader never uses: nlohmann's out_of_range 406 was an internal error.
                        {R"(, "rope_theta": 1e999)", "rope_theta", "beyond the range of a double"},
                        {R"(, "rope_scaling": {"low_freq_factor": [1.0, -1e400]})", "rope_scaling.low_freq_factor[1]",
                         "beyond the range of a double"},
                        // An integer of 320 digits is read as a double by the parser: inf, so refused too.
                        {(std::string(R"(, "vocab_size": 1)") + std::string(320, '0')).c_str(), "vocab_size",
                         "beyond the range of a double"},
                    });
  // The message carries a line: the member's (cost_model/json_lines.hpp finds its first spelling).
  const std::string two = s.write("lines.json", "{\"a\": 0,\n \"hidden_size\": 1, \"hidden_size\": 2}");
  CHECK(model_config_error(two).line() == 2);
}

TEST_CASE("config.json: MoE fields that disagree or stand alone are refused, never run dense", "[scenario][model][errors]") {
  const Scratch s;
  check_refusals(
      s, {
             // Two spellings of the expert count that disagree: the later one is named, with the first.
             {R"(, "num_local_experts": 8, "num_experts": 16, "num_experts_per_tok": 2)", "num_experts",
              "num_local_experts says 8"},
             {R"(, "n_routed_experts": 64, "num_experts": 32, "num_experts_per_tok": 2)", "num_experts",
              "n_routed_experts says 64"},
             {R"(, "num_experts_per_tok": 2)", "num_experts_per_tok", "no expert count"},
             {R"(, "moe_intermediate_size": 1408)", "moe_intermediate_size", "no expert count"},
             {R"(, "num_experts": 8, "num_experts_per_tok": 2, "moe_layer_freq": 2)", "moe_layer_freq", "not modelled"},
             {R"(, "num_local_experts": 16, "num_experts_per_tok": 1, "interleave_moe_layer_step": 2)",
              "interleave_moe_layer_step", "not modelled"},
             {R"(, "num_experts": 60, "num_experts_per_tok": 4, "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5000)",
              "shared_expert_intermediate_size", "not a multiple"},
             {R"(, "num_experts": 60, "num_experts_per_tok": 4, "n_shared_experts": 1, "shared_expert_intermediate_size": 1408)",
              "shared_expert_intermediate_size", "not both"},
         });
  // Two spellings that agree are one expert count.
  const auto same = read_model_config(s.write("same.json", llama(R"(, "num_local_experts": 8, "num_experts": 8, "num_experts_per_tok": 2)")));
  REQUIRE(same.moe);
  CHECK(same.moe->experts == 8);
  // Qwen1.5-MoE-A2.7B: one shared expert of 5632 = 4 x 1408 costs what 4 routed-width experts cost
  // (a gated FFN's FLOPs and bytes are linear in its width), so it reads as 4 shared experts.
  const auto qwen = read_model_config(fixture("qwen2-moe-shared-expert.json"));
  REQUIRE(qwen.moe);
  CHECK((qwen.moe->experts == 60 && qwen.moe->top_k == 4 && qwen.moe->expert_ffn == 1408));
  CHECK(qwen.moe->shared_experts == 4);
}

TEST_CASE("config.json: architecture features that are not modelled are refused naming them", "[scenario][model][errors]") {
  const Scratch s;
  check_refusals(
      s, {
             // Qwen3-Next: a hybrid of linear attention (Gated DeltaNet) and full attention layers.
             {R"(, "layer_types": ["linear_attention", "full_attention"])", "layer_types", "linear_attention"},
             {R"(, "linear_num_key_heads": 16)", "linear_num_key_heads", "linear-attention"},
             {R"(, "layers_block_type": ["mamba", "attention"])", "layers_block_type", "hybrid"},
             // Mistral-7B-v0.1: a 4096-token sliding window on every layer.
             {R"(, "sliding_window": 4096)", "sliding_window", "sliding-window attention is not modelled"},
             {R"(, "sliding_window": 4096, "use_sliding_window": true)", "sliding_window", "not modelled"},
             {R"(, "layer_types": ["sliding_attention", "full_attention"])", "layer_types", "sliding_attention"},
             {R"(, "attention_chunk_size": 8192)", "attention_chunk_size", "chunked local attention"},
         });
  // A plain (ungated) MLP: GPT-NeoX's up, GELU, down.
  const std::string neox = s.write("neox.json", R"({"architectures": ["GPTNeoXForCausalLM"], "hidden_size": 6144,
    "intermediate_size": 24576, "num_hidden_layers": 44, "num_attention_heads": 64, "hidden_act": "gelu"})");
  const InputError e = model_config_error(neox);
  CHECK(e.key_path() == "hidden_act");
  CHECK_THAT(e.message(), Catch::Contains("GPTNeoXForCausalLM") && Catch::Contains("plain MLP"));
  const std::string gelu = s.write("gelu.json", llama(R"(, "activation_function": "gelu_new")").replace(
                                                     llama().find(R"("hidden_act": "silu")"), 20, R"("use_cache": true)"));
  CHECK(model_config_error(gelu).key_path() == "activation_function");
  // What is read as it is: a window switched off or null (Qwen2.5, Mixtral), all-full layer_types,
  // and Gemma's gated GeGLU (a GELU on the gate of a three-projection MLP).
  CHECK_NOTHROW(read_model_config(s.write("off.json", llama(R"(, "sliding_window": 131072, "use_sliding_window": false)"))));
  CHECK_NOTHROW(read_model_config(s.write("null.json", llama(R"(, "sliding_window": null)"))));
  CHECK_NOTHROW(read_model_config(s.write("full.json", llama(R"(, "layer_types": ["full_attention", "full_attention"])"))));
  CHECK_NOTHROW(read_model_config(s.write("gemma.json", R"({"architectures": ["GemmaForCausalLM"], "hidden_size": 3072,
    "intermediate_size": 24576, "num_hidden_layers": 28, "num_attention_heads": 16, "head_dim": 256,
    "hidden_act": "gelu_pytorch_tanh"})")));
}

TEST_CASE("config.json: a multimodal checkpoint's text_config and a checkpoint directory are read", "[scenario][model]") {
  const Scratch s;
  // Llava-style: the language model's fields under text_config, a vision tower's beside it.
  const auto mm = read_model_config(fixture("llava-style-text-config.json"));
  const auto l8 = builtin_model_config("llama3-8b");
  REQUIRE(l8);
  CHECK((mm.d_model == l8->d_model && mm.d_ffn == l8->d_ffn && mm.layers == l8->layers && mm.heads == l8->heads &&
         mm.kv_heads == l8->kv_heads));
  CHECK(mm.architecture == "LlavaForConditionalGeneration");
  // An error inside text_config names the nested key.
  const InputError nested = model_config_error(s.write("nested.json", R"({"text_config": {"hidden_size": 4096}})"));
  CHECK(nested.key_path() == "text_config.intermediate_size");
  // The top level repeating a field with another value: which one the model has is unclear.
  const InputError both = model_config_error(
      s.write("both.json", R"({"hidden_size": 1024, "text_config": {"hidden_size": 4096, "intermediate_size": 1,
        "num_hidden_layers": 1, "num_attention_heads": 32}})"));
  CHECK(both.key_path() == "hidden_size");
  CHECK_THAT(both.message(), Catch::Contains("text_config.hidden_size says 4096"));

  // A Hugging Face checkpoint directory: its config.json, the model named for the directory.
  std::filesystem::create_directories(s.path / "Meta-Llama-3.1-8B");
  s.write("Meta-Llama-3.1-8B/config.json", llama());
  const auto dir = read_model_config(s.file("Meta-Llama-3.1-8B"));
  CHECK(dir.name == "Meta-Llama-3.1-8B");
  CHECK(dir.file == s.file("Meta-Llama-3.1-8B/config.json"));
  CHECK((dir.d_model == 4096 && dir.layers == 32));
  std::filesystem::create_directories(s.path / "empty");
  CHECK_THAT(std::string(model_config_error(s.file("empty")).what()), Catch::Contains("empty/config.json"));
}

TEST_CASE("model flag: a checkpoint directory runs as its config.json, and an empty value is refused", "[scenario][model][cli]") {
  const Scratch s;
  std::filesystem::create_directories(s.path / "ckpt");
  s.write("ckpt/config.json", llama());
  const std::string scen = s.write("mlp.yaml",
                                   "hardware: h100-sxm-8x-nvswitch\n"
                                   "workload: {kind: mlp_tpsp, tp: 8, tokens: 8192, model: llama3-8b}\n"
                                   "schemes: [no_overlap]\n");
  const auto dir = cli({"run", scen, "--format", "json", "--model", s.file("ckpt")});
  REQUIRE(dir.rc == 0);
  const auto builtin = cli({"run", scen, "--format", "json"});
  REQUIRE(builtin.rc == 0);
  const auto latency = [](const std::string& json) { return json.substr(json.find("\"latency_ps\"")).substr(0, 40); };
  CHECK(latency(dir.out) == latency(builtin.out));  // the same widths as the built-in name: the same prediction

  for (const char* flag : {"--model", "--hardware"}) {
    const auto empty = cli({"run", scen, flag, ""});
    INFO(flag);
    CHECK(empty.rc == 2);
    CHECK_THAT(empty.err, Catch::Contains(flag) && Catch::Contains("must not be empty"));
  }
  const auto ranks = cli({"run", scen, "--trace", s.file("t.json"), "--trace-ranks", ""});
  CHECK(ranks.rc == 2);
  CHECK_THAT(ranks.err, Catch::Contains("--trace-ranks") && Catch::Contains("must not be empty"));
}
