#pragma once
// Configuration files production stacks load, written from our choices:
//   - TransformerEngine userbuffers' ub_cfgs (the YAML Megatron-LM's --tp-comm-overlap-cfg names and
//     TE's initialize_ub(ub_cfgs=...) reads: one mapping per GEMM name), from the te_userbuffers
//     scheme's knobs (`overlap-sim tune SCENARIO --export te-userbuffers FILE`);
//   - NCCL's example tuner plugin CSV (NVIDIA/nccl ext-tuner/example: NCCL_TUNER_CONFIG_FILE), from
//     the collective model's per-size algorithm, protocol and channels
//     (`overlap-sim collective ... --export nccl-tuner FILE`).
// Both are plain text built here and written by the commands (atomically, cost_model/atomic_file.hpp).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost_model/collective_model.hpp"
#include "sim/workload.hpp"

namespace overlap::tools {

// The TE GEMM names a workload's layers use (transformer_engine/pytorch/module/base.py initialize_ub:
// layers_all_gather_overlap, layers_reduce_scatter_overlap, methods): qkv_* and proj_* for attention,
// fc1_* and fc2_* for the MLP; the dgrad / wgrad names only when the workload has a backward.
// Empty for a workload TE has no name for (gemm_collective, Ulysses).
std::vector<std::string> te_gemm_names(const sim::Workload& w);

// The ub_cfgs YAML for `w` from te_userbuffers parameters `params` (the knobs a tune candidate set;
// absent knobs take the scheme's defaults, `sm_count` bounds none of them here). Every entry carries
// method, num_sm, cga_size, set_sm_margin, atomic_gemm; a pipeline entry num_splits; a ring_exchange
// entry use_ce. `header` lines are written as YAML comments first. Throws std::invalid_argument
// when the workload has no TE GEMM names.
std::string te_userbuffers_yaml(const sim::Workload& w, const nlohmann::json& params,
                                const std::vector<std::string>& header);

// The Megatron-LM flags that load `yaml_path` and match the configuration (megatron/training/
// arguments.py: --tp-comm-overlap, --tp-comm-overlap-cfg, --disable-tp-comm-overlap-ag,
// --disable-tp-comm-overlap-rs, --tp-comm-overlap-rs-dgrad, --disable-tp-comm-bulk-dgrad,
// --disable-tp-comm-bulk-wgrad), for te_userbuffers parameters `params` on workload `w`.
std::string megatron_flags(const sim::Workload& w, const nlohmann::json& params, const std::string& yaml_path);
// torchtitan's switch for async TP (torchtitan/config/job_config.py Parallelism.enable_async_tensor_parallel:
// "currently only effective when compile is enabled").
std::string torchtitan_async_tp_flags();

// One line of NCCL's example tuner CSV.
struct NcclTunerRow {
  std::string collective;  // broadcast, reduce, allgather, reducescatter, allreduce
  long long min_bytes = 0, max_bytes = 0;
  std::string algorithm;   // tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat
  std::string protocol;    // ll, ll128, simple
  int channels = -1;
  int nodes = -1, ranks = -1;
};
// The plugin's names for ours: nullopt-like "" when the plugin has none (all-to-all).
std::string nccl_tuner_collective(CollectivePrimitive p);
std::string nccl_tuner_algorithm(NcclAlgorithm a);
std::string nccl_tuner_protocol(NcclProtocol p);
// Rows for consecutive sizes (ascending, with their plans): one row per run of sizes with the same
// algorithm, protocol and channels, covering [its first size, the next run's first size - 1]; the
// last run ends at its last size.
std::vector<NcclTunerRow> nccl_tuner_rows(CollectivePrimitive p, const std::vector<long long>& sizes,
                                          const std::vector<CollectivePlan>& plans, int nodes, int ranks);
std::string nccl_tuner_csv(const std::vector<NcclTunerRow>& rows, const std::vector<std::string>& header);

}  // namespace overlap::tools
