#include "sim/model_config.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cost_model/input_error.hpp"
#include "cost_model/input_file.hpp"
#include "cost_model/input_ranges.hpp"
#include "cost_model/source_paths.hpp"

namespace overlap::sim {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// One positive integer field inside `range`; nullopt when absent.
std::optional<std::int64_t> optional_count(const json& j, const std::string& file, const std::string& key,
                                           const InputRange& range) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer())
    throw InputError(file, 0, key, fmt::format("must be a whole number (got {})", it->dump()));
  const std::int64_t v = it->get<std::int64_t>();
  if (static_cast<double>(v) < range.min || static_cast<double>(v) > range.max)
    throw InputError(file, 0, key, fmt::format("must be in [{}, {}] (got {})", range.min, range.max, v));
  return v;
}

std::int64_t required_count(const json& j, const std::string& file, const std::string& key,
                            const InputRange& range) {
  const auto v = optional_count(j, file, key, range);
  if (!v)
    throw InputError(file, 0, key,
                     "missing: overlap-sim reads hidden_size, intermediate_size, num_hidden_layers and "
                     "num_attention_heads (a decoder-only transformer's config.json)");
  return *v;
}

// The first of `keys` the file has.
std::optional<std::int64_t> first_count(const json& j, const std::string& file, std::initializer_list<const char*> keys,
                                        const InputRange& range, std::string* which = nullptr) {
  for (const char* k : keys) {
    if (auto v = optional_count(j, file, k, range)) {
      if (which) *which = k;
      return v;
    }
  }
  return std::nullopt;
}

constexpr InputRange kExperts{"experts", "", 1, 65536, "experts", "", true};

std::optional<MoeConfig> read_moe(const json& j, const std::string& file, const ModelConfig& m) {
  std::string experts_key;
  const auto experts = first_count(j, file, {"num_local_experts", "n_routed_experts", "num_experts"}, kExperts, &experts_key);
  if (!experts) return std::nullopt;
  MoeConfig moe;
  moe.experts = static_cast<int>(*experts);
  const auto top_k = optional_count(j, file, "num_experts_per_tok", kExperts);
  if (!top_k) throw InputError(file, 0, "num_experts_per_tok", "missing: a mixture of experts (" + experts_key + ") needs it");
  if (*top_k > *experts)
    throw InputError(file, 0, "num_experts_per_tok",
                     fmt::format("{} experts per token, but only {} experts ({})", *top_k, *experts, experts_key));
  moe.top_k = static_cast<int>(*top_k);
  moe.expert_ffn = optional_count(j, file, "moe_intermediate_size", ranges::width).value_or(m.d_ffn);
  moe.shared_experts = static_cast<int>(optional_count(j, file, "n_shared_experts", kExperts).value_or(0));
  const auto dense = optional_count(j, file, "first_k_dense_replace", ranges::layers);
  if (dense && *dense > m.layers)
    throw InputError(file, 0, "first_k_dense_replace",
                     fmt::format("{} dense layers, but the model has {} (num_hidden_layers)", *dense, m.layers));
  moe.first_dense_layers = static_cast<int>(dense.value_or(0));
  // Qwen2-MoE / Qwen3-MoE (Qwen3MoeDecoderLayer): layer i is MoE when i is not in mlp_only_layers and
  // (i + 1) % decoder_sparse_step == 0. The transformer expresses only "the first dense_layers dense,
  // the rest MoE", so a step of 1 and mlp_only_layers = [0, 1, ..., k-1] (a prefix) are read (the
  // prefix as first_dense_layers); anything else is refused rather than run as another model.
  if (const auto step = optional_count(j, file, "decoder_sparse_step", ranges::layers); step && *step != 1)
    throw InputError(file, 0, "decoder_sparse_step",
                     fmt::format("{}: a MoE layer every {} layers is not modelled (the transformer runs its first "
                                 "dense_layers dense and every later layer MoE; only 1 is read)",
                                 *step, *step));
  if (const auto it = j.find("mlp_only_layers"); it != j.end() && !it->is_null()) {
    if (!it->is_array())
      throw InputError(file, 0, "mlp_only_layers", fmt::format("must be a list of layer indices (got {})", it->dump()));
    std::vector<std::int64_t> dense_ids;
    for (const json& e : *it) {
      if (!e.is_number_integer() || e.get<std::int64_t>() < 0 || e.get<std::int64_t>() >= m.layers)
        throw InputError(file, 0, "mlp_only_layers",
                         fmt::format("{} is not a layer index in [0, {}) (num_hidden_layers)", e.dump(), m.layers));
      dense_ids.push_back(e.get<std::int64_t>());
    }
    std::sort(dense_ids.begin(), dense_ids.end());
    dense_ids.erase(std::unique(dense_ids.begin(), dense_ids.end()), dense_ids.end());
    for (std::size_t i = 0; i < dense_ids.size(); ++i)
      if (dense_ids[i] != static_cast<std::int64_t>(i))
        throw InputError(file, 0, "mlp_only_layers",
                         fmt::format("{}: only dense layers 0, 1, ..., k-1 (a prefix) are modelled; layer {} is "
                                     "dense but layer {} is not",
                                     it->dump(), dense_ids[i], i));
    if (!dense_ids.empty()) {
      if (dense && *dense != static_cast<std::int64_t>(dense_ids.size()))
        throw InputError(file, 0, "mlp_only_layers",
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
std::optional<LatentAttention> read_mla(const json& j, const std::string& file) {
  const auto kv_lora = optional_count(j, file, "kv_lora_rank", ranges::width);
  if (!kv_lora) return std::nullopt;
  LatentAttention a;
  a.kv_lora = *kv_lora;
  a.q_lora = optional_count(j, file, "q_lora_rank", ranges::width).value_or(0);
  auto head_width = [&](const char* key) {
    const auto v = optional_count(j, file, key, ranges::width);
    if (!v)
      throw InputError(file, 0, key,
                       "missing: a multi-head latent attention config (kv_lora_rank) needs qk_nope_head_dim, "
                       "qk_rope_head_dim and v_head_dim");
    return *v;
  };
  a.qk_nope = head_width("qk_nope_head_dim");
  a.qk_rope = head_width("qk_rope_head_dim");
  a.v_head = head_width("v_head_dim");
  return a;
}

}  // namespace

ModelConfig read_model_config(const std::string& path) {
  const std::string text = read_input_file(path, "model config");
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(path, 0, "", fmt::format("not a model config.json: {}", e.what()));
  }
  if (!j.is_object()) throw InputError(path, 0, "", "not a model config.json: the top level must be an object");
  ModelConfig m;
  m.file = path;
  m.name = fs::path(path).stem().string();
  if (const auto a = j.find("architectures"); a != j.end() && a->is_array() && !a->empty() && a->front().is_string())
    m.architecture = a->front().get<std::string>();
  m.d_model = required_count(j, path, "hidden_size", ranges::width);
  m.d_ffn = required_count(j, path, "intermediate_size", ranges::width);
  m.layers = static_cast<int>(required_count(j, path, "num_hidden_layers", ranges::layers));
  m.heads = required_count(j, path, "num_attention_heads", ranges::heads);
  m.kv_heads = optional_count(j, path, "num_key_value_heads", ranges::heads).value_or(m.heads);
  if (m.heads % m.kv_heads != 0)
    throw InputError(path, 0, "num_key_value_heads",
                     fmt::format("{} key-value heads do not divide {} attention heads", m.kv_heads, m.heads));
  m.mla = read_mla(j, path);
  if (!m.mla) {
    // head_dim (Qwen3, Gemma): each head's width when it is not hidden_size / heads (Qwen3-235B-A22B:
    // 64 heads x 128 = 8192 against hidden_size 4096). Kept as 0 when it equals hidden_size / heads,
    // so a config that writes the default (Llama 3.1) models exactly what it did without the key.
    const auto hd = optional_count(j, path, "head_dim", ranges::width);
    if (hd && !(m.d_model % m.heads == 0 && *hd == m.d_model / m.heads)) m.head_dim = *hd;
    if (m.head_dim == 0 && m.d_model % m.heads != 0)
      throw InputError(path, 0, "num_attention_heads",
                       fmt::format("hidden_size {} is not a multiple of {} heads (and no head_dim)", m.d_model, m.heads));
  }
  m.moe = read_moe(j, path, m);
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
