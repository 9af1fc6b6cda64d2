#pragma once
// Configuration files production stacks load, written from our choices:
//   - TransformerEngine userbuffers' ub_cfgs (the YAML Megatron-LM's --tp-comm-overlap-cfg names and
//     TE's initialize_ub(ub_cfgs=...) reads: one mapping per GEMM name), from the te_userbuffers
//     scheme's knobs (`overlap-sim tune SCENARIO --export te-userbuffers FILE`);
//   - NCCL's example tuner plugin CSV (NVIDIA/nccl plugins/tuner/example: NCCL_TUNER_CONFIG_FILE),
//     from the collective model's per-size algorithm, protocol and channels
//     (`overlap-sim collective ... --export nccl-tuner FILE`);
//   - FlashOverlap's configuration JSON (infinigence/FlashOverlap, main branch: configs/
//     m{M}n{N}k{K}_{gpu}.json), from the wave-group tuner (`overlap-sim tune --gemm ...
//     --export-flashoverlap FILE|DIR/`).
// Each is built here and written by the commands (atomically, cost_model/atomic_file.hpp). Only
// settings the target stack runs as simulated are exported (design.md "exports").
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost_model/collective_model.hpp"
#include "sim/tune_wave_groups.hpp"
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

// Why TransformerEngine, set up by this ub_cfgs and megatron_flags, would not run the te_userbuffers
// setting `params` on `w` as the simulator ran it; "" when it would. `tune --export te-userbuffers`
// searches only settings with "" (sim/tune_schemes.hpp TuneFilter). Not deployable:
//   - an all-gather name that takes ring_exchange for the scalar method pipeline (add_ub refuses
//     pipeline for an all-gather) while the simulator chunked its all-gather;
//   - some but not all all-gather names (qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad) unoverlapped
//     (method bulk): Megatron-LM passes one ub_overlap_ag to every TE linear (--disable-tp-comm-
//     overlap-ag turns off the fprop and the dgrad all-gathers together), and a name left out of
//     ub_cfgs runs TE's default ring_exchange;
//   - likewise the reduce-scatter names (proj_fprop, fc2_fprop; one ub_overlap_rs,
//     --disable-tp-comm-overlap-rs; TE's default pipeline) and the column-parallel dgrads (qkv_dgrad,
//     fc1_dgrad: bulk for all or none, --tp-comm-overlap-rs-dgrad switches every one).
std::string te_undeployable(const sim::Workload& w, const nlohmann::json& params);

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
// The collectives the plugin tunes (every primitive with a plugin name), in the plugin's order.
std::vector<CollectivePrimitive> nccl_tuner_primitives();
// What NCCL does with a call no row covers (a size outside the rows, a collective not written): the
// CSV's comment and the command's stderr say it in these words.
std::string nccl_tuner_uncovered_note();
std::string nccl_tuner_algorithm(NcclAlgorithm a);
std::string nccl_tuner_protocol(NcclProtocol p);
// Rows for consecutive sizes (ascending, with their plans): one row per run of sizes with the same
// algorithm, protocol and channels, covering [its first size, the next run's first size - 1]; the
// last run ends at its last size.
std::vector<NcclTunerRow> nccl_tuner_rows(CollectivePrimitive p, const std::vector<long long>& sizes,
                                          const std::vector<CollectivePlan>& plans, int nodes, int ranks);
// The CSV, `header` lines first as comments, then what the plugin does with a size or collective no
// row covers (plugins/tuner/example/plugin.c pluginGetCollInfo: the channel count is set to 1 before
// the rows are matched and left there when none matches, NCCL's algorithm and protocol choice kept),
// then the rows.
std::string nccl_tuner_csv(const std::vector<NcclTunerRow>& rows, const std::vector<std::string>& header);

// FlashOverlap's name for a GPU: characters 7-11 of its CUDA device name, lower-cased (tune/search.py
// load_json: props.name[7:11].lower(): "NVIDIA A800-SXM4-80GB" -> "a800", "NVIDIA H100 80GB HBM3" ->
// "h100", "NVIDIA GeForce RTX 4090" -> "gefo"). The profile's GPU name stands in for the device name
// after "NVIDIA ".
std::string flashoverlap_gpu_token(const std::string& gpu_name);
// The one place the exported file's name is decided (the output checks and the writer both call it):
// `given` itself, or, when it ends in '/' or names an existing directory, that directory plus the
// name FlashOverlap's main branch reads and writes, m{M}n{N}k{K}_{gpu}.json (tune/search.py load_json
// and save_solution; tune/profile_config.py save_json). One file per GEMM shape and GPU, as there.
std::string flashoverlap_export_file(const std::string& given, const sim::GemmCollective& g, const std::string& gpu_name);

// FlashOverlap's kernel instance (its Algo) for a BM x BN tile and a CUTLASS swizzle, in the order its
// tool/generate_instances.py enumerates them (src/inc/gemm_instances.inc and configs/AlgoDict.pt: tile
// M, N, K, warp K, stages, swizzle 1 2 3 4 6 8, varying last-fastest): the instance with K 32, warp K
// 32 and 3 stages. nullopt for a tile or swizzle with no instance (its tiles: 128x128, 128x256,
// 256x128).
std::optional<int> flashoverlap_algo_for(int tile_m, int tile_n, int swizzle);

// The JSON FlashOverlap's kernels read (sim/tune_wave_groups.hpp flashoverlap_config) with Algo always
// present (`algo`, else flashoverlap_algo_for the tile and swizzle) and, in its "overlap_sim" object,
// the dtype, primitive and ranks it was tuned for. `warnings` gets one line per thing the user must
// know before running it: FlashOverlap's kernels are fp16 only (cutlass::half_t; its tune scripts
// time torch.float16 GEMMs), so another dtype's timings do not describe what it runs. Throws
// std::invalid_argument when Algo cannot be derived and none was given.
nlohmann::ordered_json flashoverlap_export(const sim::WaveGroupTuneResult& r, const sim::GemmCollective& g, int ranks,
                                           int swizzle, std::optional<int> algo, std::vector<std::string>& warnings);

}  // namespace overlap::tools
