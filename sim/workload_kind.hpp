#pragma once
// The workload kinds (design.md "Workloads"): the scenario's `workload.kind`, read from its text once
// by the scenario loader (sim/scenario.cpp) and by the harness's run lists (calibrate/core/
// scheme_config.cpp), and compared as this enum everywhere else. This table is the one place a kind's
// name is written. Header-only, on the standard library alone (cost_model/enum_names.hpp), because the
// device build's calibrate core links no simulator library.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cost_model/enum_names.hpp"

namespace overlap::sim {

// In the order of Workload::shape's alternatives (sim/workload.hpp): kind i is written with shape i.
enum class WorkloadKind : std::uint8_t {
  gemm_collective,
  mlp_tpsp,
  attention_tpsp,
  attention_ulysses,
  decode_stack,
  transformer,
  moe,
};

inline constexpr EnumNames<WorkloadKind, 7> kWorkloadKindNames{{{WorkloadKind::gemm_collective, "gemm_collective"},
                                                                {WorkloadKind::mlp_tpsp, "mlp_tpsp"},
                                                                {WorkloadKind::attention_tpsp, "attention_tpsp"},
                                                                {WorkloadKind::attention_ulysses, "attention_ulysses"},
                                                                {WorkloadKind::decode_stack, "decode_stack"},
                                                                {WorkloadKind::transformer, "transformer"},
                                                                {WorkloadKind::moe, "moe"}}};
static_assert(rows_in_enum_order(kWorkloadKindNames));

constexpr const char* workload_kind_name(WorkloadKind k) { return name_of(kWorkloadKindNames, k); }
// The kind named `s` exactly; nullopt for any other text.
inline std::optional<WorkloadKind> parse_workload_kind(std::string_view s) { return parse_name(kWorkloadKindNames, s); }

// Every kind's name in the table's order, separated by ", " (the loader's "(known: ...)" list).
inline std::string workload_kind_list() {
  std::string out;
  for (const auto& [kind, name] : kWorkloadKindNames) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

// The kinds built of TP + SP layer blocks (all-gather, column- then row-parallel GEMMs, reduce-scatter):
// a layer block of its own, or a transformer's layers of both.
constexpr bool is_tpsp_block(WorkloadKind k) {
  return k == WorkloadKind::mlp_tpsp || k == WorkloadKind::attention_tpsp || k == WorkloadKind::transformer;
}

}  // namespace overlap::sim
