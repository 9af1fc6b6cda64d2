#pragma once
// What each workload kind takes in a scenario (design.md "Where the capabilities live": one table per
// workload shape): its keys in the order the loader lists them, which parts of a `model` it builds,
// how `--tokens N` is written for it, and a workload of the kind that loads. The scenario loader
// (sim/scenario.cpp) allows exactly these keys, `--tokens` (tools/scenario_flags.cpp) and the generated
// reference (tools/docgen.cpp) read them here. The keys themselves (type, range, default, which kinds
// take them) and the rules between them are sim/workload_key_table.hpp's rows; the lists here are
// its names.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/workload_key_table.hpp"
#include "sim/workload_kind.hpp"

namespace overlap::sim {

// Which parts of a model a workload kind builds: a model whose part is not modelled (experts, latent
// attention) is refused for the kinds that would build that part, never run as something else.
struct ModelUse {
  bool ffn = false;
  bool attention = false;
  bool moe = false;  // the FFN may be a MoE block (transformer: Transformer::moe)
  bool mla = false;  // the attention may be MLA when the FFN is a MoE block (sim/schemes/moe_transformer.cpp)
  bool head_dim = false;  // the kind carries a head width other than d_model / heads (attention_tpsp, transformer)
};

// How a kind's token count is written (`--tokens N`, tools/scenario_flags.hpp).
enum class TokenKeys : std::uint8_t {
  none,                 // no token count of its own (moe: `tokens` is each EP rank's routed share)
  tokens_or_batch_seq,  // `tokens`, or batch = 1 and seq = N where the workload gives batch and seq
  batch_seq,            // batch = 1 and seq = N
  gemm_rows,            // the GEMM's rows `m`
  one_per_step,         // decode: one token per step, no count to set
};

struct WorkloadKindKeys {
  WorkloadKind kind;
  // The kind's own keys, in the order the loader lists them (after the keys every kind takes).
  std::vector<std::string> keys;
  ModelUse model;  // which parts of `model` it builds (keys holds "model" when it takes one)
  TokenKeys tokens;
  // A workload of this kind that loads on the default profile (h100-sxm-8x-nvswitch), as YAML flow.
  const char* example;
};

// The kind's row; every kind has one.
const WorkloadKindKeys& workload_kind_keys(WorkloadKind kind);
// Every key a workload of `kind` allows, in the loader's order: kind, tp and the training keys (pass,
// recompute, parallel), the kind's own, then the step kernels' keys (read by every kind so that one
// that does not run them says why).
std::vector<std::string> workload_keys(WorkloadKind kind);
// The keys of workload.parallel, in the loader's order (its "unknown key (allowed: ...)").
std::vector<std::string> parallel_keys();

inline TokenKeys token_keys_of(WorkloadKind kind) { return workload_kind_keys(kind).tokens; }

}  // namespace overlap::sim
