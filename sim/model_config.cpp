#include "sim/model_config.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cost_model/input_error.hpp"
#include "cost_model/input_file.hpp"
#include "cost_model/input_ranges.hpp"
#include "cost_model/bounded_message.hpp"
#include "cost_model/json_lines.hpp"
#include "cost_model/strict_json.hpp"
#include "cost_model/source_paths.hpp"

namespace overlap::sim {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The object the architecture is read from (the file's top level, or its `text_config` for a
// multimodal checkpoint) and how its keys are named in messages ("text_config.hidden_size").
struct Source {
  const json& j;
  const std::string& file;
  const std::string& text;  // the file's text, for the line of a key
  std::string prefix;       // "" or "text_config."

  std::string path(const std::string& key) const { return prefix + key; }
  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw InputError(file, json_line_of(text, path(key)), path(key), message);
  }
  bool has(const char* key) const {
    const auto it = j.find(key);
    return it != j.end() && !it->is_null();
  }
};

// One positive integer field inside `range`; nullopt when absent (or null, Hugging Face's "not set").
std::optional<std::int64_t> optional_count(const Source& s, const std::string& key, const InputRange& range) {
  const auto it = s.j.find(key);
  if (it == s.j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) s.fail(key, fmt::format("must be a whole number (got {})", bounded_message(it->dump())));
  if (it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(range.max))
    s.fail(key, fmt::format("must be in [{}, {}] (got {})", range.min, range.max, it->get<std::uint64_t>()));
  const std::int64_t v = it->get<std::int64_t>();
  if (static_cast<double>(v) < range.min || static_cast<double>(v) > range.max)
    s.fail(key, fmt::format("must be in [{}, {}] (got {})", range.min, range.max, v));
  return v;
}

std::int64_t required_count(const Source& s, const std::string& key, const InputRange& range) {
  const auto v = optional_count(s, key, range);
  if (!v)
    s.fail(key, "missing: overlap-sim reads hidden_size, intermediate_size, num_hidden_layers and "
                "num_attention_heads (a decoder-only transformer's config.json)");
  return *v;
}

constexpr InputRange kExperts{"experts", "", 1, 65536, "experts", "", true};

// The routed-expert count: Mixtral writes num_local_experts, DeepSeek n_routed_experts, Qwen-MoE
// num_experts. A file with two of them that disagree is refused naming both (no spelling wins).
std::optional<std::int64_t> expert_count(const Source& s, std::string& which) {
  std::optional<std::int64_t> experts;
  for (const char* k : {"num_local_experts", "n_routed_experts", "num_experts"}) {
    const auto v = optional_count(s, k, kExperts);
    if (!v) continue;
    if (experts && *v != *experts)
      s.fail(k, fmt::format("{} experts, but {} says {}: the expert count is given twice and the two disagree; keep one",
                            *v, s.path(which), *experts));
    if (!experts) {
      experts = v;
      which = k;
    }
  }
  return experts;
}

// A MoE layer pattern other than "every layer" (the transformer runs its first dense_layers dense
// and every later layer MoE): Qwen-MoE decoder_sparse_step, DeepSeek moe_layer_freq, Llama 4
// interleave_moe_layer_step. Only 1 is read; anything else is refused rather than run as another model.
void require_every_layer(const Source& s, const char* key) {
  if (const auto step = optional_count(s, key, ranges::layers); step && *step != 1)
    s.fail(key, fmt::format("{}: a MoE layer every {} layers is not modelled (the transformer runs its first "
                            "dense_layers dense and every later layer MoE; only 1 is read)",
                            *step, *step));
}

std::optional<MoeConfig> read_moe(const Source& s, const ModelConfig& m) {
  std::string experts_key;
  const auto experts = expert_count(s, experts_key);
  if (!experts) {
    // A MoE field without an expert count is a config this reader would otherwise run dense.
    for (const char* k : {"num_experts_per_tok", "moe_intermediate_size", "n_shared_experts",
                          "shared_expert_intermediate_size"})
      if (s.has(k))
        s.fail(k, fmt::format("a mixture-of-experts field, but the file gives no expert count ({}, {} or {}): "
                              "refused rather than run as a dense model",
                              s.path("num_local_experts"), s.path("n_routed_experts"), s.path("num_experts")));
    return std::nullopt;
  }
  MoeConfig moe;
  moe.experts = static_cast<int>(*experts);
  const auto top_k = optional_count(s, "num_experts_per_tok", kExperts);
  if (!top_k) s.fail("num_experts_per_tok", "missing: a mixture of experts (" + s.path(experts_key) + ") needs it");
  if (*top_k > *experts)
    s.fail("num_experts_per_tok",
           fmt::format("{} experts per token, but only {} experts ({})", *top_k, *experts, s.path(experts_key)));
  moe.top_k = static_cast<int>(*top_k);
  moe.expert_ffn = optional_count(s, "moe_intermediate_size", ranges::width).value_or(m.d_ffn);
  moe.shared_experts = static_cast<int>(optional_count(s, "n_shared_experts", ranges::shared_experts).value_or(0));
  // Qwen2-MoE (Qwen2MoeSparseMoeBlock): one shared expert of shared_expert_intermediate_size, gated by
  // a sigmoid. A gated FFN of width w*n costs what n experts of width w cost (FLOPs and bytes are
  // linear in the width), so a width that is a whole multiple of the routed experts' is read as that
  // many shared experts; any other width is refused (the shared FFN runs at the experts' width).
  if (const auto shared_w = optional_count(s, "shared_expert_intermediate_size", ranges::width)) {
    if (s.has("n_shared_experts"))
      s.fail("shared_expert_intermediate_size",
             fmt::format("given beside {}: one of the two spellings of the shared experts, not both",
                         s.path("n_shared_experts")));
    if (*shared_w % moe.expert_ffn != 0)
      s.fail("shared_expert_intermediate_size",
             fmt::format("{}: a shared expert whose width is not a multiple of the routed experts' ({}) is not "
                         "modelled (shared experts run at the routed experts' width)",
                         *shared_w, moe.expert_ffn));
    const std::int64_t n = *shared_w / moe.expert_ffn;
    if (const auto why = range_violation(ranges::shared_experts, static_cast<double>(n)))
      s.fail("shared_expert_intermediate_size", fmt::format("{} / {} = {} shared experts: {}", *shared_w,
                                                            moe.expert_ffn, n, *why));
    moe.shared_experts = static_cast<int>(n);
  }
  const auto dense = optional_count(s, "first_k_dense_replace", ranges::layers);
  if (dense && *dense > m.layers)
    s.fail("first_k_dense_replace",
           fmt::format("{} dense layers, but the model has {} (num_hidden_layers)", *dense, m.layers));
  moe.first_dense_layers = static_cast<int>(dense.value_or(0));
  // Qwen2-MoE / Qwen3-MoE (Qwen3MoeDecoderLayer): layer i is MoE when i is not in mlp_only_layers and
  // (i + 1) % decoder_sparse_step == 0. The transformer expresses only "the first dense_layers dense,
  // the rest MoE", so a step of 1 and mlp_only_layers = [0, 1, ..., k-1] (a prefix) are read (the
  // prefix as first_dense_layers).
  for (const char* k : {"decoder_sparse_step", "moe_layer_freq", "interleave_moe_layer_step"}) require_every_layer(s, k);
  if (const auto it = s.j.find("mlp_only_layers"); it != s.j.end() && !it->is_null()) {
    if (!it->is_array())
      s.fail("mlp_only_layers", fmt::format("must be a list of layer indices (got {})", bounded_message(it->dump())));
    std::vector<std::int64_t> dense_ids;
    for (const json& e : *it) {
      if (!e.is_number_integer() || e.get<std::int64_t>() < 0 || e.get<std::int64_t>() >= m.layers)
        s.fail("mlp_only_layers",
               fmt::format("{} is not a layer index in [0, {}) (num_hidden_layers)", bounded_message(e.dump()), m.layers));
      dense_ids.push_back(e.get<std::int64_t>());
    }
    std::sort(dense_ids.begin(), dense_ids.end());
    dense_ids.erase(std::unique(dense_ids.begin(), dense_ids.end()), dense_ids.end());
    for (std::size_t i = 0; i < dense_ids.size(); ++i)
      if (dense_ids[i] != static_cast<std::int64_t>(i))
        s.fail("mlp_only_layers",
               fmt::format("{}: only dense layers 0, 1, ..., k-1 (a prefix) are modelled; layer {} is "
                           "dense but layer {} is not",
                           bounded_message(it->dump()), dense_ids[i], i));
    if (!dense_ids.empty()) {
      if (dense && *dense != static_cast<std::int64_t>(dense_ids.size()))
        s.fail("mlp_only_layers",
               fmt::format("{} dense layers, but first_k_dense_replace says {}", dense_ids.size(), *dense));
      moe.first_dense_layers = static_cast<int>(dense_ids.size());
    }
  }
  return moe;
}

// DeepSeek-V2's MLA fields (Hugging Face DeepseekV2Config / DeepseekV3Config). kv_lora_rank is what
// marks MLA; its three head widths are then required (a default would silently mis-size q_up, kv_up
// and core attention); q_lora_rank null is DeepSeek-V2-Lite's uncompressed query. num_key_value_heads
// is not read for MLA: every head has its own key and value up-projected from the shared latent.
std::optional<LatentAttention> read_mla(const Source& s) {
  const auto kv_lora = optional_count(s, "kv_lora_rank", ranges::width);
  if (!kv_lora) return std::nullopt;
  LatentAttention a;
  a.kv_lora = *kv_lora;
  a.q_lora = optional_count(s, "q_lora_rank", ranges::width).value_or(0);
  auto head_width = [&](const char* key) {
    const auto v = optional_count(s, key, ranges::width);
    if (!v)
      s.fail(key, "missing: a multi-head latent attention config (kv_lora_rank) needs qk_nope_head_dim, "
                  "qk_rope_head_dim and v_head_dim");
    return *v;
  };
  a.qk_nope = head_width("qk_nope_head_dim");
  a.qk_rope = head_width("qk_rope_head_dim");
  a.v_head = head_width("v_head_dim");
  return a;
}

// Architectures whose MLP is gated (gate, up and down projections: SwiGLU / GeGLU) although their
// activation is a GELU (Gemma: GemmaMLP multiplies gelu(gate) by up).
bool gated_with_gelu(const std::string& arch) { return arch.rfind("Gemma", 0) == 0; }

// Architectures whose MLP is plain (up, activation, down: two GEMMs), whatever their activation
// (Hugging Face GPTNeoXMLP, PhiMLP, Starcoder2MLP, GPTBigCodeMLP, FalconMLP, OPT, BLOOM, GPT-2, GPT-J, MPT).
bool plain_mlp(const std::string& arch) {
  for (const char* p : {"GPTNeoX", "PhiFor", "Starcoder2", "GPTBigCode", "Falcon", "OPT", "Bloom", "GPT2", "GPTJ", "Mpt", "MPT"})
    if (arch.rfind(p, 0) == 0) return true;
  return false;
}

// Features of the attention and the MLP that the transformer does not model (docs/reference/limits.md):
// refused naming the key, never run as a plain full-attention, gated-FFN model. What is modelled:
// full causal attention on every layer (grouped-query or MLA), a gated FFN (SwiGLU) or experts of it.
void refuse_unmodelled(const Source& s, const std::string& arch) {
  // Hybrid stacks: Qwen3-Next / Gemma 2-3 layer_types ("linear_attention", "sliding_attention"),
  // Jamba layers_block_type ("mamba"), Nemotron-H hybrid_override_pattern, linear-attention widths.
  if (const auto it = s.j.find("layer_types"); it != s.j.end() && !it->is_null()) {
    if (!it->is_array()) s.fail("layer_types", "must be a list of layer kinds");
    for (const json& e : *it)
      if (!e.is_string() || e.get<std::string>() != "full_attention")
        s.fail("layer_types", fmt::format("has a {} layer: only full attention on every layer is modelled "
                                          "(linear-attention and sliding-window layers are not)",
                                          bounded_message(e.dump())));
  }
  for (const char* k : {"layers_block_type", "hybrid_override_pattern", "attn_layer_period", "full_attention_interval",
                        "attn_type_list"})
    if (s.has(k)) s.fail(k, "a hybrid layer stack (linear-attention or state-space layers beside attention) is not modelled");
  for (const auto& item : s.j.items())
    if (item.key().rfind("linear_", 0) == 0 && !item.value().is_null())
      s.fail(item.key(), "linear-attention layers are not modelled (every layer runs full softmax attention)");
  // Sliding-window attention (Mistral, Qwen2 with use_sliding_window, Gemma): each query sees the last
  // window keys, not all earlier ones, which the attention kernel's FLOPs and tiles do not express.
  // Llama 4's attention_chunk_size (chunked local attention) likewise.
  if (s.has("sliding_window")) {
    const json& w = s.j.at("sliding_window");
    const auto use = s.j.find("use_sliding_window");
    const bool off = use != s.j.end() && use->is_boolean() && !use->get<bool>();
    if (!off && !(w.is_boolean() && !w.get<bool>()))
      s.fail("sliding_window", fmt::format("{}: sliding-window attention is not modelled (every query attends to all "
                                           "earlier tokens); refused rather than over-counting attention",
                                           bounded_message(w.dump())));
  }
  if (s.has("attention_chunk_size"))
    s.fail("attention_chunk_size", "chunked local attention is not modelled (every query attends to all earlier tokens)");
  // The MLP: a plain two-GEMM MLP run as the gated three-GEMM one would add half its FLOPs and weights.
  std::string act, act_key = "architectures";
  for (const char* k : {"hidden_act", "activation_function", "hidden_activation"})
    if (const auto it = s.j.find(k); it != s.j.end() && it->is_string()) {
      act = it->get<std::string>();
      act_key = k;
      break;
    }
  const bool gelu_like = act.rfind("gelu", 0) == 0 || act.rfind("relu", 0) == 0 || act == "quick_gelu";
  if (plain_mlp(arch) || (gelu_like && !gated_with_gelu(arch)))
    s.fail(act_key,
           fmt::format("{}{}: a plain MLP (up, activation, down) is not modelled; overlap-sim runs a gated FFN "
                       "(gate, up and down projections, as SwiGLU), which would add half the MLP's FLOPs and weights",
                       arch.empty() ? "" : "architecture " + arch + ", ", act.empty() ? "no activation" : "activation " + act));
}

// The object the architecture fields live in: a multimodal checkpoint (Llava, Qwen2-VL, Llama 4,
// Gemma 3) nests its language model's config under text_config. Where the top level repeats one of
// the fields with another value the file is refused (which of the two the model runs is unclear).
std::string architecture_prefix(const json& j, const std::string& file, const std::string& text) {
  const auto tc = j.find("text_config");
  if (tc == j.end() || tc->is_null()) return "";
  if (!tc->is_object())
    throw InputError(file, json_line_of(text, "text_config"), "text_config",
                     fmt::format("must be an object (got {})", bounded_message(tc->dump())));
  for (const char* k : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                        "num_key_value_heads", "num_local_experts", "n_routed_experts", "num_experts"}) {
    const auto top = j.find(k);
    const auto inner = tc->find(k);
    if (top != j.end() && !top->is_null() && inner != tc->end() && !inner->is_null() && *top != *inner)
      throw InputError(file, json_line_of(text, k), k,
                       fmt::format("{}, but text_config.{} says {}: which one the language model has is unclear",
                                   bounded_message(top->dump()), k, bounded_message(inner->dump())));
  }
  return "text_config.";
}

}  // namespace

ModelConfig read_model_config(const std::string& given) {
  // A Hugging Face checkpoint directory (what from_pretrained takes) is read through its config.json.
  std::string path = given;
  std::error_code ec;
  if (fs::is_directory(given, ec)) path = (fs::path(given) / "config.json").string();
  const std::string text = read_input_file(path, "model config");
  const json j = parse_strict_json(text, path, "not a model config.json");
  if (!j.is_object()) throw InputError(path, 0, "", "not a model config.json: the top level must be an object");
  ModelConfig m;
  m.file = path;
  m.name = path == given ? fs::path(path).stem().string() : fs::path(given).lexically_normal().filename().string();
  if (m.name.empty() || m.name == ".") m.name = fs::path(given).lexically_normal().parent_path().filename().string();
  if (const auto a = j.find("architectures"); a != j.end() && a->is_array() && !a->empty() && a->front().is_string())
    m.architecture = a->front().get<std::string>();
  const std::string prefix = architecture_prefix(j, path, text);
  const Source s{prefix.empty() ? j : j.at("text_config"), path, text, prefix};
  m.d_model = required_count(s, "hidden_size", ranges::width);
  m.d_ffn = required_count(s, "intermediate_size", ranges::width);
  m.layers = static_cast<int>(required_count(s, "num_hidden_layers", ranges::layers));
  m.heads = required_count(s, "num_attention_heads", ranges::heads);
  m.kv_heads = optional_count(s, "num_key_value_heads", ranges::heads).value_or(m.heads);
  if (m.heads % m.kv_heads != 0)
    s.fail("num_key_value_heads", fmt::format("{} key-value heads do not divide {} attention heads", m.kv_heads, m.heads));
  refuse_unmodelled(s, m.architecture);
  m.mla = read_mla(s);
  if (!m.mla) {
    // head_dim (Qwen3, Gemma): each head's width when it is not hidden_size / heads (Qwen3-235B-A22B:
    // 64 heads x 128 = 8192 against hidden_size 4096). Kept as 0 when it equals hidden_size / heads,
    // so a config that writes the default (Llama 3.1) models exactly what it did without the key.
    const auto hd = optional_count(s, "head_dim", ranges::width);
    if (hd && !(m.d_model % m.heads == 0 && *hd == m.d_model / m.heads)) m.head_dim = *hd;
    if (m.head_dim == 0 && m.d_model % m.heads != 0)
      s.fail("num_attention_heads",
             fmt::format("hidden_size {} is not a multiple of {} heads (and no head_dim)", m.d_model, m.heads));
  }
  m.moe = read_moe(s, m);
  m.vocab = optional_count(s, "vocab_size", ranges::vocab).value_or(0);
  return m;
}

const std::vector<BuiltinModel>& builtin_models() {
  // The public model cards' config.json, architecture fields only (scenarios/models/README.md).
  static const std::vector<BuiltinModel> models = {
      {"llama3-8b", "llama-3.1-8b"},     {"llama3-70b", "llama-3.1-70b"},   {"llama3.1-8b", "llama-3.1-8b"},
      {"llama3.1-70b", "llama-3.1-70b"}, {"llama3.1-405b", "llama-3.1-405b"}, {"qwen2.5-72b", "qwen2.5-72b"},
      {"mixtral-8x7b", "mixtral-8x7b"},  {"deepseek-v3", "deepseek-v3"},   {"qwen3-235b-a22b", "qwen3-235b-a22b"},
      {"qwen3-30b-a3b", "qwen3-30b-a3b"},
  };
  return models;
}

std::optional<ModelConfig> builtin_model_config(const std::string& name) {
  for (const BuiltinModel& b : builtin_models()) {
    if (b.name != name) continue;
    ModelConfig m = read_model_config((fs::path(source_tree_dir()) / "scenarios" / "models" / (b.file + ".json")).string());
    m.name = name;
    return m;
  }
  return std::nullopt;
}

bool is_model_path(const std::string& ref) {
  return ref.find('/') != std::string::npos || (ref.size() > 5 && ref.compare(ref.size() - 5, 5, ".json") == 0);
}

}  // namespace overlap::sim
