#include "sim/workload_keys.hpp"

#include <array>
#include <cstddef>
#include <stdexcept>

namespace overlap::sim {

namespace {

const std::vector<std::string> kStepKernelKeys = {"vocab", "fused_elementwise", "fp8_scaling", "dropout", "attention"};

const std::vector<std::string> kTransformerMoeKeys = {"experts",      "top_k",           "d_ffn_expert", "shared_experts",
                                                      "dense_layers", "capacity_factor", "routing",      "seed",
                                                      "all_to_all",   "max_nodes"};

std::vector<std::string> transformer_keys() {
  std::vector<std::string> keys = {"model", "layers", "batch",    "seq",      "d_model",
                                   "d_ffn", "heads",  "kv_heads", "head_dim", "dtype"};
  keys.insert(keys.end(), kTransformerMoeKeys.begin(), kTransformerMoeKeys.end());
  return keys;
}

// One row per kind, in WorkloadKind's order (checked in workload_kind_keys).
const std::array<WorkloadKindKeys, kWorkloadKindNames.size()>& kind_table() {
  static const std::array<WorkloadKindKeys, kWorkloadKindNames.size()> table = {{
      {WorkloadKind::gemm_collective,
       {"m", "n", "k", "dtype", "primitive", "rmsnorm_after"},
       {},
       TokenKeys::gemm_rows,
       "{kind: gemm_collective, tp: 8, m: 4096, n: 4096, k: 4096, primitive: all_reduce}"},
      {WorkloadKind::mlp_tpsp,
       {"model", "tokens", "batch", "seq", "d_model", "d_ffn", "gated", "dtype", "gather_input"},
       {.ffn = true},
       TokenKeys::tokens_or_batch_seq,
       "{kind: mlp_tpsp, tp: 8, model: llama3-70b, tokens: 8192}"},
      {WorkloadKind::attention_tpsp,
       {"model", "batch", "seq", "d_model", "heads", "kv_heads", "head_dim", "causal", "dtype", "gather_input"},
       {.attention = true, .head_dim = true},
       TokenKeys::batch_seq,
       "{kind: attention_tpsp, tp: 8, model: llama3-70b, batch: 1, seq: 8192}"},
      {WorkloadKind::attention_ulysses,
       {"model", "batch", "seq", "d_model", "heads", "causal", "dtype"},
       {.attention = true},
       TokenKeys::batch_seq,
       "{kind: attention_ulysses, tp: 8, model: llama3-70b, batch: 1, seq: 8192}"},
      {WorkloadKind::decode_stack,
       {"model", "layers", "d_model", "d_ffn", "heads", "kv_heads", "dtype", "allreduce_us"},
       {.ffn = true, .attention = true},
       TokenKeys::one_per_step,
       "{kind: decode_stack, tp: 8, model: llama3-70b}"},
      {WorkloadKind::transformer,
       transformer_keys(),
       {.ffn = true, .attention = true, .moe = true, .mla = true, .head_dim = true},
       TokenKeys::batch_seq,
       "{kind: transformer, tp: 8, model: llama3-70b, batch: 1, seq: 8192}"},
      {WorkloadKind::moe,
       {"experts", "top_k", "d_model", "d_ffn_expert", "tokens", "ep", "expert_tp", "capacity_factor", "routing", "seed",
        "shared_experts", "dtype", "all_to_all", "max_nodes"},
       {},
       TokenKeys::none,
       "{kind: moe, experts: 8, top_k: 2, d_model: 4096, d_ffn_expert: 14336, tokens: 8192, ep: 4}"},
  }};
  return table;
}

}  // namespace

const WorkloadKindKeys& workload_kind_keys(WorkloadKind kind) {
  const WorkloadKindKeys& row = kind_table().at(static_cast<std::size_t>(kind));
  // A row out of order would give one kind another's keys: the table's own mistake, not the input's.
  if (row.kind != kind) throw std::logic_error("sim/workload_keys.cpp: the kind table is not in WorkloadKind's order");
  return row;
}

std::vector<std::string> workload_keys(WorkloadKind kind) {
  std::vector<std::string> keys = {"kind", "tp", "pass", "recompute", "parallel"};
  const WorkloadKindKeys& row = workload_kind_keys(kind);
  keys.insert(keys.end(), row.keys.begin(), row.keys.end());
  keys.insert(keys.end(), kStepKernelKeys.begin(), kStepKernelKeys.end());
  return keys;
}

const std::vector<std::string>& step_kernel_keys() { return kStepKernelKeys; }
const std::vector<std::string>& transformer_moe_keys() { return kTransformerMoeKeys; }

}  // namespace overlap::sim
