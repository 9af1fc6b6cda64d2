#include "sim/workload_keys.hpp"

#include <array>
#include <cstddef>
#include <stdexcept>

namespace overlap::sim {

namespace {

namespace table = workload_key;

std::vector<std::string> names(table::KeyList keys) {
  std::vector<std::string> out;
  for (const table::Key* key : keys) out.emplace_back(key->name);
  return out;
}

// One row per kind, in WorkloadKind's order (checked in workload_kind_keys).
const std::array<WorkloadKindKeys, kWorkloadKindNames.size()>& kind_table() {
  static const std::array<WorkloadKindKeys, kWorkloadKindNames.size()> table = {{
      {WorkloadKind::gemm_collective,
       names(table::own_keys(WorkloadKind::gemm_collective)),
       {},
       TokenKeys::gemm_rows,
       "{kind: gemm_collective, tp: 8, m: 4096, n: 4096, k: 4096, primitive: all_reduce}"},
      {WorkloadKind::mlp_tpsp,
       names(table::own_keys(WorkloadKind::mlp_tpsp)),
       {.ffn = true},
       TokenKeys::tokens_or_batch_seq,
       "{kind: mlp_tpsp, tp: 8, model: llama3-70b, tokens: 8192}"},
      {WorkloadKind::attention_tpsp,
       names(table::own_keys(WorkloadKind::attention_tpsp)),
       {.attention = true, .head_dim = true},
       TokenKeys::batch_seq,
       "{kind: attention_tpsp, tp: 8, model: llama3-70b, batch: 1, seq: 8192}"},
      {WorkloadKind::attention_ulysses,
       names(table::own_keys(WorkloadKind::attention_ulysses)),
       {.attention = true},
       TokenKeys::batch_seq,
       "{kind: attention_ulysses, tp: 8, model: llama3-70b, batch: 1, seq: 8192}"},
      {WorkloadKind::decode_stack,
       names(table::own_keys(WorkloadKind::decode_stack)),
       {.ffn = true, .attention = true},
       TokenKeys::one_per_step,
       "{kind: decode_stack, tp: 8, model: llama3-70b}"},
      {WorkloadKind::transformer,
       names(table::own_keys(WorkloadKind::transformer)),
       {.ffn = true, .attention = true, .moe = true, .mla = true, .head_dim = true},
       TokenKeys::batch_seq,
       "{kind: transformer, tp: 8, model: llama3-70b, batch: 1, seq: 8192}"},
      {WorkloadKind::moe,
        names(table::own_keys(WorkloadKind::moe)),
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
  std::vector<std::string> keys = names(table::kCommon);
  const WorkloadKindKeys& row = workload_kind_keys(kind);
  keys.insert(keys.end(), row.keys.begin(), row.keys.end());
  const std::vector<std::string> step = names(table::kStepKernel);
  keys.insert(keys.end(), step.begin(), step.end());
  return keys;
}

std::vector<std::string> parallel_keys() {
  std::vector<std::string> keys;
  for (const table::Key* key : table::kParallel) keys.emplace_back(key->leaf());
  return keys;
}

}  // namespace overlap::sim
