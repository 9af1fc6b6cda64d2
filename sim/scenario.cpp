#include "sim/scenario.hpp"

#include <cmath>
#include <filesystem>
#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "cost_model/deepep.hpp"
#include "cost_model/hierarchical_all_to_all.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/input_file.hpp"
#include "cost_model/overrides.hpp"
#include "cost_model/profile_loader.hpp"
#include "cost_model/source_paths.hpp"
#include "cost_model/yaml_reader.hpp"
#include "sim/layer_composition.hpp"
#include "sim/model_config.hpp"
#include "sim/pipeline_layers.hpp"
#include "sim/schemes/moe.hpp"
#include "sim/workload_key_table.hpp"
#include "sim/workload_keys.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

namespace fs = std::filesystem;

namespace {

namespace key = workload_key;
namespace rule = workload_key::rule;

const std::vector<std::string> kTopLevelKeys = {"name",     "description", "hardware", "workload",
                                                "schemes",  "fidelity",    "sweep"};

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string dir_of(const std::string& file) {
  if (file.empty()) return ".";
  const std::string d = fs::path(file).parent_path().string();
  return d.empty() ? "." : d;
}

// A profile path written in a scenario is relative to the scenario's folder.
std::string resolve_profile_ref(const std::string& ref, const std::string& scenario_file) {
  if (!looks_like_path(ref) || fs::path(ref).is_absolute() || scenario_file.empty()) return ref;
  return (fs::path(dir_of(scenario_file)) / ref).lexically_normal().string();
}

bool any_set_under(const std::vector<std::string>& sets, const std::string& prefix) {
  for (const auto& s : sets) {
    if (s.rfind(prefix + ".", 0) == 0) return true;
  }
  return false;
}

// A key's value read by its row of the key table (sim/workload_key_table.hpp): inside the row's range,
// required where no default is passed.
std::int64_t int_in(const YamlReader& w, const key::Key& k) { return w.get_int_in(std::string(k.leaf()), *k.range); }
// ... or the row's default (for a workload of `kind`) when the key is absent.
std::int64_t int_or_default(const YamlReader& w, const key::Key& k, WorkloadKind kind = WorkloadKind::gemm_collective) {
  return w.get_int_in(std::string(k.leaf()), *k.range, key::default_int(k, kind));
}
double number_in(const YamlReader& w, const key::Key& k) { return w.get_double_in(std::string(k.leaf()), *k.range); }
double number_or_default(const YamlReader& w, const key::Key& k) {
  return w.get_double_in(std::string(k.leaf()), *k.range, key::default_number(k));
}
bool bool_or_default(const YamlReader& w, const key::Key& k) {
  return w.get_bool(std::string(k.leaf()), key::default_bool(k));
}

// A choice key's default as the loader's type: the table's text through the key's own parser; a
// default the parser does not know is the table's mistake.
template <typename E, typename Text>
E default_choice(const key::Key& k, std::optional<E> (*parse)(Text), WorkloadKind kind = WorkloadKind::gemm_collective) {
  const std::optional<E> v = parse(std::string(k.default_for(kind)));
  if (!v) throw std::logic_error(fmt::format("sim/workload_key_table.hpp: workload.{}'s default is not one of its choices",
                                             k.name));
  return *v;
}

DType read_dtype(const YamlReader& w, const key::Key& k, WorkloadKind kind = WorkloadKind::gemm_collective) {
  const auto c = w.optional_child(std::string(k.leaf()));
  if (!c) return default_choice(k, parse_dtype, kind);
  const auto d = parse_dtype(c->as_string());
  if (!d) c->fail(fmt::format("must be one of {} (got {})", k.choices, c->as_string()));
  return *d;
}

Primitive read_primitive(const YamlReader& w) {
  const YamlReader c = w.child(std::string(key::primitive.name));
  const std::string s = c.as_string();
  for (Primitive p : {Primitive::all_reduce, Primitive::reduce_scatter, Primitive::all_gather,
                      Primitive::all_to_all}) {
    if (s == primitive_name(p)) return p;
  }
  c.fail(fmt::format("must be one of {} (got {})", key::primitive.choices, s));
}

// A size that a named model may supply: the file's value wins, else the model's, else it is missing.
std::int64_t size_field(const YamlReader& w, const key::Key& k, std::optional<std::int64_t> from_model) {
  if (w.has(std::string(k.name)) || !from_model) return int_in(w, k);
  return *from_model;
}

// kv_heads: 0 (or absent) means "as many as heads" (no GQA).
std::int64_t kv_heads_field(const YamlReader& w, std::optional<std::int64_t> from_model) {
  if (w.has("kv_heads")) {
    const YamlReader c = w.child("kv_heads");
    if (c.is_scalar() && c.node().Scalar() == "0") return 0;
    return c.as_int_in(*key::kv_heads.range);
  }
  return from_model.value_or(0);
}

// head_dim: each head's width; absent (or the model's 0) means d_model / heads. A model config's
// head_dim (Qwen3-MoE) is kept unless the scenario gives its own.
std::int64_t head_dim_field(const YamlReader& w, std::optional<std::int64_t> from_model) {
  if (w.has("head_dim")) return int_in(w, key::head_dim);
  return from_model.value_or(0);
}

// batch x seq tokens, refused beyond the token range before it is multiplied (batch: 1e18 would
// overflow int64).
std::int64_t tokens_of(const YamlReader& w) {
  const std::int64_t batch = int_in(w, key::batch);
  const std::int64_t seq = int_in(w, key::seq);
  const std::int64_t tokens = batch * seq;  // both bounded: at most 2^44
  if (const auto why = range_violation(*key::tokens.range, static_cast<double>(tokens)))
    w.fail_at(std::string(key::seq.name), fmt::format("batch x seq = {} x {} = {} tokens: {}", batch, seq, tokens, *why));
  return tokens;
}

// A cross-key rule of the table (sim/workload_key_table.hpp), refused in its words at its key (or at
// `at`, the key given where the rule's key was not); `name_value`: say what the value is (its rule's
// value_name), false where the key named is the value's own.
void require(const YamlReader& w, const key::DivisibilityRule& r, std::int64_t value, std::int64_t divisor,
             std::string_view at = {}, bool name_value = true) {
  if (r.holds(value, divisor)) return;
  const std::string value_name = name_value ? std::string(r.value_name) : "";
  w.fail_at(std::string(at.empty() ? r.key : at),
            fmt::format("{}{} is not divisible by {} = {} ({})", value_name.empty() ? "" : value_name + " = ", value,
                        r.divisor, divisor, r.why));
}
void require(const YamlReader& w, const key::AtMostRule& r, std::int64_t value, std::int64_t bound,
             std::string_view at = {}) {
  if (r.holds(value, bound)) return;
  w.fail_at(std::string(at.empty() ? r.key : at),
            fmt::format("{} = {} is more than {} = {}{}", r.key, value, r.bound, bound,
                        r.why.empty() ? "" : fmt::format(" ({})", r.why)));
}

// `workload.model`: a built-in name, "custom" (every size written in the file), or a config.json path
// (relative to the scenario's folder).
std::optional<Transformer> read_model(const YamlReader& w, WorkloadKind kind) {
  const ModelUse use = workload_kind_keys(kind).model;
  const auto c = w.optional_child("model");
  if (!c) return std::nullopt;
  const std::string ref = c->as_string();
  if (ref == "custom") return std::nullopt;
  std::optional<ModelConfig> config;
  try {
    if (is_model_path(ref)) {
      const bool relative = fs::path(ref).is_relative() && !c->file().empty() && c->file().rfind("--set ", 0) != 0;
      config = read_model_config(relative ? (fs::path(dir_of(c->file())) / ref).lexically_normal().string() : ref);
      config->name = ref;
    } else {
      config = builtin_model_config(ref);
    }
  } catch (const InputError& e) {
    c->fail(std::string("model config: ") + e.what());
  }
  if (!config) {
    std::vector<std::string> known;
    for (const BuiltinModel& m : builtin_models()) known.push_back(m.name);
    std::error_code ec;
    if (!ref.empty() && fs::is_directory(ref, ec))
      c->fail(fmt::format("'{}' is a built-in model name that does not exist, and a directory: to read that checkpoint's "
                          "config.json write it as a path ('./{}')", ref, ref));
    c->fail("unknown model '" + ref + "' (known: " + join(known) +
            ", custom, a path to a config.json, or a checkpoint directory holding one)");
  }
  if (use.ffn && config->moe && !use.moe)
    c->fail(fmt::format("model '{}' is a mixture of experts ({} experts, top {}): its expert layers are not "
                        "modelled yet; attention_tpsp and attention_ulysses run its attention",
                        config->name, config->moe->experts, config->moe->top_k));
  if (use.attention && config->mla && !(use.mla && config->moe))
    c->fail(fmt::format("model '{}' uses multi-head latent attention (kv_lora_rank), which only a mixture-of-experts "
                        "transformer models (kind transformer); {} builds grouped-query attention",
                        config->name, use.mla ? "a dense transformer" : "this kind"));
  if (use.attention && config->head_dim > 0 && !use.head_dim)
    c->fail(fmt::format("model '{}' has head_dim {} (hidden_size / num_attention_heads = {} / {}): this kind takes "
                        "head_dim = d_model / heads; attention_tpsp and transformer model the wider heads",
                        config->name, config->head_dim, config->d_model, config->heads));
  Transformer t;
  t.model = config->name;
  t.layers = config->layers;
  t.d_model = config->d_model;
  t.d_ffn = config->d_ffn;
  t.heads = config->heads;
  t.kv_heads = config->kv_heads;
  t.vocab = config->vocab;
  t.head_dim = config->head_dim;
  t.vocab = config->vocab;
  if (use.moe && config->moe) {
    Moe m;
    m.experts = config->moe->experts;
    m.top_k = config->moe->top_k;
    m.d_ffn_expert = config->moe->expert_ffn;
    m.shared_experts = config->moe->shared_experts;
    t.moe = m;
    t.dense_layers = config->moe->first_dense_layers;
    t.mla = config->mla;
  }
  return t;
}

template <typename T>
std::optional<std::int64_t> from(const std::optional<Transformer>& m, T Transformer::*field) {
  if (!m) return std::nullopt;
  return static_cast<std::int64_t>((*m).*field);
}

// Attention-shaped checks shared by attention_tpsp and transformer (and the head split of the
// others): heads divide the width (unless head_dim gives the heads' width), kv_heads divide heads,
// TP shards heads, SP shards tokens.
void check_heads(const YamlReader& w, std::int64_t d_model, std::int64_t heads, std::int64_t kv_heads, int tp,
                 std::int64_t head_dim = 0) {
  if (head_dim == 0) require(w, rule::width_by_heads, d_model, heads);
  require(w, rule::heads_by_kv_heads, heads, kv_heads);
  require(w, rule::heads_by_tp, heads, tp);
  // Key-value heads are split across TP ranks (kv_heads a multiple of tp) or, with fewer of them than
  // ranks, replicated (Megatron-LM: tp a multiple of kv_heads, each rank one kv head). A split such as
  // 6 kv heads on 4 ranks (1.5 per rank) is neither; it is refused rather than rounded.
  const std::int64_t kv = kv_heads > 0 ? kv_heads : heads;
  if (kv % tp != 0 && tp % kv != 0)
    w.fail_at(w.has("kv_heads") ? "kv_heads" : "tp",
              fmt::format("kv_heads = {} on tp = {} ranks: key-value heads must be a multiple of tp (split) or divide "
                          "it (replicated); {} per rank is not modelled",
                          kv, tp, static_cast<double>(kv) / tp));
}

// A choice key: its row's default when absent, else one of its row's choices.
template <typename E, typename Text>
E read_choice(const YamlReader& w, const key::Key& k, std::optional<E> (*parse)(Text)) {
  const std::string name(k.leaf());
  if (!w.has(name)) return default_choice(k, parse);
  const YamlReader node = w.child(name);
  const std::string text = node.as_string();
  const std::optional<E> v = parse(text);
  if (!v) node.fail(fmt::format("unknown {} '{}' (known: {})", name, text, k.choices));
  return *v;
}


// workload.parallel (docs/reference/scenario.md "Training steps"): data-parallel replicas and their
// sharding. Every key given must matter: a sharding or bucket with dp = 1, a bucket for ZeRO-3 (which
// reduces per layer) or a prefetch without ZeRO-3 is refused rather than ignored.
DataParallel read_parallel(const YamlReader& p, int tp, int max_ranks) {
  p.expect_map();
  p.allow_keys(parallel_keys());
  DataParallel d;
  d.dp = static_cast<int>(int_or_default(p, key::dp));
  d.fsdp = read_choice(p, key::fsdp, parse_sharding);
  d.bucket_mb = number_or_default(p, key::bucket_mb);
  d.prefetch = static_cast<int>(int_or_default(p, key::prefetch));
  d.grad_dtype = read_dtype(p, key::grad_dtype);
  if (static_cast<std::int64_t>(d.dp) * tp > max_ranks)
    p.fail_at("dp", fmt::format("dp x tp = {} x {} = {} GPUs, but the hardware has {}", d.dp, tp,
                                static_cast<std::int64_t>(d.dp) * tp, max_ranks));
  if (d.dp == 1)
    for (const char* key : {"fsdp", "bucket_mb", "prefetch", "grad_dtype"})
      if (p.has(key)) p.fail_at(key, "has no effect with dp = 1 (one replica: no data-parallel traffic)");
  if (d.fsdp == Sharding::zero3 && p.has("bucket_mb"))
    p.fail_at("bucket_mb", "ZeRO-3 (FSDP) reduces each layer's gradients on their own: no bucket to size");
  if (d.fsdp != Sharding::zero3 && p.has("prefetch"))
    p.fail_at("prefetch", fmt::format("prefetches FSDP's (zero3) per-layer parameter gathers; fsdp is {}", sharding_name(d.fsdp)));
  return d;
}

// workload.parallel's pipeline and context parallelism (docs/guide/pipeline.md; sim/workload.hpp
// JobParallel), read once the shape is known: pp and vpp must cut the layers evenly, 1F1B and interleaved
// need a micro-batch per stage in flight, load-balanced causal CP cuts the sequence into 2 cp chunks.
// A key that would change nothing (vpp or schedule without pp, cp_algorithm without cp) is refused.
JobParallel read_job(const YamlReader& p, const Workload& w, int max_ranks) {
  JobParallel j;
  j.pp = static_cast<int>(int_or_default(p, key::pp));
  j.vpp = static_cast<int>(int_or_default(p, key::vpp));
  j.micro_batches = static_cast<int>(int_or_default(p, key::micro_batches));
  j.cp = static_cast<int>(int_or_default(p, key::cp));
  if (p.has("first_stage_layers")) j.first_stage_layers = static_cast<int>(int_in(p, key::first_stage_layers));
  if (p.has("last_stage_layers")) j.last_stage_layers = static_cast<int>(int_in(p, key::last_stage_layers));
  if (p.has("schedule")) {
    const YamlReader node = p.child("schedule");
    const std::string text = node.as_string();
    try {
      j.schedule = pipeline_schedule_from_name(text);
    } catch (const std::invalid_argument& e) {
      node.fail(e.what());
    }
  } else if (p.has("vpp") && j.vpp > 1) {
    j.schedule = PipelineSchedule::interleaved;  // Megatron-LM: a virtual pipeline size means interleaving
  }
  j.cp_algorithm = read_choice(p, key::cp_algorithm, parse_context_parallel);
  const bool any = std::any_of(key::kJob.begin(), key::kJob.end(), [&](const key::Key* k) { return p.has(std::string(k->leaf())); });
  if (!any) return j;
  const auto* t = std::get_if<Transformer>(&w.shape);
  for (const key::Key* job_key : key::kJob) {
    const std::string name(job_key->leaf());
    if (!p.has(name)) continue;
    const bool context = name.rfind("cp", 0) == 0;
    if (t == nullptr && context && (w.kind == WorkloadKind::mlp_tpsp || w.kind == WorkloadKind::gemm_collective))
      p.fail_at(name, fmt::format("context parallelism splits attention's sequence; a {} workload has no attention", workload_kind_name(w.kind)));
    if (t == nullptr)
      p.fail_at(name, fmt::format("pipeline and context parallelism are modelled for a transformer's training step; "
                                 "this is a {} workload (attention_ulysses is the all-to-all form of sequence parallelism)",
                                 workload_kind_name(w.kind)));
    if (t->moe || t->mla)
      p.fail_at(name, "pipeline and context parallelism are modelled for dense transformers; a mixture-of-experts "
                     "model's stages are not");
    if (w.training.pass != Pass::step)
      p.fail_at(name, fmt::format("a pipeline schedule runs forwards and backwards: give workload.pass step (it is {})",
                                 pass_name(w.training.pass)));
  }
  if (p.has("vpp") && j.pp == 1) p.fail_at("vpp", "model chunks per stage need pipeline stages: give pp >= 2");
  if (p.has("schedule") && j.pp == 1) p.fail_at("schedule", "a pipeline schedule needs pipeline stages: give pp >= 2");
  if (j.schedule == PipelineSchedule::interleaved && j.vpp < 2)
    p.fail_at(p.has("vpp") ? "vpp" : "schedule", "the interleaved schedule runs vpp >= 2 model chunks per stage (vpp = 1 is 1f1b)");
  if (j.vpp > 1 && j.schedule != PipelineSchedule::interleaved)
    p.fail_at("vpp", fmt::format("vpp = {} model chunks per stage is the interleaved schedule's; schedule is {}", j.vpp,
                                 pipeline_schedule_name(j.schedule)));
  if (j.first_stage_layers == 0 && j.last_stage_layers == 0) {
    require(p, rule::layers_by_pp, t->layers, j.pp);
    require(p, rule::stage_layers_by_vpp, t->layers / j.pp, j.vpp);
  } else if (const std::optional<StageLayersProblem> bad = stage_layers_problem(
                 StageLayersRule{t->layers, j.pp, j.vpp, j.first_stage_layers, j.last_stage_layers})) {
    p.fail_at(p.has(bad->key) ? bad->key : (p.has("first_stage_layers") ? "first_stage_layers" : "last_stage_layers"),
              bad->message);
  }
  if (j.schedule == PipelineSchedule::dualpipe && j.pp % 2 != 0)
    p.fail_at("pp", fmt::format("pp = {} is odd: the dualpipe schedule pairs stage s with stage pp - 1 - s "
                                "(DeepSeek-V3 Sec. 3.2.1)", j.pp));
  if (j.schedule == PipelineSchedule::dualpipe && (j.micro_batches % 2 != 0 || j.micro_batches < 2 * j.pp))
    p.fail_at(p.has("micro_batches") ? "micro_batches" : "pp",
              fmt::format("micro_batches = {}: the dualpipe schedule needs an even number, at least 2 pp = {} (half "
                          "enter at each end; deepseek-ai/DualPipe's step() asserts the same)",
                          j.micro_batches, 2 * j.pp));
  if ((j.schedule == PipelineSchedule::one_f_one_b || j.schedule == PipelineSchedule::interleaved) && j.pp > 1 &&
      j.micro_batches < j.pp)
    p.fail_at(p.has("micro_batches") ? "micro_batches" : "pp",
              fmt::format("micro_batches = {} is fewer than pp = {}: {} keeps a micro-batch in flight on every stage",
                          j.micro_batches, j.pp, pipeline_schedule_name(j.schedule)));
  if (j.schedule == PipelineSchedule::interleaved)
    require(p, rule::micro_batches_by_pp, j.micro_batches, j.pp, p.has("micro_batches") ? "micro_batches" : "pp");
  if (p.has("cp_algorithm") && j.cp == 1) p.fail_at("cp_algorithm", "has no effect with cp = 1 (no context parallelism)");
  if (j.cp > 1) {
    require(p, rule::seq_by_2cp, t->seq, 2 * j.cp);
    require(p, rule::cp_tokens_by_tp, t->batch * (t->seq / j.cp), w.tp);
  }
  if (j.pp > 1 && w.training.parallel.dp > 1 && w.training.parallel.fsdp == Sharding::zero3)
    p.fail_at("fsdp", "ZeRO-3 (FSDP) with pipeline parallelism gathers parameters for every micro-batch; use zero1 or zero2");
  const std::int64_t gpus = std::int64_t{w.tp} * j.cp * j.pp * std::max(1, w.training.parallel.dp);
  if (gpus > max_ranks)
    p.fail_at(j.pp > 1 ? "pp" : "cp", fmt::format("tp x cp x pp x dp = {} x {} x {} x {} = {} GPUs, but the hardware has {}",
                                                  w.tp, j.cp, j.pp, std::max(1, w.training.parallel.dp), gpus, max_ranks));
  return j;
}

// workload.pass, .recompute and .parallel (sim/workload.hpp Training).
Training read_training(const YamlReader& w, WorkloadKind kind, int tp, int max_ranks) {
  Training t;
  t.pass = read_choice(w, key::pass, parse_pass);
  t.recompute = read_choice(w, key::recompute, parse_recompute);
  if (const auto p = w.optional_child("parallel")) t.parallel = read_parallel(*p, tp, max_ranks);
  if (kind == WorkloadKind::moe) {
    // The backward (docs/guide/moe.md "Training step") is built without recomputation or data parallelism.
    if (w.has("parallel")) w.fail_at("parallel", "moe has no data-parallel traffic yet (the EP group is `ep`)");
    if (w.has("recompute"))
      w.fail_at("recompute", "moe's backward keeps the forward's activations: recomputation is not modelled");
  }
  if (kind == WorkloadKind::decode_stack) {
    if (t.pass != Pass::forward) w.fail_at("pass", "decode_stack is batch-1 inference: it has no backward (pass: forward)");
    if (w.has("parallel")) w.fail_at("parallel", "decode_stack is batch-1 inference: no data-parallel gradients");
  }
  if (t.recompute != Recompute::none && t.pass == Pass::forward)
    w.fail_at("recompute", "recomputation runs inside the backward: give pass: backward or step");
  return t;
}

GemmCollective read_gemm_collective(const YamlReader& w, int tp) {
  w.allow_keys(workload_keys(WorkloadKind::gemm_collective));
  GemmCollective g;
  g.m = int_in(w, key::m);
  g.n = int_in(w, key::n);
  g.k = int_in(w, key::k);
  g.dtype = read_dtype(w, key::dtype);
  g.primitive = read_primitive(w);
  g.rmsnorm_after = bool_or_default(w, key::rmsnorm_after);
  // Reduce-scatter and all-to-all hand each rank M / tp rows of the output.
  if (g.primitive == Primitive::reduce_scatter || g.primitive == Primitive::all_to_all)
    require(w, rule::gemm_rows_by_tp, g.m, tp);
  return g;
}

MlpTpSp read_mlp_tpsp(const YamlReader& w, int tp) {
  w.allow_keys(workload_keys(WorkloadKind::mlp_tpsp));
  const auto model = read_model(w, WorkloadKind::mlp_tpsp);
  MlpTpSp m;
  if (w.has("tokens")) {
    if (w.has("batch") || w.has("seq")) w.fail_at("tokens", "give either tokens or batch and seq, not both");
    m.tokens = int_in(w, key::tokens);
  } else if (w.has("batch") || w.has("seq")) {
    m.tokens = tokens_of(w);
  } else {
    m.tokens = int_in(w, key::tokens);  // throws: missing required field
  }
  m.d_model = size_field(w, key::d_model, from(model, &Transformer::d_model));
  m.d_ffn = size_field(w, key::d_ffn, from(model, &Transformer::d_ffn));
  m.gated = bool_or_default(w, key::gated);
  m.gather_input = bool_or_default(w, key::gather_input);
  m.dtype = read_dtype(w, key::dtype);
  const std::string tokens_key = w.has("tokens") ? "tokens" : "seq";
  require(w, rule::tokens_by_tp, m.tokens, tp, tokens_key);
  require(w, rule::ffn_by_tp, m.d_ffn, tp);
  return m;
}

AttentionTpSp read_attention_tpsp(const YamlReader& w, int tp) {
  w.allow_keys(workload_keys(WorkloadKind::attention_tpsp));
  const auto model = read_model(w, WorkloadKind::attention_tpsp);
  AttentionTpSp a;
  a.gather_input = bool_or_default(w, key::gather_input);
  (void)tokens_of(w);
  a.batch = int_in(w, key::batch);
  a.seq = int_in(w, key::seq);
  a.d_model = size_field(w, key::d_model, from(model, &Transformer::d_model));
  a.heads = size_field(w, key::heads, from(model, &Transformer::heads));
  a.kv_heads = kv_heads_field(w, from(model, &Transformer::kv_heads));
  a.head_dim = head_dim_field(w, from(model, &Transformer::head_dim));
  a.causal = bool_or_default(w, key::causal);
  a.dtype = read_dtype(w, key::dtype);
  check_heads(w, a.d_model, a.heads, a.kv_heads, tp, a.head_dim);
  require(w, rule::batch_seq_by_tp, a.batch * a.seq, tp);
  return a;
}

AttentionUlysses read_attention_ulysses(const YamlReader& w, int tp) {
  w.allow_keys(workload_keys(WorkloadKind::attention_ulysses));
  const auto model = read_model(w, WorkloadKind::attention_ulysses);
  AttentionUlysses a;
  (void)tokens_of(w);
  a.batch = int_in(w, key::batch);
  a.seq = int_in(w, key::seq);
  a.d_model = size_field(w, key::d_model, from(model, &Transformer::d_model));
  a.heads = size_field(w, key::heads, from(model, &Transformer::heads));
  a.causal = bool_or_default(w, key::causal);
  a.dtype = read_dtype(w, key::dtype);
  check_heads(w, a.d_model, a.heads, 0, tp);
  require(w, rule::ulysses_seq_by_tp, a.seq, tp);
  return a;
}

DecodeStack read_decode_stack(const YamlReader& w, int tp) {
  w.allow_keys(workload_keys(WorkloadKind::decode_stack));
  const auto model = read_model(w, WorkloadKind::decode_stack);
  DecodeStack d;
  d.layers = static_cast<int>(size_field(w, key::layers, from(model, &Transformer::layers)));
  d.d_model = size_field(w, key::d_model, from(model, &Transformer::d_model));
  d.d_ffn = size_field(w, key::d_ffn, from(model, &Transformer::d_ffn));
  d.heads = size_field(w, key::heads, from(model, &Transformer::heads));
  d.kv_heads = kv_heads_field(w, from(model, &Transformer::kv_heads));
  d.dtype = read_dtype(w, key::dtype, WorkloadKind::decode_stack);
  d.allreduce_us = w.has("allreduce_us") ? number_in(w, key::allreduce_us) : -1.0;
  if (d.allreduce_us == 0) w.fail_at("allreduce_us", "must be a positive number (got 0)");
  check_heads(w, d.d_model, d.heads, d.kv_heads, tp);
  require(w, rule::ffn_by_tp, d.d_ffn, tp);
  return d;
}

// workload.all_to_all and .max_nodes of a MoE block (docs/guide/moe.md "Dispatch across nodes"): the
// checks that need no hardware; check_moe_all_to_all does the rest once the profile is known.
void read_moe_all_to_all(const YamlReader& w, Moe& m) {
  m.all_to_all = read_choice(w, key::all_to_all, parse_moe_all_to_all);
  if (w.has("max_nodes")) {
    m.max_nodes = static_cast<int>(int_in(w, key::max_nodes));
    if (m.all_to_all != MoeAllToAll::deepep)
      w.fail_at("max_nodes", fmt::format("is the node-limited routing DeepEP's normal kernels deduplicate by "
                                         "(all_to_all: deepep); all_to_all is {}",
                                         moe_all_to_all_name(m.all_to_all)));
  }
  if (m.all_to_all != MoeAllToAll::nccl && m.expert_tp > 1)
    w.fail_at("all_to_all", fmt::format("{} with expert_tp = {} is not modelled: the EP group's GPUs are strided "
                                        "over the ETP groups; use nccl",
                                        moe_all_to_all_name(m.all_to_all), m.expert_tp));
}

// workload.all_to_all against the profile: DeepEP sends to whole nodes of the EP group (the group's GPUs
// node by node, as the ranks sit on the fabric), its max_nodes within them; the hierarchical all-to-all
// needs two or more nodes.
void check_moe_all_to_all(const YamlReader& w, const Workload& workload, const HardwareProfile& hw) {
  const Moe* m = std::get_if<Moe>(&workload.shape);
  if (const auto* t = std::get_if<Transformer>(&workload.shape); t && t->moe) m = &*t->moe;
  if (m == nullptr || m->all_to_all == MoeAllToAll::nccl) return;
  const FabricSpec& f = hw.fabric;
  const int per_node = f.topology == "multi_node" && f.gpus_per_node > 0 ? f.gpus_per_node : f.num_gpus;
  const int in_node = std::min(m->ep, per_node);
  const char* name = moe_all_to_all_name(m->all_to_all);
  if (m->ep % in_node != 0)
    w.fail_at("all_to_all", fmt::format("{} sends to whole nodes: ep = {} is not a whole number of nodes of {} GPUs",
                                        name, m->ep, per_node));
  try {
    if (m->all_to_all == MoeAllToAll::hierarchical) {
      if (m->ep / in_node < 2)
        w.fail_at("all_to_all", fmt::format("hierarchical gathers a node's tokens for other nodes: ep = {} fits in one "
                                            "node of {} GPUs (use nccl or deepep)",
                                            m->ep, per_node));
      (void)hierarchical_rates(hw);
      return;
    }
    (void)deepep_rates(hw);
  } catch (const std::invalid_argument& e) {
    w.fail_at("all_to_all", e.what());
  }
  try {
    check_deepep_layout(DeepEpLayout{m->ep, in_node, m->experts, m->top_k, m->max_nodes});
  } catch (const std::invalid_argument& e) {
    w.fail_at(w.has("max_nodes") ? "max_nodes" : "all_to_all", e.what());
  }
}

// workload.routing, .seed and .capacity_factor of a MoE block (kind moe, a MoE transformer) into m.
void read_moe_routing(const YamlReader& w, Moe& m) {
  m.file = w.file();
  m.line = w.line();
  if (w.has("capacity_factor")) {
    const double c = number_in(w, key::capacity_factor);
    if (!(c > 0)) w.fail_at("capacity_factor", fmt::format("must be > 0 (got {}); leave it out for dropless routing", c));
    m.capacity_factor = c;
  }
  const std::uint64_t seed = static_cast<std::uint64_t>(int_or_default(w, key::seed));
  if (const auto r = w.optional_child("routing")) {
    // `routing: "zipf: 1.2"` (text) or `routing: {zipf: 1.2}` (a one-key map, what YAML makes of it
    // unquoted in flow style).
    std::string text;
    if (r->is_map()) {
      if (r->node().size() != 1) r->fail("expected uniform, {zipf: S} or {histogram: FILE}");
      const auto kv = *r->node().begin();
      if (!kv.first.IsScalar() || !kv.second.IsScalar()) r->fail("expected uniform, {zipf: S} or {histogram: FILE}");
      text = kv.first.Scalar() + ": " + kv.second.Scalar();
    } else {
      text = r->as_string();
    }
    m.routing = parse_moe_routing(text, r->file(), r->line(), "workload.routing");
    // A histogram file is read from the scenario's folder (as a profile path is).
    if (m.routing.kind == MoeRoutingSpec::Kind::histogram && fs::path(m.routing.histogram_file).is_relative() &&
        !r->file().empty() && r->file().rfind("--set ", 0) != 0)
      m.routing.histogram_file = (fs::path(dir_of(r->file())) / m.routing.histogram_file).lexically_normal().string();
    m.line = r->line();
  }
  m.routing.seed = seed;
  if (w.has("seed") && m.routing.kind != MoeRoutingSpec::Kind::zipf)
    w.fail_at("seed", "only zipf routing draws which experts are popular; uniform and histogram take no seed");
  read_moe_all_to_all(w, m);
}

// workload kind moe (sim/workload.hpp Moe; docs/guide/moe.md).
Moe read_moe(const YamlReader& w, int max_ranks) {
  w.allow_keys(workload_keys(WorkloadKind::moe));
  if (w.has("tp") && int_in(w, key::tp) != 1)
    w.fail_at("tp", "moe takes no `tp`: TP inside each expert is `expert_tp` (Megatron-core's "
                    "--expert-tensor-parallel-size), the expert-parallel group is `ep`");
  Moe m;
  m.file = w.file();
  m.line = w.line();
  m.experts = static_cast<int>(int_in(w, key::experts));
  m.top_k = static_cast<int>(int_in(w, key::top_k));
  require(w, rule::top_k_within_experts, m.top_k, m.experts);
  const std::int64_t ep = int_in(w, key::ep);
  if (ep > max_ranks) w.fail_at("ep", fmt::format("{} EP ranks, but the hardware has {} GPUs", ep, max_ranks));
  m.ep = static_cast<int>(ep);
  require(w, rule::experts_by_ep, m.experts, m.ep);
  m.d_model = int_in(w, key::d_model);
  m.d_ffn_expert = int_in(w, key::d_ffn_expert);
  // Expert TP (docs/guide/moe.md "Expert tensor parallelism"): ep x expert_tp GPUs, ETP innermost.
  const std::int64_t expert_tp = int_or_default(w, key::expert_tp);
  if (ep * expert_tp > max_ranks)
    w.fail_at("expert_tp", fmt::format("ep x expert_tp = {} x {} = {} GPUs, but the hardware has {} GPUs", ep, expert_tp,
                                       ep * expert_tp, max_ranks));
  m.expert_tp = static_cast<int>(expert_tp);
  require(w, rule::expert_ffn_by_expert_tp, m.d_ffn_expert, m.expert_tp);
  m.tokens = int_in(w, key::tokens);
  m.shared_experts = static_cast<int>(int_or_default(w, key::shared_experts));
  m.dtype = read_dtype(w, key::dtype);
  read_moe_routing(w, m);
  // The routing itself, checked here so a bad histogram is refused at load (file, line, key).
  (void)moe_routing(m);
  return m;
}

// A transformer's MoE block (Transformer::moe, sim/schemes/moe_transformer.cpp): the model config's
// experts, or experts / top_k / d_ffn_expert / shared_experts given (a custom model, or overriding the
// config's); the EP group is the TP group (ep = tp), each rank routing its batch x seq / tp tokens.
void read_transformer_moe(const YamlReader& w, int tp, const std::optional<Moe>& from_model, int model_dense_layers,
                          Transformer& t) {
  if (!from_model && !w.has("experts")) {
    for (const key::Key* k : key::kTransformerMoe)
      if (w.has(std::string(k->name)))
        w.fail_at(std::string(k->name), "the model has no experts (a dense transformer); give experts, or a mixture-of-experts model");
    return;
  }
  Moe m = from_model.value_or(Moe{});
  auto given = [&](int Moe::*field) { return from_model ? std::optional<std::int64_t>((*from_model).*field) : std::nullopt; };
  m.experts = static_cast<int>(size_field(w, key::experts, given(&Moe::experts)));
  m.top_k = static_cast<int>(size_field(w, key::top_k, given(&Moe::top_k)));
  require(w, rule::top_k_within_experts, m.top_k, m.experts, w.has("top_k") ? "top_k" : "experts");
  m.d_ffn_expert = size_field(w, key::d_ffn_expert,
                              from_model ? std::optional<std::int64_t>(from_model->d_ffn_expert) : std::nullopt);
  m.shared_experts = w.has("shared_experts") ? static_cast<int>(int_in(w, key::shared_experts))
                                             : (from_model ? from_model->shared_experts : 0);
  t.dense_layers = w.has("dense_layers") ? static_cast<int>(int_in(w, key::dense_layers)) : model_dense_layers;
  require(w, rule::dense_layers_within_layers, t.dense_layers, t.layers, w.has("dense_layers") ? "dense_layers" : "layers");
  // The EP group folded onto the TP group (Megatron-core MoE parallel folding): ep = tp.
  m.ep = tp;
  require(w, rule::experts_by_tp, m.experts, tp, w.has("experts") ? "experts" : "tp", !w.has("experts"));
  m.d_model = t.d_model;
  m.tokens = t.batch * t.seq / tp;  // each rank's sequence-parallel shard
  m.dtype = t.dtype;
  read_moe_routing(w, m);
  t.moe = m;
  (void)moe_routing(m);  // a bad histogram is refused at load (file, line, key)
}

Transformer read_transformer(const YamlReader& w, int tp) {
  w.allow_keys(workload_keys(WorkloadKind::transformer));
  const auto model = read_model(w, WorkloadKind::transformer);
  Transformer t;
  t.model = model ? model->model : "custom";
  t.layers = static_cast<int>(size_field(w, key::layers, from(model, &Transformer::layers)));
  (void)tokens_of(w);
  t.batch = int_in(w, key::batch);
  t.seq = int_in(w, key::seq);
  t.d_model = size_field(w, key::d_model, from(model, &Transformer::d_model));
  t.d_ffn = size_field(w, key::d_ffn, from(model, &Transformer::d_ffn));
  t.heads = size_field(w, key::heads, from(model, &Transformer::heads));
  t.kv_heads = kv_heads_field(w, from(model, &Transformer::kv_heads));
  t.head_dim = head_dim_field(w, from(model, &Transformer::head_dim));
  t.vocab = model ? model->vocab : 0;  // workload.vocab overrides it (read_step_kernel_keys)
  t.dtype = read_dtype(w, key::dtype);
  check_heads(w, t.d_model, t.heads, t.kv_heads, tp, t.head_dim);
  require(w, rule::ffn_by_tp, t.d_ffn, tp);
  require(w, rule::batch_seq_by_tp, t.batch * t.seq, tp);
  read_transformer_moe(w, tp, model ? model->moe : std::nullopt, model ? model->dense_layers : 0, t);
  if (model) t.mla = model->mla;  // read_model admits MLA with a MoE model only
  if (model) t.vocab = model->vocab;
  if (t.mla && w.has("head_dim"))
    w.fail_at("head_dim", "multi-head latent attention takes its head widths from the model config "
                          "(qk_nope_head_dim, qk_rope_head_dim, v_head_dim)");
  return t;
}

// workload.vocab, .fused_elementwise, .fp8_scaling and .dropout: only a dense transformer's training
// step runs the kernels they shape (sim/schemes/training_step.cpp); anywhere else they are refused.
void read_step_kernel_keys(const YamlReader& w, Workload& out) {
  auto* t = std::get_if<Transformer>(&out.shape);
  const bool applies = t != nullptr && !t->moe && !t->mla && out.training.pass == Pass::step;
  for (const key::Key* k : key::kStepKernel)
    if (w.has(std::string(k->name)) && !applies)
      w.fail_at(std::string(k->name), fmt::format("shapes the kernels of a dense transformer's training step (kind transformer, pass: "
                                 "step, no experts); this workload is {}{}, which does not run them",
                                 workload_kind_name(out.kind), t == nullptr ? "" : (t->moe ? " with experts" : fmt::format(" with pass: {}",
                                                                 pass_name(out.training.pass)))));
  if (!applies) return;
  t->step_kernels = true;
  if (w.has("vocab")) t->vocab = int_in(w, key::vocab);
  t->fusion = read_choice(w, key::fused_elementwise, step::parse_fusion);
  if (w.has("fp8_scaling") && t->dtype != DType::fp8)
    w.fail_at("fp8_scaling", fmt::format("scales FP8 GEMM inputs; this workload's dtype is {}", dtype_name(t->dtype)));
  t->fp8_scaling = read_choice(w, key::fp8_scaling, step::parse_fp8_scaling);
  t->dropout = number_or_default(w, key::dropout);
  t->attention = read_choice(w, key::attention, parse_attention_implementation);
}

Workload read_workload(const YamlReader& w, int max_ranks) {
  w.expect_map();
  Workload out;
  const YamlReader kind_node = w.child("kind");
  const std::string kind_text = kind_node.as_string();
  const std::optional<WorkloadKind> kind = parse_workload_kind(kind_text);
  if (kind == WorkloadKind::moe) {
    const Moe m = read_moe(w, max_ranks);
    out.kind = *kind;
    out.tp = m.ep * m.expert_tp;  // the graph's ranks: ep x expert_tp (ETP innermost)
    out.shape = m;
    out.training = read_training(w, out.kind, out.tp, max_ranks);
    read_step_kernel_keys(w, out);  // refuses them: a MoE layer runs no dense step's kernels
    return out;
  }
  const std::int64_t tp64 = int_in(w, key::tp);
  if (tp64 > max_ranks)
    w.fail_at("tp", max_ranks == 1
                        // A calibrated single-GPU host: its profile.yaml has one GPU; the runner's virtual
                        // nodes (README "Calibration") are the multi-rank machines measured there.
                        ? fmt::format("{} ranks, but the hardware has 1 GPU (a calibrated host's "
                                      "schemes/profile_virtual_t<T>_*.yaml runs up to T ranks)", tp64)
                        : fmt::format("{} ranks, but the hardware has {} GPUs", tp64, max_ranks));
  out.tp = static_cast<int>(tp64);
  const int tp = out.tp;

  // An unknown kind is named once tp is read: the order of messages the bad-input corpus pins.
  if (!kind) kind_node.fail("unknown workload kind '" + kind_text + "' (known: " + workload_kind_list() + ")");
  out.kind = *kind;
  switch (out.kind) {
    case WorkloadKind::gemm_collective: out.shape = read_gemm_collective(w, tp); break;
    case WorkloadKind::mlp_tpsp: out.shape = read_mlp_tpsp(w, tp); break;
    case WorkloadKind::attention_tpsp: out.shape = read_attention_tpsp(w, tp); break;
    case WorkloadKind::attention_ulysses: out.shape = read_attention_ulysses(w, tp); break;
    case WorkloadKind::decode_stack: out.shape = read_decode_stack(w, tp); break;
    case WorkloadKind::transformer: out.shape = read_transformer(w, tp); break;
    case WorkloadKind::moe: break;  // read above
  }
  out.training = read_training(w, out.kind, tp, max_ranks);
  read_step_kernel_keys(w, out);
  if (const auto p = w.optional_child("parallel")) out.training.job = read_job(*p, out, max_ranks);
  if (const auto* t = std::get_if<Transformer>(&out.shape);
      t && t->attention == AttentionImplementation::unfused && out.training.job.cp > 1)
    w.fail_at("attention", fmt::format("unfused attention is not modelled with context parallelism (parallel.cp = {}), "
                                       "whose attention runs as flash attention blocks",
                                       out.training.job.cp));
  if (has_moe_layers(out)) {
    // Its training step has no data-parallel form (sim/schemes/moe_transformer.cpp).
    if (w.has("parallel")) w.fail_at("parallel", "a mixture-of-experts transformer has no data-parallel traffic yet");
  }
  // The shape library's own check (sim/workload_shapes.hpp) as a safety net, mapped onto the key. A
  // pipeline or context-parallel job simulates one stage at a time: its layers / pp at seq / cp.
  Workload simulated = out;
  if (out.training.job.active()) {
    Transformer& t = std::get<Transformer>(simulated.shape);
    t.layers /= out.training.job.pp;
    t.seq /= out.training.job.cp;
    simulated.training.job = JobParallel{};
  }
  try {
    validate_workload(simulated);
  } catch (const std::invalid_argument& e) {
    std::string msg = e.what();
    std::string key;
    const auto colon = msg.find(": ");
    if (msg.rfind("workload.", 0) == 0 && colon != std::string::npos) {
      key = msg.substr(9, colon - 9);
      msg = msg.substr(colon + 2);
    }
    if (key.empty()) w.fail(msg);
    w.fail_at(key, msg);
  }
  return out;
}

// A YAML value as JSON for scheme params (scalars: int, then number, then bool, then string).
nlohmann::json yaml_to_json(const YAML::Node& n) {
  if (n.IsSequence()) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& e : n) arr.push_back(yaml_to_json(e));
    return arr;
  }
  if (n.IsMap()) {
    nlohmann::json obj = nlohmann::json::object();
    for (const auto& kv : n) {
      if (!kv.first.IsScalar()) continue;  // no knob takes a map: check_param_value refuses it whole
      obj[kv.first.Scalar()] = yaml_to_json(kv.second);
    }
    return obj;
  }
  if (!n.IsScalar()) return nullptr;
  // Numbers as written (cost_model/yaml_reader.hpp): plain decimal only; a quoted "8" stays text.
  if (is_plain_scalar(n)) {
    if (const auto i = parse_decimal_int(n.Scalar())) return *i;
    if (const auto d = parse_decimal_real(n.Scalar())) return *d;
    bool b = false;
    if (YAML::convert<bool>::decode(n, b)) return b;
  }
  return n.Scalar();
}

// A knob's value from YAML (a scenario's `params:` entry or a --param value), typed by its row and
// checked by the row's one check (check_param_value); a bad value fails at `p` (file, line, key).
nlohmann::json read_param(const YamlReader& p, const SchemeParam& spec, const HardwareProfile& hardware) {
  nlohmann::json v;
  switch (spec.type) {
    case ParamType::text: v = p.as_string(); break;
    case ParamType::boolean: v = p.as_bool(); break;
    case ParamType::integer:
      if (p.is_scalar() && !is_plain_scalar(p.node())) p.fail("must be an integer: " + p.not_plain_text());
      v = yaml_to_json(p.node());
      break;
    case ParamType::number:
      v = p.as_double();
      break;
    case ParamType::wave_groups:
      if (p.is_map()) p.fail("must be a value or a list of values, not a map");
      if (p.is_sequence()) {
        for (std::size_t i = 0; i < p.size(); ++i)
          if (p.element(i).is_map()) p.element(i).fail("must be a value or a list of values, not a map");
      }
      v = yaml_to_json(p.node());
      break;
  }
  if (const auto why = check_param_value(spec, v, hardware)) p.fail(*why);
  return v;
}

const SchemeParam* find_param(const SchemeInfo& scheme, const std::string& key) {
  for (const auto& p : scheme.params)
    if (p.name == key) return &p;
  return nullptr;
}

std::string known_params(const SchemeInfo& scheme) {
  std::vector<std::string> known;
  for (const auto& p : scheme.params) known.push_back(p.name);
  return known.empty() ? std::string("none") : join(known);
}

std::string scheme_names_applying(const Workload& w) {
  std::vector<std::string> names;
  for (const auto& s : scheme_registry())
    if (!s.applies || s.applies(w)) names.push_back(s.name);
  return join(names);
}

SchemeSpec read_scheme(const YamlReader& e, const Workload& workload, const HardwareProfile& hardware) {
  SchemeSpec spec;
  spec.line = e.line();
  std::optional<YamlReader> params;
  if (e.is_map()) {
    e.allow_keys({"name", "params"});
    params = e.optional_child("params");
  }
  // Constructed, never assigned: assigning a yaml-cpp node writes through to the node it refers to.
  const YamlReader name_node = e.is_map() ? e.child("name") : e;
  spec.name = name_node.as_string();
  const SchemeInfo* info = find_scheme(spec.name);
  if (!info) {
    std::vector<std::string> known;
    for (const auto& s : scheme_registry()) known.push_back(s.name);
    name_node.fail("unknown scheme '" + spec.name + "' (known: " + join(known) + ")");
  }
  if (is_training_step(workload) && info->backward.empty())
    name_node.fail("scheme '" + spec.name + "' has no backward form, so it cannot run a training step (pass " +
                   pass_name(workload.training.pass) + (workload.training.parallel.dp > 1 ? ", data parallelism" : "") +
                   "); schemes that can: " + scheme_names_applying(workload));
  // A moe scheme without an expert-TP form names the key and why (sim/schemes/moe.hpp).
  if (const auto why = moe_expert_tp_refusal(workload, spec.name)) {
    if (info->applies && !info->applies(workload))
      throw InputError(name_node.file(), name_node.line(), "workload.expert_tp", *why);
  }
  if (const auto why = moe_all_to_all_refusal(workload, spec.name))
    throw InputError(name_node.file(), name_node.line(), "workload.all_to_all", *why);
  if (info->applies && !info->applies(workload))
    name_node.fail("scheme '" + spec.name + "' does not apply to a " + workload_kind_name(workload.kind) +
                   " workload (schemes that do: " + scheme_names_applying(workload) + ")");
  if (params) {
    params->expect_map();
    for (const std::string& key : params->keys()) {
      const SchemeParam* ps = find_param(*info, key);
      if (!ps) params->fail_at(key, "unknown parameter of scheme '" + spec.name + "' (known: " + known_params(*info) + ")");
      const YamlReader value = params->child(key);
      spec.params[key] = read_param(value, *ps, hardware);
      spec.param_lines[key] = value.line();
    }
    // A knob of the backward (column_backward) named for a forward pass would do nothing: refused at
    // its line here, so every command that loads the scenario refuses it the same way.
    if (const auto refused = check_params_apply(info->params, spec.params, workload))
      params->fail_at(refused->name, "scheme '" + spec.name + "': " + refused->why);
  }
  return spec;
}

std::string flow_text(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  YAML::Emitter em;
  em.SetMapFormat(YAML::Flow);
  em.SetSeqFormat(YAML::Flow);
  em << n;
  return em.c_str();
}

Scenario load_impl(const std::string& text, const std::string& file, const ScenarioOptions& options,
                   bool with_sweep);
Scenario load_checked(const YAML::Node& root, const std::string& text, const std::string& file,
                      const std::string& hardware_dir, const std::string& hardware_file, std::string hardware_name,
                      const ScenarioOptions& options, bool with_sweep);

std::vector<std::string> split_keys(const std::string& key) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const auto comma = key.find(',', start);
    std::string k = key.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!k.empty() && k.front() == ' ') k.erase(0, 1);
    while (!k.empty() && k.back() == ' ') k.pop_back();
    out.push_back(k);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<SweepAxis> read_sweep(const YamlReader& s, const std::string& text, const std::string& file,
                                  const ScenarioOptions& options) {
  s.expect_map();
  std::vector<SweepAxis> axes;
  for (const std::string& key : s.keys()) {
    const YamlReader values = s.child(key);
    SweepAxis axis;
    axis.keys = split_keys(key);
    axis.line = values.line();
    for (const auto& k : axis.keys) {
      if (k.empty()) values.fail("empty key path in sweep axis '" + key + "'");
      if (k == "sweep" || k.rfind("sweep.", 0) == 0) values.fail("a sweep cannot vary the sweep");
    }
    values.expect_sequence();
    if (values.size() == 0) values.fail("a sweep axis needs at least one value");
    std::set<std::vector<std::string>> checked;  // a value listed again is not loaded again
    for (std::size_t i = 0; i < values.size(); ++i) {
      const YamlReader v = values.element(i);
      std::vector<std::string> point;
      if (axis.keys.size() == 1) {
        point.push_back(flow_text(v.node()));
      } else {
        if (!v.is_sequence() || v.size() != axis.keys.size())
          v.fail(fmt::format("each value of a sweep over {} keys must be a list of {} values", axis.keys.size(),
                             axis.keys.size()));
        for (std::size_t k = 0; k < axis.keys.size(); ++k) point.push_back(flow_text(v.node()[k]));
      }
      // Each value must make a valid scenario on its own: load the scenario with it applied.
      // Points apply on top of the scenario's own --set overrides, as `sweep` will run them.
      if (options.check_sweep_values && checked.insert(point).second) {
        ScenarioOptions trial = options;
        trial.check_ignored_sweep = false;  // the trial's own sweep block is this one, being checked
        for (std::size_t k = 0; k < axis.keys.size(); ++k) trial.sets.push_back(axis.keys[k] + "=" + point[k]);
        try {
          (void)load_impl(text, file, trial, false);
        } catch (const InputError& e) {
          // The point's own assignments are not the user's --set: name the key, not "--set".
          const bool from_point = e.file().rfind("--set ", 0) == 0 &&
                                  std::find(trial.sets.end() - static_cast<std::ptrdiff_t>(axis.keys.size()),
                                            trial.sets.end(), e.file().substr(6)) != trial.sets.end();
          v.fail("this sweep value of '" + key + "' makes an invalid scenario: " +
                 (from_point ? e.key_path() + ": " + e.message() : std::string(e.what())));
        }
      }
      axis.values.push_back(std::move(point));
    }
    axes.push_back(std::move(axis));
  }
  return axes;
}

YAML::Node parse(const std::string& text, const std::string& file) { return parse_yaml(text, file); }

// The scenario text with its top-level `sweep:` block blanked (lines kept, so every other line
// number stays right). Loading a sweep point parses the scenario again; with the sweep left in, a
// sweep of N values parsed N values N times (a 3000-value list took a minute). Falls back to the
// text unchanged when the block cannot be cut out by lines (a flow-style map on one line).
std::string text_without_sweep(const std::string& text) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception&) {
    return text;
  }
  if (!root.IsMap() || !root["sweep"]) return text;
  int sweep_line = -1;
  std::vector<int> other_lines;
  for (const auto& kv : root) {
    const int line = kv.first.Mark().line;
    if (line < 0) return text;
    if (kv.first.Scalar() == "sweep") sweep_line = line;
    else other_lines.push_back(line);
  }
  if (sweep_line < 0) return text;
  int end_line = std::numeric_limits<int>::max();  // first line after the block
  for (int l : other_lines) {
    if (l == sweep_line) return text;  // another key on the sweep's line: not a block
    if (l > sweep_line) end_line = std::min(end_line, l);
  }
  std::string out;
  out.reserve(text.size());
  int line = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const std::size_t end = nl == std::string::npos ? text.size() : nl;
    if (line < sweep_line || line >= end_line) out.append(text, pos, end - pos);
    if (nl == std::string::npos) break;
    out.push_back('\n');
    pos = nl + 1;
    ++line;
  }
  // The cut must leave the same document without its sweep; anything else keeps the original.
  try {
    const YAML::Node check = YAML::Load(out);
    if (!check.IsMap() || check["sweep"] || check.size() + 1 != root.size()) return text;
  } catch (const YAML::Exception&) {
    return text;
  }
  return out;
}

// Parses the text afresh on every call: overrides edit the tree in place, and yaml-cpp's Clone()
// drops the line marks errors need.
Scenario load_impl(const std::string& text, const std::string& file, const ScenarioOptions& options,
                   bool with_sweep) {
  const std::string hardware_dir = options.hardware_dir.empty() ? default_hardware_dir() : options.hardware_dir;
  YAML::Node root = parse(text, file);
  if (!with_sweep && !options.check_ignored_sweep && root.IsMap()) root.remove("sweep");
  if (!root.IsMap()) {
    const int line = root.Mark().line >= 0 ? root.Mark().line + 1 : 0;
    throw InputError(file, line, "",
                     "a scenario must be a map of keys: hardware and workload (required); name, description, "
                     "schemes, fidelity, sweep (optional)");
  }

  // `hardware=` chooses the profile and `hardware.a.b=` edits it, so the choice is applied first
  // (the last one winning) in whatever order the assignments came: a sweep's axes, or --set
  // hardware.gpu.sm_count=100 --set hardware=h100-sxm, must not drop the edit silently.
  std::optional<std::string> chosen;
  std::vector<std::string> edits;
  for (const std::string& a : options.sets) {
    if (a.rfind("hardware=", 0) == 0) chosen = a;
    else edits.push_back(a);
  }
  if (chosen) apply_overrides(root, {*chosen});
  // A named profile is spliced into the tree when --set reaches into it, so the override is
  // validated by the profile loader like any other value (cost_model/profile_loader.hpp).
  std::string hardware_file = file;
  std::string hardware_name;
  if (root["hardware"] && root["hardware"].IsScalar()) {
    hardware_name = root["hardware"].Scalar();
    if (any_set_under(edits, "hardware")) {
      const YamlReader ref(root["hardware"], "hardware", file);
      try {
        root["hardware"] = load_profile_yaml(resolve_profile_ref(hardware_name, file), hardware_dir, &hardware_file);
      } catch (const InputError& e) {
        // The profile named by --set hardware=: that assignment is where it came from.
        if (chosen && (e.file().empty() || (e.line() <= 0 && e.key_path().empty())))
          throw InputError("--set " + *chosen, 0, "hardware", e.file().empty() ? e.message() : e.what());
        if (e.file().empty()) ref.fail(e.message());
        // The profile file itself cannot be read (a directory, a device, missing): the scenario's
        // `hardware` key is what named it.
        if (e.line() <= 0 && e.key_path().empty()) ref.fail(e.what());
        throw;
      }
    }
  }
  apply_overrides(root, edits);
  try {
    return load_checked(root, text, file, hardware_dir, hardware_file, hardware_name, options, with_sweep);
  } catch (const InputError& e) {
    rethrow_with_source(e, options.sets);
  }
}

// The scenario tree (after --set) into a Scenario; errors are attributed to a --set by load_impl.
Scenario load_checked(const YAML::Node& root, const std::string& text, const std::string& file,
                      const std::string& hardware_dir, const std::string& hardware_file, std::string hardware_name,
                      const ScenarioOptions& options, bool with_sweep) {
  Scenario sc;
  sc.file = file;
  const YamlReader r(root, "", file);
  r.allow_keys(kTopLevelKeys);
  sc.description = r.get_string("description", "");
  // A file name is bytes, not text: the name goes to JSON outputs, which must be UTF-8.
  sc.name = r.get_string("name", file.empty() ? std::string("inline") : utf8_or_replaced(fs::path(file).stem().string()));

  const YamlReader hw = r.child("hardware");
  if (hw.is_scalar()) {
    hardware_name = hw.as_string();
    try {
      sc.hardware = load_profile(resolve_profile_ref(hardware_name, file), hardware_dir);
    } catch (const InputError& e) {
      if (e.file().empty()) hw.fail(e.message());
      if (e.line() <= 0 && e.key_path().empty()) hw.fail(e.what());
      throw;
    }
  } else {
    hw.expect_map();
    const YamlReader located(hw.node(), "hardware", hardware_file);
    sc.hardware = profile_from_yaml(located, dir_of(hardware_file));
    if (hardware_name.empty()) hardware_name = sc.hardware.name.empty() ? "inline" : sc.hardware.name;
  }
  sc.hardware_name = hardware_name;
  if (sc.hardware.fabric.num_gpus < 1) hw.fail("the profile has no GPUs");

  sc.workload = read_workload(r.child("workload"), sc.hardware.fabric.num_gpus);
  check_moe_all_to_all(r.child("workload"), sc.workload, sc.hardware);
  if (const auto over = work_over_budget(sc.workload)) {
    const YamlReader w = r.child("workload");
    w.fail_at(w.has(over->key) ? over->key : "tp", over->message);
  }

  if (const auto f = r.optional_child("fidelity")) {
    const std::string s = f->as_string();
    if (s == "curve") sc.fidelity = Fidelity::curve;
    else if (s == "steps") sc.fidelity = Fidelity::steps;
    else f->fail("must be curve or steps (got " + s + ")");
  }

  if (const auto list = r.optional_child("schemes")) {
    list->expect_sequence();
    if (list->size() == 0) list->fail("list at least one scheme, or leave `schemes` out to run every scheme that applies");
    for (std::size_t i = 0; i < list->size(); ++i) sc.schemes.push_back(read_scheme(list->element(i), sc.workload, sc.hardware));
  } else {
    for (const auto& s : scheme_registry())
      if (!s.applies || s.applies(sc.workload)) sc.schemes.push_back(SchemeSpec{s.name, nlohmann::json::object(), 0});
    if (sc.schemes.empty()) r.fail(std::string("no scheme applies to a ") + workload_kind_name(sc.workload.kind) + " workload");
  }

  if (const auto s = r.optional_child("sweep")) {
    if (with_sweep) {
      sc.text = text_without_sweep(text);
      sc.sweep = read_sweep(*s, sc.text, file, options);
    } else if (options.check_ignored_sweep) {
      // A command that does not run the sweep (run, tune) still refuses a value that makes the file
      // as written invalid, as `sweep` does: a broken block is broken for every command. Its values
      // are checked against the file without this command's --set, so a value that only clashes with
      // an override (another hardware without the swept link) does not stop a run that never runs it.
      ScenarioOptions as_written = options;
      as_written.sets.clear();
      as_written.check_ignored_sweep = false;
      bool check_values = options.check_sweep_values;
      if (check_values && !options.sets.empty()) {
        try {
          (void)load_impl(text, file, as_written, false);  // the file alone must load to blame a value
        } catch (const InputError&) {
          check_values = false;
        }
      }
      as_written.check_sweep_values = check_values;
      (void)read_sweep(*s, text, file, as_written);
    }
  }
  if (sc.text.empty()) sc.text = text;
  sc.sets = options.sets;
  return sc;
}

}  // namespace

const char* fidelity_name(Fidelity f) { return f == Fidelity::steps ? "steps" : "curve"; }

namespace {

std::int64_t tiles_of(const RankGemm& g) {
  const auto ceil128 = [](std::int64_t v) { return v <= 0 ? 0 : (v + 127) / 128; };
  return ceil128(g.m) * ceil128(g.n);  // each at most 2^17: no overflow
}

}  // namespace

namespace {

// The GEMM tiles of one layer (of every GEMM of the workload for other kinds), the key that sizes
// them, and the layers.
struct TileCount {
  std::int64_t tiles = 0;
  std::string key = "tokens";
  int layers = 1;
};

TileCount tile_count(const Workload& w) {
  TileCount c;
  if (const auto* g = std::get_if<GemmCollective>(&w.shape)) {
    c.tiles = tiles_of(RankGemm{g->m, g->n, g->k, g->dtype});
    c.key = "m";
  } else if (const auto* m = std::get_if<MlpTpSp>(&w.shape)) {
    const MlpShapes s = mlp_shapes(*m, w.tp);
    c.tiles = tiles_of(s.col) + tiles_of(s.row);
  } else if (const auto* a = std::get_if<AttentionTpSp>(&w.shape)) {
    const AttentionShapes s = attention_shapes(*a, w.tp);
    c.tiles = tiles_of(s.qkv) + tiles_of(s.out) + s.attention_tiles;
    c.key = "seq";
  } else if (const auto* u = std::get_if<AttentionUlysses>(&w.shape)) {
    c.tiles = ulysses_shapes(*u, w.tp).attention_tiles;
    c.key = "seq";
  } else if (const auto* t = std::get_if<Transformer>(&w.shape)) {
    const AttentionShapes a = attention_shapes(transformer_attention(*t), w.tp);
    const MlpShapes m = mlp_shapes(transformer_mlp(*t), w.tp);
    c.tiles = tiles_of(a.qkv) + tiles_of(a.out) + a.attention_tiles + tiles_of(m.col) + tiles_of(m.row);
    c.layers = std::max(1, t->layers);
    c.key = "seq";
  }
  return c;
}

}  // namespace

std::int64_t gemm_tiles_per_rank(const Workload& w) {
  const TileCount c = tile_count(w);
  // At most 2^36 per layer and 1024 layers: the product stays inside int64.
  return c.tiles * c.layers;
}

std::optional<WorkOverBudget> work_over_budget(const Workload& w) {
  if (w.training.job.active()) {
    // A pipeline or context-parallel job simulates one stage at a time: its layers / pp at seq / cp.
    Workload stage = w;
    Transformer& t = std::get<Transformer>(stage.shape);
    t.layers /= w.training.job.pp;
    t.seq /= w.training.job.cp;
    stage.training.job = JobParallel{};
    return work_over_budget(stage);
  }
  if (w.tp > kMaxSimulatedRanks)
    return WorkOverBudget{"tp", fmt::format("{} ranks is more than the {} the simulator runs (its routes and "
                                            "collectives take time quadratic in the ranks)",
                                            w.tp, kMaxSimulatedRanks)};
  const TileCount c = tile_count(w);
  // A deep transformer is simulated over its dense prefix + 4 layers at most and composed from those
  // runs (sim/layer_composition.hpp): the budgets are those runs'.
  const std::optional<int> base = composition_base_layers(w);
  const int simulated = base ? std::min(c.layers, *base + 2) : c.layers;
  // MoE: EP rank pairs x MoE layers (ep x expert_tp ranks for the moe kind, ep = tp for a MoE transformer).
  std::int64_t moe_ranks = 0, moe_layers = 0;
  std::string moe_key = "ep";
  if (const auto* m = std::get_if<Moe>(&w.shape)) {
    moe_ranks = static_cast<std::int64_t>(m->ep) * std::max(1, m->expert_tp);
    moe_layers = 1;
    if (m->expert_tp > 1) moe_key = "expert_tp";
  } else if (const auto* t = std::get_if<Transformer>(&w.shape); t && t->moe) {
    moe_ranks = w.tp;
    moe_layers = std::max(1, simulated - t->dense_layers);
    moe_key = "tp";
  }
  if (const std::int64_t pairs = moe_ranks * moe_ranks * moe_layers; pairs > kMaxMoeExchangePairs)  // <= 2^28
    return WorkOverBudget{moe_key, fmt::format("{} x {} EP ranks{} is {} rank pairs exchanging tokens, more than the "
                                               "{} the simulator runs in seconds (each dispatch and combine is an "
                                               "all-to-all of ranks^2 transfers); fewer EP ranks{} fit",
                                               moe_ranks, moe_ranks,
                                               moe_layers > 1 ? fmt::format(" x {} MoE layers", moe_layers) : "",
                                               pairs, kMaxMoeExchangePairs, moe_layers > 1 ? " or layers" : "")};
  const std::int64_t total = c.tiles * simulated;
  if (total <= kMaxGemmTilesPerRank) return std::nullopt;
  // A transformer run whole: say why it is not composed from fewer layers.
  const std::string whole = !base && std::holds_alternative<Transformer>(w.shape)
                                ? fmt::format(" (it is not composed from fewer layers: {})", composition_refusal(w))
                                : std::string();
  return WorkOverBudget{c.key, fmt::format("{} GEMM tiles (128 x 128) per rank{} is more than the {} the simulator "
                                           "walks in seconds{}; shrink the workload",
                                           total, simulated > 1 ? fmt::format(" over {} layers", simulated) : std::string(),
                                           kMaxGemmTilesPerRank, whole)};
}

nlohmann::json yaml_text_to_json(const std::string& text) {
  try {
    return yaml_to_json(YAML::Load(text));
  } catch (const YAML::Exception&) {
    return text;
  }
}

nlohmann::json apply_scheme_params(const SchemeInfo& scheme, nlohmann::json base,
                                   const std::vector<std::string>& assignments, const HardwareProfile& hardware) {
  if (!base.is_object()) base = nlohmann::json::object();
  std::set<std::string> seen;
  for (const std::string& a : assignments) {
    const auto eq = a.find('=');
    const std::string key = eq == std::string::npos ? a : a.substr(0, eq);
    const std::string where = "--param " + key;
    if (eq == std::string::npos || key.empty())
      throw InputError("", 0, where, "expected KEY=VALUE (e.g. --param chunks=8; got '" + a + "')");
    const SchemeParam* spec = find_param(scheme, key);
    if (!spec)
      throw InputError("", 0, where, "unknown parameter of scheme '" + scheme.name + "' (known: " + known_params(scheme) + ")");
    // A knob given twice would silently keep the last one.
    if (!seen.insert(key).second) throw InputError("", 0, where, "given twice; give each --param once");
    YAML::Node node;
    try {
      node = parse_yaml(a.substr(eq + 1), "");
    } catch (const InputError& e) {
      throw InputError("", 0, where, "not a value (" + a + "): " + e.message());
    }
    try {
      base[key] = read_param(YamlReader(node, where, ""), *spec, hardware);
    } catch (const InputError& e) {
      throw InputError("", 0, where, e.message());  // the value's own "line 1" means nothing here
    }
  }
  return base;
}

Scenario load_scenario_text(const std::string& yaml_text, const std::string& file, const ScenarioOptions& options) {
  return load_impl(yaml_text, file, options, options.validate_sweep);
}

Scenario load_scenario_file(const std::string& path, const ScenarioOptions& options) {
  return load_scenario_text(read_input_file(path, "scenario"), path, options);
}

std::vector<std::vector<std::string>> sweep_points(const Scenario& scenario) {
  std::vector<std::vector<std::string>> points;
  if (scenario.sweep.empty()) return points;
  points.push_back({});
  for (const SweepAxis& axis : scenario.sweep) {
    std::vector<std::vector<std::string>> next;
    for (const auto& p : points) {
      for (const auto& v : axis.values) {
        auto q = p;
        for (std::size_t k = 0; k < axis.keys.size(); ++k) q.push_back(axis.keys[k] + "=" + v[k]);
        next.push_back(std::move(q));
      }
    }
    points = std::move(next);
  }
  return points;
}

}  // namespace overlap::sim
