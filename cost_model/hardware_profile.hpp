#pragma once
// HardwareProfile: everything the simulator knows about a node, written in YAML by hand or by the
// calibration harness (design.md "Calibration and validation"). Every field carries its unit in its
// name (see units.hpp: `_gbps` is GB/s). Defaults are documented here and in scenarios/hardware/README.md.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cost_model/bandwidth_curve.hpp"
#include "cost_model/collective_primitive.hpp"
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
  // The SM clock the compute rates hold at (peak_tflops x gemm_efficiency, gemm_tile_us, the CTA
  // roofline, gemm_profiles) and the clock the job sustains under its power limit; with both given,
  // every SM-side GEMM and attention rate scales by sustained / peak (compute_clock_ratio). A datasheet's
  // tensor-core peak is quoted at a clock of its own: H100 SXM's 989.4 TFLOP/s bf16 is 540,672 FLOP per
  // clock x 1.83 GHz, below its 1.98 GHz maximum (clock_mhz); NVIDIA's HPL runs took A100's Rpeak at
  // the 1305 MHz it sustains at its power limit against its 1410 MHz boost (glennklockwood.com,
  // "Peak FLOPS", "Matrix FLOPS" and "Rpeak"). HBM, links and launches keep their rates: the memory
  // clock is not the SM clock. 0 = not given (no scaling).
  double peak_clock_mhz = 0;
  double sustained_clock_mhz = 0;
  // sustained_clock_mhz / peak_clock_mhz when both are given, else 1.
  double compute_clock_ratio() const {
    return peak_clock_mhz > 0 && sustained_clock_mhz > 0 ? sustained_clock_mhz / peak_clock_mhz : 1.0;
  }
  std::map<std::string, double> peak_tflops;  // dense, by dtype name ("bf16", "fp16", "fp8", "fp32")
  double gemm_efficiency = 0.8;       // fraction of peak a large compute-bound GEMM reaches
  double hbm_bandwidth_gbps = 0;      // datasheet HBM bandwidth
  double hbm_efficiency = 0.9;        // fraction a streaming kernel reaches
  // Fixed time of a memory-bound kernel beyond its bytes / (hbm_bandwidth_gbps x hbm_efficiency): the
  // ramp until every SM streams and the drain of the last requests, during which HBM is not the limit.
  // The alpha of an alpha-beta fit of the calibration's hbm_stream sizes (64 MiB .. 2 GiB on an
  // H100: 8 us, 27 % of the smallest read). 0 = not modelled (the datasheet profiles).
  double hbm_latency_us = 0;
  // The streaming rate one SM sustains, GB/s: a memory kernel on k SMs (a virtual rank's partition,
  // or MemoryKernel::sms) moves at most k x this, however idle HBM is. From the calibration's GEMV
  // on k SMs (hbm_stream with `sms`). 0 = not modelled: any kernel may take all of HBM.
  double hbm_sm_gbps = 0;
  int copy_engines = 2;               // async copy engines usable for transfers
  int min_sm_partition = 1;           // green-context granularity (8 on Hopper)
  // Time of one 128x128 output tile over K = 1024 (2*128*128*1024 FLOP) on one SM, in us; when > 0
  // it replaces peak_tflops * gemm_efficiency / sm_count as the per-SM GEMM rate (for every dtype).
  double gemm_tile_us = 0;
  // The CTA roofline (cost_model/gemm_roofline.hpp): when gemm_sm_load_gbps > 0, a CTA takes
  // gemm_cta_overhead_us + max(its tensor-core time, its (tile_m + tile_n) x K operand bytes over
  // gemm_sm_load_gbps), and uncalibrated shapes get the tile that minimises waves x that time.
  // Both 0 (not modelled) unless a calibration fitted them.
  double gemm_sm_load_gbps = 0;
  double gemm_cta_overhead_us = 0;
  // L2 capacity in bytes (cudaDeviceProp::l2CacheSize). When > 0 it replaces gemm_l2_reuse in a
  // GEMM's HBM traffic: operands that fit in the L2 share come from HBM once, otherwise the
  // re-streamed operand is read once per band of tiles (sim/schemes/graph_builder.cpp). Virtual
  // ranks (fabric.topology virtual) share one GPU's L2. 0 = not given.
  std::int64_t l2_bytes = 0;
  // Device memory capacity in bytes: the datasheet's figure (its GB are the HBM stacks' binary GiB; CUDA
  // reports 1-2 % less, what the driver keeps). A training step's memory per GPU is checked against it
  // (cost_model/memory_model.hpp, docs/guide/training.md "Memory per GPU"). 0 = not given.
  std::int64_t hbm_bytes = 0;
  // Per-tile GEMM slowdown from communication kernels sharing the GPU (L2/HBM/issue contention;
  // FlashOverlap Sec. 6.4 "prolonged computation latency brought by SM contention"): a CTA takes
  // (1 + gemm_comm_interference * busy_sms / sm_count) times longer while busy_sms SMs run comm.
  // 0.5 is a placeholder until the interference microbenchmark (design.md "Calibration") measures it.
  double gemm_comm_interference = 0.5;
  // L2 reuse of GEMM operands: a tile streams (tile_m + tile_n) * K operand bytes, of which 1 /
  // gemm_l2_reuse comes from HBM (the rest hits in L2, shared by the tiles of a wave that read the
  // same rows of A and columns of B: about sqrt(tiles per wave) for a swizzled raster). Sets the HBM
  // traffic a running GEMM competes with copies and memory kernels for. Placeholder until the
  // interference benchmark measures it.
  double gemm_l2_reuse = 8.0;
  // GPU-wide GEMM throughput limit: at most this many SMs of one physical GPU run GEMM tiles at
  // their uncontended rate; with more SMs busy, every tile slows so that the GPU's tile throughput
  // stays that of gemm_full_rate_sms SMs (gemm_saturation_factor). Measured on H100 with green
  // contexts (calibrate/results/nvidia-h100-80gb-hbm3-vm, gemm_sm): a tile's time is flat on 8-96
  // SMs and 8-15 % longer on all 132; two virtual ranks' GEMMs at once ran 1.11x alone. Whether it
  // is the power limit's clock or the L2's bandwidth, the engine sees one shared limit. A calibrated
  // CTA time was measured with its own grid's SMs busy (GemmPlan::reference_sms), so it is rescaled,
  // not replaced. 0 = not modelled (every tile at its CTA time however many SMs are busy).
  double gemm_full_rate_sms = 0;
};

// Kernel launch (design.md "Streams and sync"): the host thread of each rank issues its launches
// ahead of the GPU, in program order, each costing host_us of host time; on the device a kernel
// starts no earlier than gap_us after the kernel it depends on ends. Under CUDA Graphs the host cost
// is paid once per graph (nothing per kernel) and the device gap is graph_gap_us.
struct LaunchSpec {
  // pegainfer blog "From Launch Overhead to CUDA Graph" (CUDA 13): 4-6 us of driver and runtime work
  // per launch; placeholder until the launch benchmark (calibrate/) measures it.
  double host_us = 4.0;
  // NVIDIA blog "Getting Started with CUDA Graphs" (V100): 3.8 us per kernel back to back on a
  // stream vs 3.4 us as a graph for a 2.9 us kernel, i.e. about 0.9 us and 0.5 us of device-side gap.
  double gap_us = 0.9;
  double graph_gap_us = 0.5;
  bool cuda_graphs = false;
  // Host time to enqueue one rank's part of a collective, beyond one launch (a library's enqueue:
  // the reference runner's direct copy-engine all-reduce on virtual ranks issues 2 (T - 1) copies,
  // a sum kernel and events per rank). 0 = a collective costs the host one launch.
  double collective_host_us = 0;
  // The same per primitive where measured ("all_reduce": ...): the reference runner's direct
  // collectives issue 2 (T - 1) copies per rank for an all-reduce but T - 1 for a reduce-scatter or
  // an all-gather, so one figure for all misprices each. Primitives not named use collective_host_us.
  std::map<CollectivePrimitive, double> collective_host_us_by_primitive;
  // One host thread issues every rank's work (a single-process driver of virtual ranks, as the
  // reference runner is), instead of one thread per rank. Virtual ranks on one physical GPU share
  // it; ranks on different GPUs never do.
  bool shared_host = false;
  // Host time of one dependency between streams (cudaEventRecord on the producer's stream and
  // cudaStreamWaitEvent on the consumer's), charged to the consumer's issue. 0 = free.
  double sync_host_us = 0;
  Ps gap_ps() const { return ps_from_us(cuda_graphs ? graph_gap_us : gap_us); }
  Ps host_ps() const { return cuda_graphs ? 0 : ps_from_us(host_us); }
  Ps collective_host_ps(CollectivePrimitive p) const {
    if (cuda_graphs) return 0;
    const auto it = collective_host_us_by_primitive.find(p);
    return ps_from_us(it != collective_host_us_by_primitive.end() ? it->second : collective_host_us);
  }
  Ps sync_host_ps() const { return cuda_graphs ? 0 : ps_from_us(sync_host_us); }
};

// How bytes move between GPUs: one cost per mechanism (design.md "Copy engines", "Collectives").
// An isolated transfer of s bytes over a route takes
//     route wire latency + latency_us + s / (narrowest link bandwidth * efficiency)
// (capped further by k * cta_gbps for an SM copy kernel of k CTAs), unless the profile has a
// calibrated curve "<mechanism>.<link class>", which then gives the whole time.
enum class Transport : std::uint8_t {
  nccl_p2p,     // NCCL send/recv kernels (CommFuse's p2p_send / p2p_recv): hold SMs, match both sides
  sm_copy,      // an SM copy kernel of k CTAs reading peer memory (TransformerEngine userbuffers)
  copy_engine,  // cudaMemcpyAsync on a copy engine (PyTorch async TP): no SMs
  one_sided,    // put/get on symmetric memory from a kernel (NVSHMEM-like)
};
inline constexpr Transport kAllTransports[] = {Transport::nccl_p2p, Transport::sm_copy, Transport::copy_engine,
                                               Transport::one_sided};
const char* transport_name(Transport t);
std::optional<Transport> parse_transport(const std::string& s);

struct TransportSpec {
  double latency_us = 0;    // per-transfer cost on top of the route's wire latency
  double efficiency = 1.0;  // fraction of the narrowest link's bandwidth the mechanism reaches
  double cta_gbps = 0;      // sm_copy: bandwidth one CTA moves (0 = no per-CTA limit)
};

struct TransportsSpec {
  // Defaults: facts.md "NVIDIA H100 SXM" (copy-engine P2P writes about 376 GB/s of 450 one-way,
  // NVIDIA/nccl issue 1264 -> 0.83) and p2pBandwidthLatencyTest's P2P write latency of about 1.8-2.3 us
  // (NVIDIA/cuda-samples issue 230); NCCL send/recv at the collectives' busbw fraction (facts.md
  // "NCCL on 8xH100 NVSwitch": 0.82) and its Simple base latency; the SM-copy and one-sided figures
  // are placeholders until calibrate/ measures them.
  TransportSpec nccl_p2p{8.4, 0.82, 0};
  TransportSpec sm_copy{2.0, 0.83, 25.0};
  TransportSpec copy_engine{2.0, 0.83, 0};
  TransportSpec one_sided{1.5, 0.83, 0};
  const TransportSpec& of(Transport t) const;
  TransportSpec& of(Transport t);
};

// A class of link, e.g. "nvlink", "pcie", "ib". `--set hardware.links.nvlink.bandwidth_gbps=900`.
struct LinkClass {
  std::string name;
  double bandwidth_gbps = 0;  // per direction, per GPU port
  double latency_us = 0;      // one-way latency of a transfer over this class
};

// gpu_memory: the on-chip crossbar through which virtual ranks of one physical GPU reach each other.
enum class FabricNodeKind { gpu, nvswitch, pcie_switch, host, nic, network_switch, gpu_memory };
const char* fabric_node_kind_name(FabricNodeKind k);
std::optional<FabricNodeKind> parse_fabric_node_kind(const std::string& s);

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
  // each, joined by NICs over `network`), "virtual" (T ranks on one physical GPU, see virtual_link),
  // or "explicit" (nodes and edges given).
  std::string topology = "nvswitch";
  int num_gpus = 0;
  int gpus_per_node = 0;     // multi_node; 0 = all GPUs in one node
  int gpus_per_numa = 0;     // pcie; 0 = all under one root
  // virtual: T virtual ranks share ONE physical GPU (the calibration's single-GPU host, green-context
  // SM partitions): one HBM and one pool of copy engines; a rank-to-rank copy is a device-to-device
  // copy through that HBM ("d2d") or staged through pinned host memory over `pcie` ("host").
  std::string virtual_link = "d2d";
  // multi_node: NICs on rail switches (NIC i of every node on rail switch i), rails joined by a
  // spine; false = every NIC on one network switch.
  bool rails = false;
  // multi_node: NICs per node (GPUDirect RDMA ports for collectives); 0 = one per GPU. Fewer NICs than
  // GPUs are shared: GPU g of a node uses NIC g / (gpus_per_node / nics_per_node) (its PCIe switch's).
  // NCCL spreads a collective's channels over every NIC of the node (one ring or tree per channel,
  // each leaving the node through its own NIC; PXN moves a GPU's data over NVLink to the GPU whose NIC
  // is on the destination's rail), so the node's network bandwidth is nics x network bandwidth.
  int nics_per_node = 0;
  // multi_node: the fraction of a NIC's line rate NCCL's network transport reaches: NVIDIA's figure
  // for NDR 400 Gb/s (50 GB/s) is 46-48 GB/s per NIC in nccl-tests (NVIDIA/nccl-tests issue 290).
  double nic_efficiency = 0.94;
  // multi_node: nodes under one leaf switch (with rails, one rail switch of each rail); a transfer
  // between nodes of different leaves crosses the spine, two more switches than one within a leaf
  // (NVIDIA DGX SuperPOD reference architecture: a scalable unit of 32 nodes per leaf). 0 = every
  // node under one switch tier.
  int nodes_per_leaf = 0;
  // multi_node: one switch's port-to-port latency, microseconds; NCCL's network hop latencies
  // (comm.latency_us) already hold one crossing, the spine's two more are added (nccl_tuning.cpp).
  double switch_latency_us = 0;
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

// A profile value that is a guess, neither published nor calibrated (a key under `placeholders:`):
// the key's dotted path ("transports.sm_copy.cta_gbps"), the value the profile gives it, the range a
// measurement could plausibly find, and where that range comes from. `run` re-runs its schemes at
// `low` and `high` and names the placeholder when the ranking changes (sim/placeholder_sensitivity).
struct PlaceholderRange {
  std::string key;
  double value = 0;
  double low = 0;
  double high = 0;
  std::string source;
};

struct HardwareProfile {
  std::string name;
  std::string description;
  GpuSpec gpu;
  FabricSpec fabric;
  CommSpec comm;
  LaunchSpec launch;
  TransportsSpec transports;
  // Calibrated bandwidth curves by key: "<transport>.<link_class>" (transport_name: nccl_p2p, sm_copy,
  // copy_engine, one_sided; "p2p.<class>" is an alias of sm_copy; link class "d2d", "h2d", "d2h" for
  // copies inside one GPU or to/from pinned host memory),
  // "all_reduce", "reduce_scatter", "all_gather", "all_to_all" (algbw vs full array size).
  std::map<std::string, BandwidthCurve> curves;
  std::vector<GemmProfileEntry> gemm_profiles;
  // Guessed values and their plausible ranges, in file order (empty for a measured profile).
  std::vector<PlaceholderRange> placeholders;
  std::string source_file;  // where it was loaded from ("" for built-in/inline)
};

// A memory-bound kernel streaming `bytes` through HBM alone on its GPU: gpu.hbm_latency_us + bytes /
// min(hbm_bandwidth_gbps x hbm_efficiency, sms x hbm_sm_gbps), what the engine's memory op takes on
// an idle GPU (sim/network_side.cpp); sms <= 0: the profile's sm_count. 0 without a memory model
// (hbm_bandwidth_gbps 0).
Ps streaming_kernel_ps(const HardwareProfile& hw, Bytes bytes, int sms = 0);
// The rate such a kernel streams at alone, GB/s (the min above; 0 without a memory model).
double streaming_kernel_gbps(const HardwareProfile& hw, int sms = 0);

// Fills fabric.nodes / fabric.edges from the topology preset (no-op for "explicit"). Defined in
// fabric_topology.cpp; throws std::invalid_argument when a link class the preset needs is missing.
void expand_topology(FabricSpec& fabric);

}  // namespace overlap
