#pragma once
// NCCL's vocabulary and tuner constants (design.md "Collectives"). NCCL chooses, per call,
// an algorithm and a protocol from a table of latencies and bandwidths it builds at init time
// (src/graph/tuning.cc of https://github.com/NVIDIA/nccl, read to learn the model; no code copied).
// This header holds the names exactly as NCCL_ALGO / NCCL_PROTO spell them and the published default
// constants, which a hardware profile may override (comm.latency_us, comm.ll_max_bw_gbps, ...).
// The model that uses them is cost_model/nccl_tuning.hpp.
#include <array>
#include <optional>
#include <string>

namespace overlap {

// NCCL's algorithms in NCCL's own order (NCCL_ALGO_TREE = 0 ... NCCL_ALGO_PAT = 6). SendRecv is not
// an NCCL_ALGO value: it names how NCCL runs all-to-all (grouped point-to-point send/recv), which no
// NCCL_ALGO setting changes.
enum class NcclAlgorithm { Tree, Ring, CollnetDirect, CollnetChain, NVLS, NVLSTree, PAT, SendRecv };
inline constexpr int kNcclAlgorithms = 7;  // the NCCL_ALGO values (SendRecv excluded)
enum class NcclProtocol { LL, LL128, Simple };
inline constexpr int kNcclProtocols = 3;
// NCCL's hardware classes for latencies (NCCL_HW_NVLINK, NCCL_HW_PCI, NCCL_HW_NET).
enum class NcclHw { nvlink, pci, net };
inline constexpr int kNcclHw = 3;
// GPU generations NCCL's per-generation bandwidth caps are indexed by (compute capability 7.x, 8.x,
// 9.x, 10.x). An Ada GPU (8.9, RTX 4090) is "ampere" to NCCL.
enum class NcclArch { volta, ampere, hopper, blackwell };

// "Tree", "Ring", "CollnetDirect", "CollnetChain", "NVLS", "NVLSTree", "PAT", "SendRecv".
const char* nccl_algorithm_name(NcclAlgorithm a);
// NCCL_ALGO spelling, case-insensitive as NCCL compares them; SendRecv is not accepted.
std::optional<NcclAlgorithm> parse_nccl_algorithm(const std::string& s);
const char* nccl_protocol_name(NcclProtocol p);  // "LL", "LL128", "Simple"
std::optional<NcclProtocol> parse_nccl_protocol(const std::string& s);
const char* nccl_hw_name(NcclHw h);  // "nvlink", "pci", "net"
std::optional<NcclHw> parse_nccl_hw(const std::string& s);
const char* nccl_arch_name(NcclArch a);  // "volta", "ampere", "hopper", "blackwell"
std::optional<NcclArch> parse_nccl_arch(const std::string& s);

inline int index_of(NcclAlgorithm a) { return static_cast<int>(a); }
inline int index_of(NcclProtocol p) { return static_cast<int>(p); }
inline int index_of(NcclHw h) { return static_cast<int>(h); }

// Latency of one (algorithm, protocol): a base paid once per call and a per-step ("hardware")
// latency by the kind of link the step crosses. Microseconds.
struct NcclLatency {
  double base_us = 0;
  std::array<double, kNcclHw> hw_us{};  // indexed by NcclHw
};

// The constants of NCCL's tuner. Defaults: NCCL's ncclTunerConstantsDefaults / nvlsEfficiency
// (src/graph/tuning.cc, NCCL 2.2x). Bandwidth caps are per node-count class: [0] one node,
// [1] two nodes, [2] more.
struct NcclTunerConstants {
  std::array<std::array<NcclLatency, kNcclProtocols>, kNcclAlgorithms> latency{};  // [algorithm][protocol]
  // LL protocol's whole-collective bandwidth cap (llMaxBws): on one node the GPU generation's row,
  // across nodes the CPU's (Intel row: NCCL's choice unless the CPUs are AMD).
  std::array<double, 3> ll_max_bw_gbps{};
  std::array<double, 3> ring_ll128_channel_gbps{};  // perChMaxRingLL128Bws
  std::array<double, 3> tree_ll128_channel_gbps{};  // perChMaxTreeLL128Bws
  std::array<double, 3> tree_channel_gbps{};        // perChMaxTreeBws
  std::array<double, 3> nvls_tree_channel_gbps{};   // perChMaxNVLSTreeBws
  double nvls_efficiency = 0;                       // nvlsEfficiency (0 before Hopper: no NVLS)

  const NcclLatency& at(NcclAlgorithm a, NcclProtocol p) const {
    return latency[static_cast<std::size_t>(index_of(a))][static_cast<std::size_t>(index_of(p))];
  }
  NcclLatency& at(NcclAlgorithm a, NcclProtocol p) {
    return latency[static_cast<std::size_t>(index_of(a))][static_cast<std::size_t>(index_of(p))];
  }
  static NcclTunerConstants defaults(NcclArch arch);
};

// Thread counts and per-thread work thresholds NCCL sizes channels with (src/include/device.h,
// src/include/comm.h): a collective of nBytes uses fewer channels while nBytes < channels * threads *
// threshold (enqueue.cc topoGetAlgoInfo).
inline constexpr int kNcclLLMaxThreads = 512;
inline constexpr int kNcclLL128MaxThreads = 640;
inline constexpr int kNcclSimpleMaxThreads = 512;
inline constexpr int kNcclMaxThreads = 640;
inline constexpr int kNcclLLThreadThreshold = 8;      // bytes per thread (ring LL: times nRanks)
inline constexpr int kNcclLL128ThreadThreshold = 8;
inline constexpr int kNcclSimpleThreadThreshold = 64;
inline constexpr int kNcclCollnetThreadThreshold = 512;
inline constexpr double kNcclPciBwGbps = 12.0;  // PCI_BW (topo.h): ring Simple uses 256 threads at or below it
// Point-to-point (all-to-all): LL while a peer's bytes fit nChannels * NCCL_P2P_LL_THRESHOLD
// (enqueue.cc, default 16384), else Simple.
inline constexpr long long kNcclP2pLLThresholdBytes = 16384;

}  // namespace overlap
