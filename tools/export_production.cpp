#include "tools/export_production.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/schemes/te_userbuffers.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::tools {

std::vector<std::string> te_gemm_names(const sim::Workload& w) {
  bool attention = false, mlp = false;
  if (w.kind == sim::WorkloadKind::transformer) attention = mlp = true;
  else if (w.kind == sim::WorkloadKind::attention_tpsp) attention = true;
  else if (w.kind == sim::WorkloadKind::mlp_tpsp) mlp = true;
  else return {};
  const bool backward = sim::has_backward(w);
  std::vector<std::string> out;
  // TE's order (initialize_ub methods): forward first, then the backward's entries.
  if (attention) out.insert(out.end(), {"qkv_fprop", "proj_fprop"});
  if (mlp) out.insert(out.end(), {"fc1_fprop", "fc2_fprop"});
  if (backward) {
    if (attention) out.insert(out.end(), {"qkv_dgrad", "qkv_wgrad", "proj_dgrad"});
    if (mlp) out.insert(out.end(), {"fc1_dgrad", "fc1_wgrad", "fc2_dgrad"});
  }
  return out;
}

std::string te_userbuffers_yaml(const sim::Workload& w, const nlohmann::json& params,
                                const std::vector<std::string>& header) {
  const std::vector<std::string> names = te_gemm_names(w);
  if (names.empty())
    throw std::invalid_argument(fmt::format("a '{}' workload has no TransformerEngine GEMM names (qkv_fprop, "
                                            "fc1_fprop, ...): export te-userbuffers for mlp_tpsp, attention_tpsp "
                                            "or transformer",
                                            sim::workload_kind_name(w.kind)));
  // Each name's own values (sim/schemes/te_userbuffers.hpp te_gemm_setting: "<name>.<knob>", else
  // the scalar knob): the resolution the scheme simulated.
  std::string out;
  for (const std::string& h : header) out += "# " + h + "\n";
  auto entry = [&](const std::string& name, const sim::TeGemmSetting& s, const std::string& note) {
    if (!note.empty()) out += "# " + note + "\n";
    out += name + ":\n";
    out += "  method: " + s.method + "\n";
    out += fmt::format("  num_sm: {}\n", s.num_sm);
    out += fmt::format("  cga_size: {}\n", s.cga_size);
    out += fmt::format("  set_sm_margin: {}\n", s.set_sm_margin ? 1 : 0);
    // add_ub: atomic GEMM is not supported for a bulk overlap.
    if (s.method != "bulk") out += fmt::format("  atomic_gemm: {}\n", s.atomic_gemm ? 1 : 0);
    if (s.method == "pipeline") out += fmt::format("  num_splits: {}\n", s.num_splits);
    if (s.method == "ring_exchange") out += fmt::format("  use_ce: {}\n", s.use_ce ? 1 : 0);
    out += "\n";
  };
  for (const std::string& name : names) {
    const sim::TeGemmSetting s = sim::te_gemm_setting(params, name);
    switch (sim::te_side(name)) {
      case sim::TeSide::all_gather:
        if (s.method == "bulk") {
          out += "# " + name + ": not overlapped in the modelled configuration (method bulk overlaps only the "
                                "column-parallel backward); TE's default for it is ring_exchange\n\n";
        } else {
          // add_ub refuses pipeline for an all-gather: TE runs every all-gather overlap as ring_exchange.
          entry(name, s,
                s.inherited_pipeline ? "pipeline cannot overlap an all-gather in TE (add_ub); its ring_exchange:" : "");
        }
        break;
      case sim::TeSide::reduce_scatter:
        if (s.method == "bulk")
          out += "# " + name + ": not overlapped in the modelled configuration; TE's default for it is pipeline\n\n";
        else entry(name, s, "");
        break;
      case sim::TeSide::column_dgrad:
        // A non-bulk dgrad entry overlaps dgrad's reduce-scatter inside the GEMM; TE then takes the wgrad
        // entry out (initialize_ub: dgrad_reduce_scatter_overlap) and it must not be given.
        entry(name, s, "");
        break;
      case sim::TeSide::column_wgrad:
        if (s.method == "bulk") entry(name, s, "");
        break;
    }
  }
  return out;
}

std::string te_undeployable(const sim::Workload& w, const nlohmann::json& params) {
  const std::vector<std::string> names = te_gemm_names(w);
  // Per side: the names unoverlapped (bulk) and those overlapped; a side must be one or the other.
  std::vector<std::string> off[3], on[3];
  for (const std::string& name : names) {
    const sim::TeGemmSetting s = sim::te_gemm_setting(params, name);
    if (s.inherited_pipeline)
      return fmt::format("method pipeline chunks {}'s all-gather, which TE runs as ring_exchange (add_ub refuses "
                         "pipeline for an all-gather): set {}.method",
                         name, name);
    int side = -1;
    switch (sim::te_side(name)) {
      case sim::TeSide::all_gather: side = 0; break;
      case sim::TeSide::reduce_scatter: side = 1; break;
      case sim::TeSide::column_dgrad: side = 2; break;
      case sim::TeSide::column_wgrad: break;  // follows its dgrad
    }
    if (side >= 0) (s.method == "bulk" ? off : on)[side].push_back(name);
  }
  static const char* const kWhy[3] = {
      "Megatron-LM gives every TE linear one ub_overlap_ag (--disable-tp-comm-overlap-ag turns off the fprop and "
      "dgrad all-gathers together) and a name left out of ub_cfgs runs TE's default ring_exchange",
      "Megatron-LM gives every TE linear one ub_overlap_rs (--disable-tp-comm-overlap-rs) and a name left out of "
      "ub_cfgs runs TE's default pipeline",
      "Megatron-LM switches every column-parallel dgrad at once (--tp-comm-overlap-rs-dgrad or the bulk "
      "dgrad/wgrad overlaps)"};
  for (int side = 0; side < 3; ++side)
    if (!off[side].empty() && !on[side].empty())
      return fmt::format("{} unoverlapped (bulk) but {} overlapped: {}", off[side].front(), on[side].front(), kWhy[side]);
  return {};
}

std::string megatron_flags(const sim::Workload& w, const nlohmann::json& params, const std::string& yaml_path) {
  // Per name (te_gemm_setting): the forward's all-gather (reduce-scatter) overlap is off when every
  // such name of the workload is bulk; the dgrad reduce-scatter overlap is on when a column dgrad is not.
  bool any_ag = false, any_rs = false, rs_dgrad = false;
  for (const std::string& name : te_gemm_names(w)) {
    const sim::TeGemmSetting s = sim::te_gemm_setting(params, name);
    const sim::TeSide side = sim::te_side(name);
    if (side == sim::TeSide::all_gather && name.ends_with("_fprop") && s.method != "bulk") any_ag = true;
    if (side == sim::TeSide::reduce_scatter && s.method != "bulk") any_rs = true;
    if (side == sim::TeSide::column_dgrad && s.method != "bulk") rs_dgrad = true;
  }
  std::string out = "--tp-comm-overlap --tp-comm-overlap-cfg " + yaml_path;
  if (!any_ag) out += " --disable-tp-comm-overlap-ag";
  if (!any_rs) out += " --disable-tp-comm-overlap-rs";
  if (rs_dgrad) out += " --tp-comm-overlap-rs-dgrad";
  return out;
}

std::string torchtitan_async_tp_flags() {
  return "[parallelism] enable_async_tensor_parallel = true (torchtitan job config; effective with torch.compile on)";
}

std::string nccl_tuner_collective(CollectivePrimitive p) {
  switch (p) {
    case CollectivePrimitive::all_reduce: return "allreduce";
    case CollectivePrimitive::reduce_scatter: return "reducescatter";
    case CollectivePrimitive::all_gather: return "allgather";
    case CollectivePrimitive::broadcast: return "broadcast";
    case CollectivePrimitive::reduce: return "reduce";
    case CollectivePrimitive::all_to_all: return "";
  }
  return "";
}

std::vector<CollectivePrimitive> nccl_tuner_primitives() {
  return {CollectivePrimitive::broadcast, CollectivePrimitive::reduce, CollectivePrimitive::all_gather,
          CollectivePrimitive::reduce_scatter, CollectivePrimitive::all_reduce};
}

// plugins/tuner/example/plugin.c pluginGetCollInfo sets *nChannels = 1 before it matches the rows and
// leaves NCCL's cost table (so its algorithm and protocol choice) as it is when none matches.
std::string nccl_tuner_uncovered_note() {
  return "a call no row covers (a size below the first row or above the last, or a collective not written) keeps "
         "NCCL's own algorithm and protocol, and the example plugin runs it on 1 channel";
}

std::string nccl_tuner_algorithm(NcclAlgorithm a) {
  switch (a) {
    case NcclAlgorithm::Tree: return "tree";
    case NcclAlgorithm::Ring: return "ring";
    case NcclAlgorithm::CollnetDirect: return "collnet_direct";
    case NcclAlgorithm::CollnetChain: return "collnet_chain";
    case NcclAlgorithm::NVLS: return "nvls";
    case NcclAlgorithm::NVLSTree: return "nvls_tree";
    case NcclAlgorithm::PAT: return "pat";
    case NcclAlgorithm::SendRecv: return "";
  }
  return "";
}

std::string nccl_tuner_protocol(NcclProtocol p) {
  switch (p) {
    case NcclProtocol::LL: return "ll";
    case NcclProtocol::LL128: return "ll128";
    case NcclProtocol::Simple: return "simple";
  }
  return "";
}

std::vector<NcclTunerRow> nccl_tuner_rows(CollectivePrimitive p, const std::vector<long long>& sizes,
                                          const std::vector<CollectivePlan>& plans, int nodes, int ranks) {
  std::vector<NcclTunerRow> out;
  const std::string coll = nccl_tuner_collective(p);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] <= 0) continue;  // nccl-tests' zero-byte row: no choice was made
    NcclTunerRow r;
    r.collective = coll;
    r.min_bytes = sizes[i];
    r.max_bytes = sizes[i];
    r.algorithm = nccl_tuner_algorithm(plans[i].algorithm);
    r.protocol = nccl_tuner_protocol(plans[i].protocol);
    r.channels = plans[i].channels > 0 ? plans[i].channels : -1;
    r.nodes = nodes;
    r.ranks = ranks;
    if (!out.empty() && out.back().algorithm == r.algorithm && out.back().protocol == r.protocol &&
        out.back().channels == r.channels) {
      out.back().max_bytes = r.max_bytes;
      continue;
    }
    if (!out.empty()) out.back().max_bytes = r.min_bytes - 1;  // the ranges tile the sizes between rows
    out.push_back(r);
  }
  return out;
}

std::string nccl_tuner_csv(const std::vector<NcclTunerRow>& rows, const std::vector<std::string>& header) {
  std::string out;
  for (const std::string& h : header) out += "# " + h + "\n";
  // What the plugin does outside the rows (plugins/tuner/example/plugin.c pluginGetCollInfo).
  out += "# " + nccl_tuner_uncovered_note() + ": sweep -b / -e over the smallest to the largest message the job sends\n";
  // The plugin's own header line, as a comment (plugins/tuner/example/README.md "Configuration File Format").
  out += "# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff\n";
  for (const NcclTunerRow& r : rows)
    out += fmt::format("{},{},{},{},{},{},{},{},-1,-1\n", r.collective, r.min_bytes, r.max_bytes, r.algorithm,
                       r.protocol, r.channels, r.nodes, r.ranks);
  return out;
}

std::string flashoverlap_gpu_token(const std::string& gpu_name) {
  if (gpu_name.find("RTX") != std::string::npos || gpu_name.find("GeForce") != std::string::npos) return "gefo";
  std::string token = gpu_name.substr(0, 4);
  for (char& c : token) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return token;
}

std::string flashoverlap_export_file(const std::string& given, const sim::GemmCollective& g, const std::string& gpu_name) {
  std::error_code ec;
  if (given.empty() || (given.back() != '/' && !std::filesystem::is_directory(given, ec))) return given;
  const std::string name = fmt::format("m{}n{}k{}_{}.json", g.m, g.n, g.k, flashoverlap_gpu_token(gpu_name));
  return (std::filesystem::path(given) / name).string();
}

std::optional<int> flashoverlap_algo_for(int tile_m, int tile_n, int swizzle) {
  // tool/generate_instances.py: per tile (128x128: 3 K/warp-K pairs; 128x256 and 256x128: 2, the
  // others excluded there) 3 stages x 6 swizzles, in tile order 128x128, 128x256, 256x128.
  static const int kSwizzles[] = {1, 2, 3, 4, 6, 8};
  const int* at = std::find(std::begin(kSwizzles), std::end(kSwizzles), swizzle);
  if (at == std::end(kSwizzles)) return std::nullopt;
  int first = -1;
  if (tile_m == 128 && tile_n == 128) first = 0;
  else if (tile_m == 128 && tile_n == 256) first = 54;
  else if (tile_m == 256 && tile_n == 128) first = 78;
  if (first < 0) return std::nullopt;
  return first + static_cast<int>(at - std::begin(kSwizzles));
}

nlohmann::ordered_json flashoverlap_export(const sim::WaveGroupTuneResult& r, const sim::GemmCollective& g, int ranks,
                                           int swizzle, std::optional<int> algo, std::vector<std::string>& warnings) {
  const std::optional<int> derived = flashoverlap_algo_for(r.plan.tile_m, r.plan.tile_n, swizzle);
  if (!algo && !derived)
    throw std::invalid_argument(fmt::format(
        "FlashOverlap has no kernel instance for the {}x{} tile with swizzle {} (its instances: 128x128, 128x256, "
        "256x128 tiles, swizzles 1, 2, 3, 4, 6, 8; tool/generate_instances.py): give --algo N, the index of the "
        "instance to run in its configs/AlgoDict.pt",
        r.plan.tile_m, r.plan.tile_n, swizzle));
  nlohmann::ordered_json j = sim::flashoverlap_config(r, g, swizzle, algo ? algo : derived);
  nlohmann::ordered_json& meta = j["overlap_sim"];
  meta["dtype"] = dtype_name(g.dtype);
  // What FlashOverlap's kernels compute in, whatever the dtype tuned for (its GEMMs are cutlass::half_t).
  meta["kernel_dtype"] = "fp16";
  meta["primitive"] = sim::primitive_name(g.primitive);
  meta["ranks"] = ranks;
  meta["note"] = algo ? "written by overlap-sim tune --export flashoverlap; Algo as given (--algo)"
                      : fmt::format("written by overlap-sim tune --export flashoverlap; Algo {} is FlashOverlap's "
                                    "{}x{}x32 instance with 3 stages and swizzle {} (tool/generate_instances.py "
                                    "order); its tune/profile_config.py may time another of the same tile faster",
                                    *derived, r.plan.tile_m, r.plan.tile_n, swizzle);
  if (g.dtype != DType::fp16)
    warnings.push_back(fmt::format("FlashOverlap's kernels are fp16 only (cutlass::half_t GEMMs; its tune scripts "
                                   "time torch.float16): this configuration was tuned for {} GEMM timings; tune with "
                                   "--dtype fp16 for what it runs",
                                   dtype_name(g.dtype)));
  return j;
}

}  // namespace overlap::tools
