#pragma once
// The hardware profile's schema: one row per key (its dotted path, the struct member it fills, the
// check the loader applies, the range, a one-line meaning and where the figure comes from). The
// loader (profile_loader.cpp), the JSON writer (profile_json.cpp), the calibration's YAML writer
// (calibrate/core/profile_writer.cpp), `overlap-sim profile show` and the generated reference
// (tools/docgen.cpp) all read these rows, so a key's name and range are written here only.
//
// To add a key: add the member to its struct in hardware_profile.hpp (its default is the member's
// initialiser), add one row below and list it in its section's array; the allowed-key lists, the
// JSON and YAML outputs and the reference follow. Keys whose value is not one scalar member (maps by
// dtype or primitive, NCCL's latency table, curves) have a row too (member std::monostate), and the
// loader's and writers' own code for them uses the row's name and range.
//
// Header-only data: the device-only build compiles the calibration's profile writer without the
// rest of cost_model.
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cost_model/hardware_profile.hpp"
#include "cost_model/input_ranges.hpp"

namespace overlap::profile_schema {

enum class Check : std::uint8_t {
  none,           // any string or bool (the loader may check it further, e.g. a name from a list)
  range,          // inside *range
  fraction,       // a fraction in (0, 1]
  zero_or_range,  // 0 = not given (the model leaves it out), else inside *range
};

// The member a row fills in its section's struct S; monostate: read and written by the section's
// own code (a map, a table, an enum or a value stored elsewhere), which names the row.
template <class S>
using Member = std::variant<std::monostate, int S::*, double S::*, std::int64_t S::*, bool S::*, std::string S::*,
                            std::map<std::string, double> S::*>;

template <class S>
struct Key {
  // The dotted path from the profile's top; <class>, <transport>, <dtype>, <primitive>, [] stand
  // for any link class, transport, dtype, collective primitive or list element.
  std::string_view path;
  Member<S> member;
  Check check = Check::none;
  const InputRange* range = nullptr;
  bool required = false;
  std::string_view type;  // for the reference where no member says it ("map", "string", ...)
  std::string_view doc;
  std::string_view source;

  // The key inside its section (the last path component).
  constexpr std::string_view name() const { return path.substr(path.rfind('.') + 1); }
  std::string name_str() const { return std::string(name()); }
};

// True when `value` is one the loader accepts for this key's range check (a fraction check: (0, 1]);
// `Row` is a Key<S> or a KeyInfo.
template <class Row>
bool loader_accepts(const Row& k, double value) {
  if (!std::isfinite(value)) return false;
  if (k.check == Check::fraction) return value > 0 && value <= 1;
  if (k.check == Check::zero_or_range && value == 0) return true;
  if (!k.range) return true;
  return value >= k.range->min && value <= k.range->max && (!k.range->integer || std::floor(value) == value);
}

// ---- top level
inline constexpr Key<HardwareProfile> name{"name", &HardwareProfile::name, Check::none, nullptr, false, "",
                                           "the profile's name (results carry it)", ""};
inline constexpr Key<HardwareProfile> description{"description", &HardwareProfile::description, Check::none, nullptr,
                                                  false, "", "one line on what it models", ""};
inline constexpr Key<HardwareProfile> gpu{"gpu", {}, Check::none, nullptr, true, "map", "the GPU", ""};
inline constexpr Key<HardwareProfile> fabric{"fabric", {}, Check::none, nullptr, true, "map", "GPUs and links", ""};
inline constexpr Key<HardwareProfile> comm{"comm", {}, Check::none, nullptr, false, "map",
                                           "the communication library", ""};
inline constexpr Key<HardwareProfile> launch{"launch", {}, Check::none, nullptr, false, "map",
                                             "kernel launch and host costs", ""};
inline constexpr Key<HardwareProfile> transports{"transports", {}, Check::none, nullptr, false, "map",
                                                 "how bytes move between GPUs", ""};
inline constexpr Key<HardwareProfile> curves{"curves", {}, Check::none, nullptr, false, "map",
                                             "calibrated bandwidth curves by <transport>.<class> or primitive",
                                             "calibrate/ or nccl-tests output"};
inline constexpr Key<HardwareProfile> gemm_profiles{"gemm_profiles", {}, Check::none, nullptr, false, "list",
                                                    "measured GEMMs", "calibrate/ gemm runs"};
inline constexpr Key<HardwareProfile> placeholders{
    "placeholders", {}, Check::none, nullptr, false, "map",
    "guessed values (neither published nor calibrated) by key path, each with its plausible range; `run` names one "
    "whose range changes the schemes' ranking",
    "the profile's author"};
inline constexpr std::array kTop = {&name, &description, &gpu, &fabric, &comm, &launch, &transports, &curves,
                                    &gemm_profiles, &placeholders};

// ---- gpu (GpuSpec; the meaning of each member is commented there)
namespace gpu_keys {
using K = Key<GpuSpec>;
inline constexpr K name{"gpu.name", &GpuSpec::name, Check::none, nullptr, false, "", "the GPU's name",
                        "cudaGetDeviceProperties"};
inline constexpr K sm_count{"gpu.sm_count", &GpuSpec::sm_count, Check::range, &ranges::sm_count, true, "",
                            "streaming multiprocessors", "datasheet; device attribute multiProcessorCount"};
inline constexpr K gemm_ctas_per_sm{"gpu.gemm_ctas_per_sm", &GpuSpec::gemm_ctas_per_sm, Check::range,
                                    &ranges::ctas_per_sm, false, "", "GEMM CTAs resident per SM",
                                    "CUTLASS/cuBLAS big tiles: 1"};
inline constexpr K clock_mhz{"gpu.clock_mhz", &GpuSpec::clock_mhz, Check::range, &ranges::clock_mhz, false, "",
                             "SM clock, informational (0 = unknown)", "device attribute clockRate"};
inline constexpr K peak_clock_mhz{"gpu.peak_clock_mhz", &GpuSpec::peak_clock_mhz, Check::range, &ranges::clock_mhz,
                                  false, "",
                                  "SM clock the compute rates hold at (peak_tflops' clock); 0 = not given",
                                  "datasheet peak / (FLOP per clock): H100 SXM 1830, A100 1410 (glennklockwood.com, Peak FLOPS)"};
inline constexpr K sustained_clock_mhz{
    "gpu.sustained_clock_mhz", &GpuSpec::sustained_clock_mhz, Check::range, &ranges::clock_mhz, false, "",
    "SM clock the job sustains under its power limit: GEMM and attention rates scale by it / peak_clock_mhz; 0 = no "
    "scaling",
    "nvidia-smi clocks.sm during the job; A100 1305 at 400 W (NVIDIA's HPL Rpeak, glennklockwood.com)"};
inline constexpr K peak_tflops{"gpu.peak_tflops", &GpuSpec::peak_tflops, Check::range,
                               &ranges::peak_tflops, false, "", "dense tensor-core peak per dtype (fp8, fp16, bf16, fp32)",
                               "datasheet (facts.md)"};
inline constexpr K gemm_efficiency{"gpu.gemm_efficiency", &GpuSpec::gemm_efficiency, Check::fraction, nullptr,
                                   false, "", "fraction of peak a large compute-bound GEMM reaches", "placeholder"};
inline constexpr K hbm_bandwidth_gbps{"gpu.hbm_bandwidth_gbps", &GpuSpec::hbm_bandwidth_gbps,
                                      Check::zero_or_range, &ranges::bandwidth_gbps, false, "",
                                      "HBM bandwidth (0 = no memory model)", "datasheet; calibrate/ hbm_stream"};
inline constexpr K hbm_efficiency{"gpu.hbm_efficiency", &GpuSpec::hbm_efficiency, Check::fraction, nullptr, false,
                                  "", "fraction of HBM bandwidth a streaming kernel reaches",
                                  "placeholder; 1 when hbm_stream measured the rate"};
inline constexpr K hbm_latency_us{"gpu.hbm_latency_us", &GpuSpec::hbm_latency_us, Check::range,
                                  &ranges::latency_us, false, "", "fixed ramp and drain of a memory-bound kernel",
                                  "calibrate/ hbm_stream line fit"};
inline constexpr K hbm_sm_gbps{"gpu.hbm_sm_gbps", &GpuSpec::hbm_sm_gbps, Check::zero_or_range,
                               &ranges::bandwidth_gbps, false, "", "streaming rate one SM sustains (0 = no cap)",
                               "calibrate/ hbm_stream on k SMs"};
inline constexpr K copy_engines{"gpu.copy_engines", &GpuSpec::copy_engines, Check::range, &ranges::copy_engines,
                                false, "", "async copy engines usable for transfers",
                                "device attribute asyncEngineCount"};
inline constexpr K min_sm_partition{"gpu.min_sm_partition", &GpuSpec::min_sm_partition, Check::range,
                                    &ranges::sm_count, false, "", "green-context SM granularity",
                                    "green context minSmPartitionSize (8 on Hopper)"};
inline constexpr K gemm_tile_us{"gpu.gemm_tile_us", &GpuSpec::gemm_tile_us, Check::zero_or_range,
                                &ranges::gemm_tile_us, false, "",
                                "one 128x128x1024 tile on one SM (0 = from peak_tflops)",
                                "calibrate/ gemm_tile or the CTA roofline fit"};
inline constexpr K gemm_sm_load_gbps{"gpu.gemm_sm_load_gbps", &GpuSpec::gemm_sm_load_gbps, Check::zero_or_range,
                                     &ranges::bandwidth_gbps, false, "",
                                     "CTA roofline: operand load rate per SM (0 = not modelled)",
                                     "calibrate/ CTA roofline fit"};
inline constexpr K gemm_cta_overhead_us{"gpu.gemm_cta_overhead_us", &GpuSpec::gemm_cta_overhead_us, Check::range,
                                        &ranges::latency_us, false, "", "CTA roofline: fixed time per CTA",
                                        "calibrate/ CTA roofline fit"};
inline constexpr K l2_bytes{"gpu.l2_bytes", &GpuSpec::l2_bytes, Check::range, &ranges::l2_bytes, false, "",
                            "L2 capacity (0 = use gemm_l2_reuse)", "device attribute l2CacheSize"};
inline constexpr K hbm_bytes{"gpu.hbm_bytes", &GpuSpec::hbm_bytes, Check::range, &ranges::hbm_bytes, false, "",
                             "device memory capacity (0 = not given): a training step's memory per GPU is checked against it",
                             "datasheet; device attribute totalGlobalMem"};
inline constexpr K gemm_comm_interference{"gpu.gemm_comm_interference", &GpuSpec::gemm_comm_interference,
                                          Check::range, &ranges::factor, false, "",
                                          "GEMM slowdown per fraction of SMs running communication",
                                          "placeholder; calibrate/ interference_sm_copy"};
inline constexpr K gemm_l2_reuse{"gpu.gemm_l2_reuse", &GpuSpec::gemm_l2_reuse, Check::range, &ranges::l2_reuse,
                                 false, "", "L2 reuse of GEMM operands", "placeholder"};
inline constexpr K gemm_full_rate_sms{"gpu.gemm_full_rate_sms", &GpuSpec::gemm_full_rate_sms, Check::range,
                                      &ranges::full_rate_sms, false, "",
                                      "SMs of one GPU that run GEMM tiles at full rate (0 = not modelled)",
                                      "calibrate/ gemm_sm (green contexts)"};
}  // namespace gpu_keys
inline constexpr std::array kGpu = {
    &gpu_keys::name,           &gpu_keys::sm_count,          &gpu_keys::gemm_ctas_per_sm,
    &gpu_keys::clock_mhz,      &gpu_keys::peak_clock_mhz,    &gpu_keys::sustained_clock_mhz, &gpu_keys::peak_tflops,       &gpu_keys::gemm_efficiency,
    &gpu_keys::hbm_bandwidth_gbps, &gpu_keys::hbm_efficiency, &gpu_keys::hbm_latency_us,
    &gpu_keys::hbm_sm_gbps,    &gpu_keys::copy_engines,      &gpu_keys::min_sm_partition,
    &gpu_keys::gemm_tile_us,   &gpu_keys::gemm_sm_load_gbps, &gpu_keys::gemm_cta_overhead_us,
    &gpu_keys::l2_bytes,       &gpu_keys::gemm_comm_interference, &gpu_keys::gemm_l2_reuse,
    &gpu_keys::gemm_full_rate_sms, &gpu_keys::hbm_bytes};

// ---- fabric (FabricSpec, LinkClass, explicit nodes and edges)
namespace fabric_keys {
using K = Key<FabricSpec>;
inline constexpr K topology{"fabric.topology", &FabricSpec::topology, Check::none, nullptr, false, "",
                            "preset: nvswitch, full_mesh, pcie, multi_node, virtual or explicit", ""};
inline constexpr K num_gpus{"fabric.num_gpus", &FabricSpec::num_gpus, Check::range, &ranges::num_gpus, true, "",
                            "GPUs (ranks) of the node", ""};
inline constexpr K gpus_per_node{"fabric.gpus_per_node", &FabricSpec::gpus_per_node, Check::range,
                                 &ranges::gpus_per_group, false, "", "multi_node: GPUs per node (0 = one node)", ""};
inline constexpr K gpus_per_numa{"fabric.gpus_per_numa", &FabricSpec::gpus_per_numa, Check::range,
                                 &ranges::gpus_per_group, false, "", "pcie: GPUs per NUMA node (0 = one root)", ""};
inline constexpr K virtual_link{"fabric.virtual_link", &FabricSpec::virtual_link, Check::none, nullptr, false, "",
                                "virtual: rank-to-rank copies through HBM (d2d) or pinned host memory (host)", ""};
inline constexpr K rails{"fabric.rails", &FabricSpec::rails, Check::none, nullptr, false, "",
                         "multi_node: NICs on rail switches joined by a spine", ""};
inline constexpr K nics_per_node{"fabric.nics_per_node", &FabricSpec::nics_per_node, Check::range,
                                 &ranges::nics_per_node, false, "",
                                 "multi_node: NICs per node, GPUs sharing them evenly (0 = one per GPU)",
                                 "NVIDIA DGX H100 / A100 user guides: 8 compute NICs per node"};
inline constexpr K nic_efficiency{"fabric.nic_efficiency", &FabricSpec::nic_efficiency, Check::fraction, nullptr, false,
                                  "", "multi_node: fraction of a NIC's line rate NCCL reaches",
                                  "NVIDIA/nccl-tests issue 290: 46-48 of 50 GB/s per NDR NIC"};
inline constexpr K nodes_per_leaf{"fabric.nodes_per_leaf", &FabricSpec::nodes_per_leaf, Check::range,
                                  &ranges::nodes_per_leaf, false, "",
                                  "multi_node: nodes under one leaf (rail) switch; 0 = every node under one switch",
                                  "NVIDIA DGX SuperPOD reference architecture: 32 nodes a scalable unit"};
inline constexpr K switch_latency_us{"fabric.switch_latency_us", &FabricSpec::switch_latency_us, Check::range,
                                     &ranges::latency_us, false, "",
                                     "multi_node: one switch's port-to-port latency (the spine adds two)",
                                     "switch datasheet (NDR Quantum-2: 0.13-0.33 us reported)"};
inline constexpr K links{"fabric.links", {}, Check::none, nullptr, true, "map", "link classes by name", ""};
inline constexpr K nodes{"fabric.nodes", {}, Check::range, &ranges::fabric_nodes, false, "list",
                         "explicit: the graph's nodes", ""};
inline constexpr K edges{"fabric.edges", {}, Check::range, &ranges::fabric_nodes, false, "list",
                         "explicit: the graph's edges", ""};
}  // namespace fabric_keys
inline constexpr std::array kFabric = {&fabric_keys::topology,     &fabric_keys::num_gpus, &fabric_keys::gpus_per_node,
                                       &fabric_keys::gpus_per_numa, &fabric_keys::virtual_link, &fabric_keys::rails,
                                       &fabric_keys::nics_per_node, &fabric_keys::nic_efficiency,
                                       &fabric_keys::nodes_per_leaf, &fabric_keys::switch_latency_us,
                                       &fabric_keys::links,        &fabric_keys::nodes,    &fabric_keys::edges};

namespace link_keys {
using K = Key<LinkClass>;
inline constexpr K bandwidth_gbps{"fabric.links.<class>.bandwidth_gbps", &LinkClass::bandwidth_gbps, Check::range,
                                  &ranges::bandwidth_gbps, true, "", "per direction, per GPU port",
                                  "datasheet (facts.md); calibrate/ transfer, largest copy"};
inline constexpr K latency_us{"fabric.links.<class>.latency_us", &LinkClass::latency_us, Check::range,
                              &ranges::latency_us, false, "", "one-way latency of a transfer",
                              "calibrate/ transfer, smallest copy"};
}  // namespace link_keys
inline constexpr std::array kLink = {&link_keys::bandwidth_gbps, &link_keys::latency_us};

namespace node_keys {
using K = Key<FabricNode>;
inline constexpr K name{"fabric.nodes[].name", &FabricNode::name, Check::none, nullptr, true, "", "node name", ""};
inline constexpr K kind{"fabric.nodes[].kind", {}, Check::none, nullptr, true, "string",
                        "gpu, nvswitch, pcie_switch, host, nic, network_switch or gpu_memory", ""};
inline constexpr K gpu{"fabric.nodes[].gpu", &FabricNode::gpu, Check::none, nullptr, false, "",
                       "GPU index of a gpu node", ""};
}  // namespace node_keys
inline constexpr std::array kNode = {&node_keys::name, &node_keys::kind, &node_keys::gpu};

namespace edge_keys {
using K = Key<FabricEdge>;
inline constexpr K from{"fabric.edges[].from", {}, Check::none, nullptr, true, "string", "node name", ""};
inline constexpr K to{"fabric.edges[].to", {}, Check::none, nullptr, true, "string", "node name", ""};
inline constexpr K link_class{"fabric.edges[].link_class", &FabricEdge::link_class, Check::none, nullptr, true, "",
                              "a class under fabric.links", ""};
inline constexpr K bandwidth_gbps{"fabric.edges[].bandwidth_gbps", &FabricEdge::bandwidth_gbps, Check::range,
                                  &ranges::bandwidth_gbps, false, "", "this edge's capacity (default: its class's)",
                                  ""};
inline constexpr K latency_us{"fabric.edges[].latency_us", &FabricEdge::latency_us, Check::range,
                              &ranges::latency_us, false, "", "this edge's latency (default: its class's)", ""};
inline constexpr K bidirectional{"fabric.edges[].bidirectional", {}, Check::none, nullptr, false, "bool",
                                 "also the edge back (default true)", ""};
}  // namespace edge_keys
inline constexpr std::array kEdge = {&edge_keys::from,           &edge_keys::to,         &edge_keys::link_class,
                                     &edge_keys::bandwidth_gbps, &edge_keys::latency_us, &edge_keys::bidirectional};

// ---- comm (CommSpec; NCCL's tuning constants, facts.md "NCCL on 8xH100 NVSwitch")
namespace comm_keys {
using K = Key<CommSpec>;
inline constexpr K library{"comm.library", &CommSpec::library, Check::none, nullptr, false, "", "nccl or rccl", ""};
inline constexpr K algorithm{"comm.algorithm", {}, Check::none, nullptr, false, "string",
                             "force one NCCL algorithm (auto = NCCL's choice)", "NCCL_ALGO"};
inline constexpr K protocol{"comm.protocol", {}, Check::none, nullptr, false, "string",
                            "force one NCCL protocol (auto = NCCL's choice)", "NCCL_PROTO"};
inline constexpr K arch{"comm.arch", {}, Check::none, nullptr, false, "string",
                        "GPU generation of NCCL's constants (volta, ampere, hopper, blackwell)", "NCCL tuning.cc"};
inline constexpr K nvlink_sharp{"comm.nvlink_sharp", &CommSpec::nvlink_sharp, Check::none, nullptr, false, "",
                                "the NVSwitch reduces (NVLS)", "H100/H200 HGX"};
inline constexpr K collnet{"comm.collnet", &CommSpec::collnet, Check::none, nullptr, false, "",
                           "the network switches reduce (SHARP)", ""};
inline constexpr K channels{"comm.channels", &CommSpec::channels, Check::range, &ranges::channels, false, "",
                            "most collective channels (one SM each)", "NCCL_MAX_NCHANNELS"};
inline constexpr K nvls_channels{"comm.nvls_channels", &CommSpec::nvls_channels, Check::range, &ranges::channels,
                                 false, "", "channels of an NVLS collective", "NCCL_NVLS_NCHANNELS (16 on Hopper)"};
inline constexpr K p2p_channels{"comm.p2p_channels", &CommSpec::p2p_channels, Check::range, &ranges::channels, false,
                                "", "channels of send/recv", ""};
inline constexpr K bandwidth_efficiency{"comm.bandwidth_efficiency", &CommSpec::bandwidth_efficiency,
                                        Check::fraction, nullptr, false, "",
                                        "ring bus bandwidth as a fraction of the link rate",
                                        "NCCL's NVLink 4 model, 20.6 of 25 GB/s per link"};
inline constexpr K latency_us{"comm.latency_us", {}, Check::range, &ranges::latency_us, false, "number",
                              "NCCL's latency per algorithm, protocol and term (base, nvlink, pci, net)",
                              "NCCL tuning.cc"};
inline constexpr K ll_max_bw_gbps{"comm.ll_max_bw_gbps", {}, Check::range, &ranges::bandwidth_gbps, false, "number",
                                  "LL bandwidth cap", "NCCL tuning.cc llMaxBws"};
inline constexpr K ring_ll128_channel_gbps{"comm.ring_ll128_channel_gbps", {}, Check::range,
                                           &ranges::bandwidth_gbps, false, "number", "Ring LL128 cap per channel",
                                           "NCCL tuning.cc perChMaxRingLL128Bws"};
inline constexpr K tree_channel_gbps{"comm.tree_channel_gbps", {}, Check::range, &ranges::bandwidth_gbps, false,
                                     "number", "Tree cap per channel", "NCCL tuning.cc perChMaxTreeBws"};
inline constexpr K tree_ll128_channel_gbps{"comm.tree_ll128_channel_gbps", {}, Check::range,
                                           &ranges::bandwidth_gbps, false, "number", "Tree LL128 cap per channel",
                                           "NCCL tuning.cc perChMaxTreeLL128Bws"};
inline constexpr K nvls_tree_channel_gbps{"comm.nvls_tree_channel_gbps", {}, Check::zero_or_range,
                                          &ranges::bandwidth_gbps, false, "number", "NVLSTree cap per channel",
                                          "NCCL tuning.cc"};
inline constexpr K nvls_efficiency{"comm.nvls_efficiency", {}, Check::range, &ranges::factor, false, "number",
                                   "NVLS bandwidth factor", "NCCL tuning.cc"};
inline constexpr K link_kinds{"comm.link_kinds", {}, Check::none, nullptr, false, "string",
                              "NCCL latency class (nvlink, pci, net) per link class", ""};
inline constexpr K base_latency_us{"comm.base_latency_us", {}, Check::range, &ranges::latency_us, false, "number",
                                   "sets comm.latency_us.Ring.Simple.base", ""};
inline constexpr K step_latency_us{"comm.step_latency_us", {}, Check::range, &ranges::latency_us, false, "number",
                                   "sets every term of comm.latency_us.Ring.Simple but base", ""};
}  // namespace comm_keys

// The tuner's per-node-count bandwidth caps a comm key sets (one value for all three classes).
struct TunerCap {
  const Key<CommSpec>* key;
  std::array<double, 3> NcclTunerConstants::*caps;
};
inline constexpr std::array kTunerCaps = {
    TunerCap{&comm_keys::ll_max_bw_gbps, &NcclTunerConstants::ll_max_bw_gbps},
    TunerCap{&comm_keys::ring_ll128_channel_gbps, &NcclTunerConstants::ring_ll128_channel_gbps},
    TunerCap{&comm_keys::tree_channel_gbps, &NcclTunerConstants::tree_channel_gbps},
    TunerCap{&comm_keys::tree_ll128_channel_gbps, &NcclTunerConstants::tree_ll128_channel_gbps},
    TunerCap{&comm_keys::nvls_tree_channel_gbps, &NcclTunerConstants::nvls_tree_channel_gbps}};
inline constexpr std::array kComm = {
    &comm_keys::library,          &comm_keys::algorithm,         &comm_keys::protocol,
    &comm_keys::arch,             &comm_keys::nvlink_sharp,      &comm_keys::collnet,
    &comm_keys::channels,         &comm_keys::nvls_channels,     &comm_keys::p2p_channels,
    &comm_keys::bandwidth_efficiency, &comm_keys::latency_us,    &comm_keys::ll_max_bw_gbps,
    &comm_keys::ring_ll128_channel_gbps, &comm_keys::tree_channel_gbps, &comm_keys::tree_ll128_channel_gbps,
    &comm_keys::nvls_tree_channel_gbps, &comm_keys::nvls_efficiency, &comm_keys::link_kinds,
    &comm_keys::base_latency_us,  &comm_keys::step_latency_us};

// ---- launch (LaunchSpec)
namespace launch_keys {
using K = Key<LaunchSpec>;
inline constexpr K host_us{"launch.host_us", &LaunchSpec::host_us, Check::range, &ranges::latency_us, false, "",
                           "host time per kernel launch",
                           "pegainfer blog \"From Launch Overhead to CUDA Graph\"; calibrate/ launch"};
inline constexpr K gap_us{"launch.gap_us", &LaunchSpec::gap_us, Check::range, &ranges::latency_us, false, "",
                          "device gap between dependent kernels",
                          "NVIDIA blog \"Getting Started with CUDA Graphs\"; calibrate/ launch"};
inline constexpr K graph_gap_us{"launch.graph_gap_us", &LaunchSpec::graph_gap_us, Check::range, &ranges::latency_us,
                                false, "", "the same gap under CUDA Graphs",
                                "NVIDIA blog \"Getting Started with CUDA Graphs\"; calibrate/ launch"};
inline constexpr K cuda_graphs{"launch.cuda_graphs", &LaunchSpec::cuda_graphs, Check::none, nullptr, false, "",
                               "launch as CUDA Graphs", ""};
inline constexpr K collective_host_us{"launch.collective_host_us", &LaunchSpec::collective_host_us, Check::range,
                                      &ranges::latency_us, false, "",
                                      "host time of a collective beyond one launch", "calibrate/ launch"};
inline constexpr K collective_host_us_by_primitive{"launch.collective_host_us_by_primitive", {},
                                                   Check::range, &ranges::latency_us, false, "number",
                                                   "collective_host_us per collective primitive", "calibrate/ launch collective_in_stream"};
inline constexpr K shared_host{"launch.shared_host", &LaunchSpec::shared_host, Check::none, nullptr, false, "",
                               "one host thread issues every rank's work", ""};
inline constexpr K sync_host_us{"launch.sync_host_us", &LaunchSpec::sync_host_us, Check::range, &ranges::latency_us,
                                false, "", "host time of one dependency between streams",
                                "calibrate/ launch stream_dependency"};
}  // namespace launch_keys
inline constexpr std::array kLaunch = {&launch_keys::host_us,      &launch_keys::gap_us,
                                       &launch_keys::graph_gap_us, &launch_keys::cuda_graphs,
                                       &launch_keys::collective_host_us, &launch_keys::collective_host_us_by_primitive,
                                       &launch_keys::shared_host,  &launch_keys::sync_host_us};

// ---- transports (TransportSpec, one map per Transport)
namespace transport_keys {
using K = Key<TransportSpec>;
inline constexpr K latency_us{"transports.<transport>.latency_us", &TransportSpec::latency_us, Check::range,
                              &ranges::latency_us, false, "", "per-transfer cost on top of the route's latency",
                              "facts.md \"NVIDIA H100 SXM\"; calibrate/ transfer"};
inline constexpr K efficiency{"transports.<transport>.efficiency", &TransportSpec::efficiency, Check::fraction,
                              nullptr, false, "", "fraction of the narrowest link's bandwidth reached",
                              "facts.md \"NVIDIA H100 SXM\""};
inline constexpr K cta_gbps{"transports.sm_copy.cta_gbps", &TransportSpec::cta_gbps, Check::zero_or_range,
                            &ranges::bandwidth_gbps, false, "", "bandwidth one CTA of an SM copy moves (0 = no limit)",
                            "calibrate/ transfer sm_copy.d2d"};
}  // namespace transport_keys
// cta_gbps is sm_copy's only: the first transport_key_count(t) rows are transport t's.
inline constexpr std::array kTransport = {&transport_keys::latency_us, &transport_keys::efficiency,
                                          &transport_keys::cta_gbps};
inline int transport_key_count(Transport t) { return t == Transport::sm_copy ? 3 : 2; }

// ---- curves.<key>
namespace curve_keys {
using K = Key<BandwidthCurve>;
inline constexpr K points{"curves.<curve>.points", {}, Check::range, &ranges::curve_points, false, "list",
                          "[bytes, time_us] pairs", "calibrate/ transfer, nccl, collective"};
inline constexpr K alpha_us{"curves.<curve>.alpha_us", {}, Check::range, &ranges::curve_us, false, "number",
                            "alpha-beta form: fixed time", ""};
inline constexpr K beta_gbps{"curves.<curve>.beta_gbps", {}, Check::range, &ranges::bandwidth_gbps, false, "number",
                             "alpha-beta form: bandwidth", ""};
inline constexpr K nccl_tests{"curves.<curve>.nccl_tests", {}, Check::none, nullptr, false, "string",
                              "an nccl-tests output file (relative to the profile)", "nccl-tests"};
inline constexpr K in_place{"curves.<curve>.in_place", {}, Check::none, nullptr, false, "bool",
                            "nccl_tests: take the in-place columns", ""};
// The two numbers of each [bytes, time_us] point (not keys of their own: outside kCurve).
inline constexpr K point_bytes{"curves.<curve>.points[][0]", {}, Check::range, &ranges::curve_bytes, true, "int",
                               "a point's message size", "nccl-tests size column; calibrate/ transfer bytes"};
inline constexpr K point_us{"curves.<curve>.points[][1]", {}, Check::range, &ranges::curve_us, true, "number",
                            "a point's time (> 0)", "median time of the calibration or nccl-tests row"};
}  // namespace curve_keys
inline constexpr std::array kCurve = {&curve_keys::points, &curve_keys::alpha_us, &curve_keys::beta_gbps,
                                      &curve_keys::nccl_tests, &curve_keys::in_place};

// ---- gemm_profiles[] (GemmProfileEntry)
namespace gemm_keys {
using K = Key<GemmProfileEntry>;
inline constexpr K m{"gemm_profiles[].m", &GemmProfileEntry::m, Check::range, &ranges::gemm_dim, true, "", "rows", ""};
inline constexpr K n{"gemm_profiles[].n", &GemmProfileEntry::n, Check::range, &ranges::gemm_dim, true, "", "columns",
                     ""};
inline constexpr K k{"gemm_profiles[].k", &GemmProfileEntry::k, Check::range, &ranges::gemm_dim, true, "",
                     "reduction dimension", ""};
inline constexpr K dtype{"gemm_profiles[].dtype", {}, Check::none, nullptr, false, "string",
                         "fp8, fp16, bf16 or fp32 (default bf16)", ""};
inline constexpr K tile_m{"gemm_profiles[].tile_m", &GemmProfileEntry::tile_m, Check::range, &ranges::tile, false, "",
                          "tile rows", "cuBLASLt CUBLASLT_ALGO_CONFIG_TILE_ID"};
inline constexpr K tile_n{"gemm_profiles[].tile_n", &GemmProfileEntry::tile_n, Check::range, &ranges::tile, false, "",
                          "tile columns", "cuBLASLt CUBLASLT_ALGO_CONFIG_TILE_ID"};
inline constexpr K duration_us{"gemm_profiles[].duration_us", &GemmProfileEntry::duration_us, Check::range,
                               &ranges::latency_us, true, "", "measured duration (> 0)", "calibrate/ gemm"};
inline constexpr K wave_end_us{"gemm_profiles[].wave_end_us", {}, Check::range, &ranges::latency_us, false, "list",
                               "end of each wave", "per-tile timestamps"};
}  // namespace gemm_keys
inline constexpr std::array kGemm = {&gemm_keys::m,      &gemm_keys::n,      &gemm_keys::k,
                                     &gemm_keys::dtype,  &gemm_keys::tile_m, &gemm_keys::tile_n,
                                     &gemm_keys::duration_us, &gemm_keys::wave_end_us};

// ---- placeholders.<key> (PlaceholderRange): <key> is a numeric key's dotted path in this profile
namespace placeholder_keys {
using K = Key<PlaceholderRange>;
inline constexpr K range{"placeholders.<key>.range", {}, Check::none, nullptr, true, "list",
                         "[low, high]: the values a measurement could plausibly give (low < high, each a value the key "
                         "accepts)",
                         "the profile's author, with source"};
inline constexpr K source{"placeholders.<key>.source", &PlaceholderRange::source, Check::none, nullptr, true, "",
                          "where the range comes from (a measurement, a datasheet ratio, another GPU's figure)", ""};
}  // namespace placeholder_keys
inline constexpr std::array kPlaceholder = {&placeholder_keys::range, &placeholder_keys::source};
// The sensitivity check re-runs the schemes twice per placeholder: at most this many per profile.
inline constexpr std::size_t kMaxPlaceholders = 8;

// The names of a section's keys, in the table's order (the loader's allowed keys).
template <class Array>
std::vector<std::string> names_of(const Array& keys, std::size_t count = static_cast<std::size_t>(-1)) {
  std::vector<std::string> out;
  for (const auto* k : keys) {
    if (out.size() == count) break;
    out.push_back(k->name_str());
  }
  return out;
}

// Every row as plain data, for the reference (tools/docgen.cpp) and lookups by path.
struct KeyInfo {
  std::string_view path;
  std::string_view type;  // int, number, bool, string, map, list
  Check check = Check::none;
  const InputRange* range = nullptr;
  bool required = false;
  std::string_view doc;
  std::string_view source;
};
std::vector<KeyInfo> all_keys();
// The row a concrete key path belongs to ("fabric.links.nvlink.bandwidth_gbps" ->
// "fabric.links.<class>.bandwidth_gbps"); nullptr when none.
const KeyInfo* find_key(const std::string& path);
// The unit of a row: its range's, or "fraction" for a fraction check; "" for none.
std::string unit_of(const KeyInfo& k);

}  // namespace overlap::profile_schema
