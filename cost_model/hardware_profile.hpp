#pragma once
// HardwareProfile: everything the simulator knows about a node, written in YAML by hand or by the
// calibration harness (design.md "Calibration and validation"). Every field carries its unit in its
// name (see units.hpp: `_gbps` is GB/s). Defaults are documented here and in scenarios/hardware/README.md.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cost_model/bandwidth_curve.hpp"
#include "cost_model/nccl_constants.hpp"
#include "cost_model/units.hpp"

namespace overlap {

enum class DType { fp8, fp16, bf16, fp32 };
int dtype_bytes(DType t);
const char* dtype_name(DType t);
std::optional<DType> parse_dtype(const std::string& s);

struct GpuSpec {
  std::string name = "gpu";
  int sm_count = 0;
  int gemm_ctas_per_sm = 1;           // GEMM CTAs resident per SM (CUTLASS/cuBLAS big tiles: 1)
  double clock_mhz = 0;               // informational (0 = unknown)
  std::map<std::string, double> peak_tflops;  // dense, by dtype name ("bf16", "fp16", "fp8", "fp32")
  double gemm_efficiency = 0.8;       // fraction of peak a large compute-bound GEMM reaches
  double hbm_bandwidth_gbps = 0;      // datasheet HBM bandwidth
  double hbm_efficiency = 0.9;        // fraction a streaming kernel reaches
  int copy_engines = 2;               // async copy engines usable for transfers
  double kernel_launch_us = 2.0;      // gap a stream pays before each kernel starts
  int min_sm_partition = 1;           // green-context granularity (8 on Hopper)
  // Time of one 128x128 output tile over K = 1024 (2*128*128*1024 FLOP) on one SM, in us; when > 0
  // it replaces peak_tflops * gemm_efficiency / sm_count as the per-SM GEMM rate (for every dtype).
  double gemm_tile_us = 0;
  // Per-tile GEMM slowdown from communication kernels sharing the GPU (L2/HBM/issue contention;
  // FlashOverlap Sec. 6.4 "prolonged computation latency brought by SM contention"): a CTA takes
  // (1 + gemm_comm_interference * busy_sms / sm_count) times longer while busy_sms SMs run comm.
  // 0.5 is a placeholder until the interference microbenchmark (design.md "Calibration") measures it.
  double gemm_comm_interference = 0.5;
};

// A class of link, e.g. "nvlink", "pcie", "ib". `--set hardware.links.nvlink.bandwidth_gbps=900`.
struct LinkClass {
  std::string name;
  double bandwidth_gbps = 0;  // per direction, per GPU port
  double latency_us = 0;      // one-way latency of a transfer over this class
};

enum class FabricNodeKind { gpu, nvswitch, pcie_switch, host, nic, network_switch };
const char* fabric_node_kind_name(FabricNodeKind k);

struct FabricNode {
  std::string name;
  FabricNodeKind kind = FabricNodeKind::gpu;
  int gpu = -1;  // GPU index for kind == gpu
};

// A directed link between two fabric nodes (the expansion of a topology writes both directions).
struct FabricEdge {
  int from = -1, to = -1;     // indices into FabricSpec::nodes
  std::string link_class;     // key into FabricSpec::links
  double bandwidth_gbps = 0;  // capacity of this directed edge
  double latency_us = 0;
};

struct FabricSpec {
  // Topology preset the edges were generated from: "nvswitch" (every GPU to one switch),
  // "full_mesh" (pairwise direct links, e.g. A800 NVLink), "pcie" (GPUs under PCIe switches per
  // NUMA node, nodes joined through the host), "multi_node" (nodes of `gpus_per_node` on an NVSwitch
  // each, joined by NICs over `network`), or "explicit" (nodes and edges given).
  std::string topology = "nvswitch";
  int num_gpus = 0;
  int gpus_per_node = 0;     // multi_node; 0 = all GPUs in one node
  int gpus_per_numa = 0;     // pcie; 0 = all under one root
  std::map<std::string, LinkClass> links;
  std::vector<FabricNode> nodes;  // filled by expand_topology() unless explicit
  std::vector<FabricEdge> edges;
};

// Communication library constants: NCCL's tuning model (cost_model/nccl_tuning.hpp, design.md
// "Collectives"; facts.md "NCCL on 8xH100 NVSwitch"). YAML under `comm:`; README "comm".
struct CommSpec {
  std::string library = "nccl";
  // NCCL_ALGO / NCCL_PROTO: force one algorithm / protocol for every collective (comm.algorithm,
  // comm.protocol; "auto" = nullopt = NCCL's minimum-predicted-time choice per call). A forced choice
  // that cannot run a collective is an input error, as NCCL fails such a call.
  std::optional<NcclAlgorithm> algorithm;
  std::optional<NcclProtocol> protocol;
  NcclArch arch = NcclArch::hopper;  // GPU generation of NCCL's per-generation caps
  bool nvlink_sharp = false;         // the NVSwitch reduces in the switch (NVLS): H100/H200 HGX, not A100
  bool collnet = false;              // the network switches reduce (SHARP; CollnetDirect/CollnetChain)
  int channels = 24;                 // most collective channels (NCCL_MAX_NCHANNELS); one CTA = one SM each
  int nvls_channels = 16;            // channels of an NVLS collective (NCCL_NVLS_NCHANNELS; 16 on Hopper)
  int p2p_channels = 32;             // channels of send/recv (all-to-all)
  // NCCL's bus bandwidth of its ring graph as a fraction of the link line rate: NCCL models an NVLink 4
  // link at 20.6 GB/s of its 25 (18 links: 371 of 450 GB/s), and measures ring busbw ~365-370.
  double bandwidth_efficiency = 0.9;
  // NCCL's tuner constants (latencies per algorithm/protocol/link kind, bandwidth caps). Defaults:
  // NCCL's for `arch`; any entry may be overridden (comm.latency_us, comm.ll_max_bw_gbps, ...).
  NcclTunerConstants tuner = NcclTunerConstants::defaults(NcclArch::hopper);
  // Which NCCL latency class a fabric link class is (by default from its name: "network" -> net,
  // "pcie"/"host" -> pci, anything else -> nvlink); comm.link_kinds overrides per class.
  std::map<std::string, NcclHw> link_kinds;
};

// One calibrated GEMM measurement (design.md "Calibration": tile shape, duration, wave profile).
struct GemmProfileEntry {
  std::int64_t m = 0, n = 0, k = 0;
  DType dtype = DType::bf16;
  int tile_m = 128, tile_n = 128;
  double duration_us = 0;
  std::vector<double> wave_end_us;  // end of each wave, from per-tile timestamps (may be empty)
};

struct HardwareProfile {
  std::string name;
  std::string description;
  GpuSpec gpu;
  FabricSpec fabric;
  CommSpec comm;
  // Calibrated bandwidth curves by key: "p2p.<link_class>", "copy_engine.<link_class>",
  // "all_reduce", "reduce_scatter", "all_gather", "all_to_all" (algbw vs full array size).
  std::map<std::string, BandwidthCurve> curves;
  std::vector<GemmProfileEntry> gemm_profiles;
  std::string source_file;  // where it was loaded from ("" for built-in/inline)
};

// Fills fabric.nodes / fabric.edges from the topology preset (no-op for "explicit"). Defined in
// fabric_topology.cpp; throws std::invalid_argument when a link class the preset needs is missing.
void expand_topology(FabricSpec& fabric);

}  // namespace overlap
