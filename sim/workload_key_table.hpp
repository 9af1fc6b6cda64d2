#pragma once
// The workload's key-and-rule table (design.md "Where the capabilities live": one table per workload
// shape): every key a scenario's `workload` takes, with its type, its range, its default, which kinds
// take it, and the cross-key rules (which value must divide which). The scenario loader
// (sim/scenario.cpp) reads a key's range, default and choices from its row and states a rule's failure
// in the rule's words; the shape validator (sim/workload_shapes.cpp) checks the same rules; the harness
// (calibrate/core/scheme_config.cpp) takes its key lists and shared rules from here; the generated
// reference (tools/docgen.cpp) prints the rows, and its JSON dump of them feeds the bad-input generator
// (tools/make_bad_inputs.py). So a key's range or default is written here only.
//
// To add a key: add its row below, list it in the kinds that take it (their loader order) and read it
// in the loader with read_int / read_number / read_choice_text of its row.
//
// Header-only data on the standard library alone (with cost_model/input_ranges.hpp's constexpr ranges),
// because the device build's calibrate core links no simulator library.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>

#include "cost_model/input_ranges.hpp"
#include "sim/workload_kind.hpp"

namespace overlap::sim::workload_key {

enum class KeyType : std::uint8_t {
  integer,  // a whole number inside its range
  number,   // a real number inside its range
  boolean,
  choice,   // one name of `choices`
  text,     // free text the loader checks further (a model name or path, a routing)
  map,      // a map of keys of its own (workload.parallel)
};

constexpr std::string_view key_type_name(KeyType t) {
  switch (t) {
    case KeyType::integer: return "integer";
    case KeyType::number: return "number";
    case KeyType::boolean: return "bool";
    case KeyType::choice: return "choice";
    case KeyType::text: return "string";
    case KeyType::map: return "map";
  }
  return "";
}

// A default that differs for one kind (decode_stack runs FP8 weights).
struct KindDefault {
  WorkloadKind kind;
  std::string_view value;
};

struct Key {
  std::string_view name;  // below `workload` ("parallel.dp" inside workload.parallel)
  KeyType type;
  const InputRange* range = nullptr;  // integer and number keys: the loader's range check
  // Absent key: the value it takes, as written in YAML; "" = required (or filled from `model` where
  // from_model, or described by `absent`).
  std::string_view default_value = "";
  std::string_view choices = "";  // choice keys: the names the loader knows, ", "-separated
  bool from_model = false;        // a size a named model supplies when the key is absent
  std::string_view absent = "";   // what an absent key means when it is no one value
  std::span<const KindDefault> kind_defaults = {};
  // Where a key every kind lists has an effect (the loader refuses it elsewhere, naming why).
  std::string_view only_when = "";

  // The last component (the key inside its map).
  constexpr std::string_view leaf() const { return name.substr(name.rfind('.') + 1); }
  constexpr bool required() const { return default_value.empty() && !from_model && absent.empty(); }
  // The default for a workload of `kind`.
  constexpr std::string_view default_for(WorkloadKind kind) const {
    for (const KindDefault& d : kind_defaults)
      if (d.kind == kind) return d.value;
    return default_value;
  }
};

// A default written as a decimal ("25", "0.5", "-1") as a number; the table's own text, so a malformed
// one is a compile error where it is used in a constant expression (tests/test_workload_key_table.cpp).
constexpr double decimal_value(std::string_view s) {
  double sign = 1, v = 0, scale = 0;
  std::size_t i = 0;
  if (!s.empty() && s[0] == '-') sign = -1, i = 1;
  for (; i < s.size(); ++i) {
    if (s[i] == '.' && scale == 0) {
      scale = 1;
      continue;
    }
    if (s[i] < '0' || s[i] > '9') throw "workload_key_table.hpp: a numeric default is not a plain decimal";
    v = v * 10 + (s[i] - '0');
    if (scale != 0) scale *= 10;
  }
  return sign * (scale == 0 ? v : v / scale);
}
constexpr std::int64_t default_int(const Key& k, WorkloadKind kind = WorkloadKind::gemm_collective) {
  return static_cast<std::int64_t>(decimal_value(k.default_for(kind)));
}
constexpr double default_number(const Key& k) { return decimal_value(k.default_value); }
constexpr bool default_bool(const Key& k) { return k.default_value == "true"; }

namespace r = overlap::ranges;
inline constexpr std::array<KindDefault, 1> kDecodeFp8 = {{{WorkloadKind::decode_stack, "fp8"}}};
inline constexpr std::string_view kDenseStep = "a dense transformer's step (kind transformer, pass: step, no experts)";
inline constexpr std::string_view kDataParallelKinds =
    "a workload with gradients to reduce (not moe, decode_stack or a transformer with experts)";

// ---- every kind
// Its names are kWorkloadKindNames (sim/workload_kind.hpp).
inline constexpr Key kind{"kind", KeyType::choice};
inline constexpr Key tp{"tp", KeyType::integer, &r::tp, "", "", false, "required; moe: ep x expert_tp (tp may only be 1)"};
inline constexpr Key pass{"pass", KeyType::choice, nullptr, "forward", "forward, backward, step"};
inline constexpr Key recompute{"recompute", KeyType::choice, nullptr, "none", "none, selective, full"};
inline constexpr Key parallel{"parallel", KeyType::map, nullptr, "", "", false, "one replica, no pipeline or context parallelism",
                               {}, kDataParallelKinds};
// ---- the shapes' sizes
inline constexpr Key m{"m", KeyType::integer, &r::gemm_dim};
inline constexpr Key n{"n", KeyType::integer, &r::gemm_dim};
inline constexpr Key k{"k", KeyType::integer, &r::gemm_dim};
inline constexpr Key dtype{"dtype", KeyType::choice, nullptr, "bf16", "fp8, fp16, bf16, fp32", false, "", kDecodeFp8};
inline constexpr Key primitive{"primitive", KeyType::choice, nullptr, "", "all_reduce, reduce_scatter, all_gather, all_to_all"};
inline constexpr Key rmsnorm_after{"rmsnorm_after", KeyType::boolean, nullptr, "false"};
inline constexpr Key model{"model", KeyType::text, nullptr, "", "", false,
                           "custom: every size given (else a built-in name or a config.json path)"};
inline constexpr Key tokens{"tokens", KeyType::integer, &r::tokens, "", "", false, ""};
inline constexpr Key batch{"batch", KeyType::integer, &r::batch};
inline constexpr Key seq{"seq", KeyType::integer, &r::tokens};
inline constexpr Key d_model{"d_model", KeyType::integer, &r::width, "", "", true};
inline constexpr Key d_ffn{"d_ffn", KeyType::integer, &r::width, "", "", true};
inline constexpr Key gated{"gated", KeyType::boolean, nullptr, "true"};
inline constexpr Key gather_input{"gather_input", KeyType::boolean, nullptr, "true"};
inline constexpr Key heads{"heads", KeyType::integer, &r::heads, "", "", true};
inline constexpr Key kv_heads{"kv_heads", KeyType::integer, &r::heads, "", "", true, "0 = as many as heads (no GQA)"};
inline constexpr Key head_dim{"head_dim", KeyType::integer, &r::width, "", "", true, "0 = d_model / heads"};
inline constexpr Key causal{"causal", KeyType::boolean, nullptr, "true"};
inline constexpr Key layers{"layers", KeyType::integer, &r::layers, "", "", true};
inline constexpr Key allreduce_us{"allreduce_us", KeyType::number, &r::latency_us, "", "", false,
                                  "priced by the cost model (a given time must be > 0)"};
// ---- mixture of experts
inline constexpr Key experts{"experts", KeyType::integer, &r::experts, "", "", true};
inline constexpr Key top_k{"top_k", KeyType::integer, &r::experts, "", "", true};
inline constexpr Key d_ffn_expert{"d_ffn_expert", KeyType::integer, &r::width, "", "", true};
inline constexpr Key shared_experts{"shared_experts", KeyType::integer, &r::shared_experts, "0", "", true};
inline constexpr Key dense_layers{"dense_layers", KeyType::integer, &r::layers, "0", "", true};
inline constexpr Key capacity_factor{"capacity_factor", KeyType::number, &r::factor, "", "", false,
                                     "dropless routing (a given factor must be > 0)"};
inline constexpr Key routing{"routing", KeyType::text, nullptr, "uniform", ""};
inline constexpr Key seed{"seed", KeyType::integer, &r::seed, "0"};
inline constexpr Key all_to_all{"all_to_all", KeyType::choice, nullptr, "nccl", "nccl, deepep, deepep_low_latency, hierarchical"};
inline constexpr Key max_nodes{"max_nodes", KeyType::integer, &r::max_nodes, "", "", false, "any node (deepep only)"};
inline constexpr Key ep{"ep", KeyType::integer, &r::tp};
inline constexpr Key expert_tp{"expert_tp", KeyType::integer, &r::tp, "1"};
// ---- a dense transformer step's kernels (cost_model/step_kernels.hpp)
inline constexpr Key vocab{"vocab", KeyType::integer, &r::vocab, "", "", true, "", {}, kDenseStep};
inline constexpr Key fused_elementwise{"fused_elementwise", KeyType::choice, nullptr, "te", "none, te, compile", false, "",
                                       {}, kDenseStep};
inline constexpr Key fp8_scaling{"fp8_scaling", KeyType::choice, nullptr, "tensorwise", "tensorwise, rowwise", false, "",
                                 {}, "a dense transformer's step in fp8"};
inline constexpr Key dropout{"dropout", KeyType::number, &r::dropout, "0", "", false, "", {}, kDenseStep};
inline constexpr Key attention{"attention", KeyType::choice, nullptr, "flash", "flash, unfused", false, "", {}, kDenseStep};
// ---- workload.parallel (sim/workload.hpp DataParallel, JobParallel)
inline constexpr Key dp{"parallel.dp", KeyType::integer, &r::dp, "1", "", false, "", {}, kDataParallelKinds};
inline constexpr Key fsdp{"parallel.fsdp", KeyType::choice, nullptr, "none", "none, zero1, zero2, zero3", false, "", {},
                          "dp > 1"};
inline constexpr Key bucket_mb{"parallel.bucket_mb", KeyType::number, &r::bucket_mb, "25", "", false, "", {},
                               "dp > 1, fsdp none, zero1 or zero2"};
inline constexpr Key prefetch{"parallel.prefetch", KeyType::integer, &r::prefetch, "1", "", false, "", {},
                              "dp > 1, fsdp zero3"};
inline constexpr Key grad_dtype{"parallel.grad_dtype", KeyType::choice, nullptr, "fp32", dtype.choices, false, "", {},
                                "dp > 1"};
inline constexpr Key pp{"parallel.pp", KeyType::integer, &r::pp, "1", "", false, "", {}, kDenseStep};
inline constexpr Key vpp{"parallel.vpp", KeyType::integer, &r::vpp, "1", "", false, "", {}, kDenseStep};
inline constexpr Key micro_batches{"parallel.micro_batches", KeyType::integer, &r::micro_batches, "1", "", false, "", {},
                                   kDenseStep};
// Its names are sim/pipeline_schedule.cpp's (pipeline_schedule_from_name).
inline constexpr Key schedule{"parallel.schedule", KeyType::choice, nullptr, "", "", false,
                              "1f1b (interleaved when vpp > 1)", {}, kDenseStep};
inline constexpr Key cp{"parallel.cp", KeyType::integer, &r::cp, "1", "", false, "", {}, kDenseStep};
inline constexpr Key cp_algorithm{"parallel.cp_algorithm", KeyType::choice, nullptr, "ring", "ring, allgather_kv", false, "",
                                  {}, "cp > 1"};
inline constexpr Key first_stage_layers{"parallel.first_stage_layers", KeyType::integer, &r::stage_layers, "", "", false,
                                        "layers / pp", {}, kDenseStep};
inline constexpr Key last_stage_layers{"parallel.last_stage_layers", KeyType::integer, &r::stage_layers, "", "", false,
                                       "layers / pp", {}, kDenseStep};

// Every row, in the reference's order.
inline constexpr std::array kAll = {
    &kind,       &tp,        &pass,         &recompute,      &parallel,     &m,           &n,
    &k,          &dtype,     &primitive,    &rmsnorm_after,  &model,        &tokens,      &batch,
    &seq,        &d_model,   &d_ffn,        &gated,          &gather_input, &heads,       &kv_heads,
    &head_dim,   &causal,    &layers,       &allreduce_us,   &experts,      &top_k,       &d_ffn_expert,
    &shared_experts, &dense_layers, &capacity_factor, &routing, &seed,      &all_to_all,  &max_nodes,
    &ep,         &expert_tp, &vocab,        &fused_elementwise, &fp8_scaling, &dropout,   &attention,
    &dp,         &fsdp,      &bucket_mb,    &prefetch,       &grad_dtype,   &pp,          &vpp,
    &micro_batches, &schedule, &cp,         &cp_algorithm,   &first_stage_layers, &last_stage_layers};

// The row named `name` ("parallel.dp" for a key of workload.parallel); nullptr for none.
constexpr const Key* find(std::string_view name) {
  for (const Key* key : kAll)
    if (key->name == name) return key;
  return nullptr;
}

// ---- which kinds take which keys, in the order the loader lists them (its "unknown key (allowed: ...)")
using KeyList = std::span<const Key* const>;
inline constexpr std::array<const Key*, 5> kCommon = {&kind, &tp, &pass, &recompute, &parallel};
inline constexpr std::array<const Key*, 5> kStepKernel = {&vocab, &fused_elementwise, &fp8_scaling, &dropout, &attention};
inline constexpr std::array<const Key*, 10> kTransformerMoe = {&experts,      &top_k,           &d_ffn_expert, &shared_experts,
                                                               &dense_layers, &capacity_factor, &routing,      &seed,
                                                               &all_to_all,   &max_nodes};
// workload.parallel: a data-parallel job's keys, then a pipeline- or context-parallel job's.
inline constexpr std::array<const Key*, 5> kDataParallel = {&dp, &fsdp, &bucket_mb, &prefetch, &grad_dtype};
inline constexpr std::array<const Key*, 8> kJob = {&pp, &vpp, &micro_batches, &schedule, &cp, &cp_algorithm,
                                                   &first_stage_layers, &last_stage_layers};
inline constexpr auto kParallel = [] {
  std::array<const Key*, kDataParallel.size() + kJob.size()> keys{};
  for (std::size_t i = 0; i < keys.size(); ++i)
    keys[i] = i < kDataParallel.size() ? kDataParallel[i] : kJob[i - kDataParallel.size()];
  return keys;
}();
inline constexpr std::array<const Key*, 6> kGemmCollective = {&m, &n, &k, &dtype, &primitive, &rmsnorm_after};
inline constexpr std::array<const Key*, 9> kMlpTpSp = {&model, &tokens, &batch, &seq, &d_model, &d_ffn, &gated, &dtype,
                                                       &gather_input};
inline constexpr std::array<const Key*, 10> kAttentionTpSp = {&model, &batch,    &seq,    &d_model, &heads,
                                                              &kv_heads, &head_dim, &causal, &dtype, &gather_input};
inline constexpr std::array<const Key*, 7> kAttentionUlysses = {&model, &batch, &seq, &d_model, &heads, &causal, &dtype};
inline constexpr std::array<const Key*, 8> kDecodeStack = {&model, &layers, &d_model, &d_ffn, &heads, &kv_heads, &dtype,
                                                           &allreduce_us};
inline constexpr auto kTransformer = [] {
  std::array<const Key*, 10 + kTransformerMoe.size()> keys = {&model, &layers, &batch,    &seq,      &d_model,
                                                              &d_ffn, &heads,  &kv_heads, &head_dim, &dtype};
  for (std::size_t i = 0; i < kTransformerMoe.size(); ++i) keys[10 + i] = kTransformerMoe[i];
  return keys;
}();
inline constexpr std::array<const Key*, 14> kMoe = {&experts,  &top_k,          &d_model, &d_ffn_expert, &tokens,
                                                    &ep,       &expert_tp,      &capacity_factor, &routing, &seed,
                                                    &shared_experts, &dtype,    &all_to_all, &max_nodes};

// The kind's own keys (after kCommon, before kStepKernel), in WorkloadKind's order.
inline constexpr std::array<KeyList, kWorkloadKindNames.size()> kByKind = {
    KeyList(kGemmCollective),    KeyList(kMlpTpSp),     KeyList(kAttentionTpSp), KeyList(kAttentionUlysses),
    KeyList(kDecodeStack),       KeyList(kTransformer), KeyList(kMoe)};
constexpr KeyList own_keys(WorkloadKind kind) { return kByKind[static_cast<std::size_t>(kind)]; }

// True when a workload of `kind` takes the key (every kind takes the common and step-kernel keys, and
// reads workload.parallel's keys, refusing those its kind does not model with a message of their own).
constexpr bool takes(WorkloadKind kind, const Key& key) {
  for (KeyList list : {KeyList(kCommon), own_keys(kind), KeyList(kStepKernel), KeyList(kParallel)})
    for (const Key* k : list)
      if (k == &key) return true;
  return false;
}

// ---- cross-key rules: `value` must be a multiple of `divisor` (the divisor 0 or absent: no rule).
// The loader's message: "[value_name = ]V is not divisible by divisor = D (why)", at `key`.
struct DivisibilityRule {
  std::string_view key;         // the key the message names
  std::string_view value_name;  // what must be divisible, when it is not the key's own value
  std::string_view divisor;     // the divisor's name
  std::string_view why;
  constexpr bool holds(std::int64_t value, std::int64_t divisor_value) const {
    return divisor_value <= 0 || value % divisor_value == 0;
  }
};

namespace rule {
// TP (Megatron-LM, Shoeybi et al. Sec. 3) shards the FFN's width and the attention's heads; sequence
// parallelism (Korthikanti et al. Sec. 4.2.2) shards the tokens.
inline constexpr DivisibilityRule gemm_rows_by_tp{"m", "", "tp", "the collective splits the output rows"};
inline constexpr DivisibilityRule tokens_by_tp{"tokens", "", "tp", "sequence parallelism shards the tokens"};
inline constexpr DivisibilityRule ffn_by_tp{"d_ffn", "", "tp", "TP shards the FFN width"};
inline constexpr DivisibilityRule batch_seq_by_tp{"seq", "batch x seq", "tp", "sequence parallelism shards batch x seq tokens"};
inline constexpr DivisibilityRule ulysses_seq_by_tp{"seq", "", "tp", "Ulysses shards the sequence"};
inline constexpr DivisibilityRule width_by_heads{"heads", "d_model", "heads", "d_model must be a multiple of heads"};
inline constexpr DivisibilityRule heads_by_kv_heads{"kv_heads", "heads", "kv_heads", "heads must be a multiple of kv_heads"};
inline constexpr DivisibilityRule heads_by_tp{"heads", "", "tp", "TP shards the heads"};
// Mixture of experts (docs/guide/moe.md): experts spread evenly over the EP ranks, each expert's FFN
// over its expert_tp GPUs; a transformer's EP group is its TP group (Megatron-core parallel folding).
inline constexpr DivisibilityRule experts_by_ep{"ep", "experts", "ep", "every EP rank holds experts / ep experts"};
inline constexpr DivisibilityRule expert_ffn_by_expert_tp{"expert_tp", "d_ffn_expert", "expert_tp",
                                                          "each expert's FFN is split expert_tp ways"};
inline constexpr DivisibilityRule experts_by_tp{"experts", "experts", "tp",
                                                "the EP group is the TP group: every rank holds experts / tp experts"};
// Pipeline and context parallelism (docs/guide/pipeline.md).
inline constexpr DivisibilityRule layers_by_pp{"pp", "the model's layers", "pp", "each stage runs layers / pp layers"};
inline constexpr DivisibilityRule stage_layers_by_vpp{"vpp", "layers / pp", "vpp",
                                                      "each chunk runs layers / (pp x vpp) layers"};
inline constexpr DivisibilityRule micro_batches_by_pp{"micro_batches", "micro_batches", "pp",
                                                      "the interleaved schedule runs micro-batches in groups of pp"};
inline constexpr DivisibilityRule seq_by_2cp{"cp", "seq", "2 cp", "causal load balancing cuts the sequence into 2 cp chunks"};
inline constexpr DivisibilityRule cp_tokens_by_tp{"cp", "batch x seq / cp", "tp",
                                                  "sequence parallelism shards a CP rank's tokens"};
}  // namespace rule

// ---- cross-key rules: `key`'s value is at most `bound`'s.
// The loader's message: "key = V is more than bound = B[ (why)]".
struct AtMostRule {
  std::string_view key;
  std::string_view bound;
  std::string_view why;  // "" when the bound says it all
  constexpr bool holds(std::int64_t value, std::int64_t bound_value) const { return value <= bound_value; }
};

namespace rule {
inline constexpr AtMostRule top_k_within_experts{"top_k", "experts", "a token's top_k experts are distinct"};
inline constexpr AtMostRule dense_layers_within_layers{"dense_layers", "layers", ""};
}  // namespace rule

// A rule and the kinds it binds (the reference's list).
struct KindRule {
  const DivisibilityRule* rule;
  std::array<bool, kWorkloadKindNames.size()> kinds;  // by WorkloadKind
};
namespace detail {
constexpr std::array<bool, kWorkloadKindNames.size()> kinds_of(std::initializer_list<WorkloadKind> list) {
  std::array<bool, kWorkloadKindNames.size()> out{};
  for (WorkloadKind kind : list) out[static_cast<std::size_t>(kind)] = true;
  return out;
}
}  // namespace detail
inline constexpr std::array kAtMostRules = {
    std::pair{&rule::top_k_within_experts, detail::kinds_of({WorkloadKind::transformer, WorkloadKind::moe})},
    std::pair{&rule::dense_layers_within_layers, detail::kinds_of({WorkloadKind::transformer})},
};
inline constexpr std::array kRules = {
    KindRule{&rule::gemm_rows_by_tp, detail::kinds_of({WorkloadKind::gemm_collective})},
    KindRule{&rule::tokens_by_tp, detail::kinds_of({WorkloadKind::mlp_tpsp})},
    KindRule{&rule::ffn_by_tp, detail::kinds_of({WorkloadKind::mlp_tpsp, WorkloadKind::decode_stack, WorkloadKind::transformer})},
    KindRule{&rule::batch_seq_by_tp, detail::kinds_of({WorkloadKind::attention_tpsp, WorkloadKind::transformer})},
    KindRule{&rule::ulysses_seq_by_tp, detail::kinds_of({WorkloadKind::attention_ulysses})},
    KindRule{&rule::width_by_heads, detail::kinds_of({WorkloadKind::attention_tpsp, WorkloadKind::attention_ulysses,
                                                      WorkloadKind::decode_stack, WorkloadKind::transformer})},
    KindRule{&rule::heads_by_kv_heads, detail::kinds_of({WorkloadKind::attention_tpsp, WorkloadKind::decode_stack,
                                                         WorkloadKind::transformer})},
    KindRule{&rule::heads_by_tp, detail::kinds_of({WorkloadKind::attention_tpsp, WorkloadKind::attention_ulysses,
                                                   WorkloadKind::decode_stack, WorkloadKind::transformer})},
    KindRule{&rule::experts_by_ep, detail::kinds_of({WorkloadKind::moe})},
    KindRule{&rule::expert_ffn_by_expert_tp, detail::kinds_of({WorkloadKind::moe})},
    KindRule{&rule::experts_by_tp, detail::kinds_of({WorkloadKind::transformer})},
    KindRule{&rule::layers_by_pp, detail::kinds_of({WorkloadKind::transformer})},
    KindRule{&rule::stage_layers_by_vpp, detail::kinds_of({WorkloadKind::transformer})},
    KindRule{&rule::micro_batches_by_pp, detail::kinds_of({WorkloadKind::transformer})},
    KindRule{&rule::seq_by_2cp, detail::kinds_of({WorkloadKind::transformer})},
    KindRule{&rule::cp_tokens_by_tp, detail::kinds_of({WorkloadKind::transformer})},
};

}  // namespace overlap::sim::workload_key
