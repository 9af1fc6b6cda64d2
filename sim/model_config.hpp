#pragma once
// A model's architecture as Hugging Face writes it in a checkpoint's config.json (no weights): the
// widths, heads and layers a workload needs, and the mixture-of-experts fields where the model has
// them. Built-in names (`llama3-70b`, `deepseek-v3`, ...) are aliases of the configs shipped in
// scenarios/models/.
#include <optional>
#include <string>
#include <vector>

#include "sim/workload.hpp"

namespace overlap::sim {

// The mixture-of-experts part of a config (Mixtral: num_local_experts; DeepSeek: n_routed_experts;
// Qwen-MoE: num_experts).
struct MoeConfig {
  int experts = 0;              // routed experts per MoE layer
  int top_k = 0;                // num_experts_per_tok
  std::int64_t expert_ffn = 0;  // moe_intermediate_size, else intermediate_size (Mixtral)
  int shared_experts = 0;       // n_shared_experts / shared_expert count (0: none)
  int first_dense_layers = 0;   // first_k_dense_replace: leading layers with a dense FFN
};

struct ModelConfig {
  std::string name;          // the alias or the file's stem
  std::string file;          // the config.json read
  std::string architecture;  // architectures[0] ("" if the file has none)
  int layers = 0;            // num_hidden_layers
  std::int64_t d_model = 0;  // hidden_size
  std::int64_t d_ffn = 0;    // intermediate_size: the dense FFN's width
  std::int64_t heads = 0;    // num_attention_heads
  std::int64_t kv_heads = 0; // num_key_value_heads (absent: = heads, the Hugging Face default)
  std::int64_t vocab = 0;    // vocab_size (absent: 0, no embedding or output layer; a pipeline's first/last stage)
  std::int64_t head_dim = 0; // head_dim where it differs from hidden_size / heads (Qwen3-MoE); 0: that quotient
  // Multi-head latent attention (DeepSeek-V2/V3: kv_lora_rank present): q_lora_rank (null or absent:
  // no query compression), kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim. The MoE
  // transformer runs it (sim/workload_shapes.hpp mla_shapes); the other kinds refuse such a model.
  std::optional<LatentAttention> mla;
  std::optional<MoeConfig> moe;
};

// Reads a config.json, or a Hugging Face checkpoint directory's (`path` a directory: its config.json;
// the model is then named for the directory). A multimodal checkpoint's language model is read from
// its `text_config`. Refuses (InputError naming the file, the line and the key path) a file that is
// not JSON, a key repeated in one object or a number beyond a double anywhere in the file
// (cost_model/strict_json.hpp), a missing or out-of-range architecture field, inconsistent MoE fields
// (two expert-count spellings that disagree; a MoE field without an expert count), a MoE layer pattern
// the transformer cannot express (decoder_sparse_step, moe_layer_freq or interleave_moe_layer_step
// other than 1, mlp_only_layers not a prefix), an MLA config (kv_lora_rank) missing one of its head
// widths, and architecture features that are not modelled (linear-attention or hybrid layers,
// sliding-window or chunked attention, a plain ungated MLP, a shared expert narrower than a multiple
// of the routed experts' width: docs/reference/limits.md). Keys it does not use (rope,
// dtype, ...) are not otherwise checked.
ModelConfig read_model_config(const std::string& path);

// The built-in names and the file each one reads (<source tree>/scenarios/models/<file>.json).
struct BuiltinModel {
  std::string name;
  std::string file;
};
const std::vector<BuiltinModel>& builtin_models();

// A built-in name's config, nullopt for an unknown name.
std::optional<ModelConfig> builtin_model_config(const std::string& name);

// True when `ref` names a config file rather than a built-in name: it has a '/' or ends in ".json".
bool is_model_path(const std::string& ref);

}  // namespace overlap::sim
