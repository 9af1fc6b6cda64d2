#include "cost_model/nccl_constants.hpp"

#include <array>
#include <utility>

#include "cost_model/enum_names.hpp"

namespace overlap {
namespace {

NcclLatency lat(double base, double nvlink, double pci, double net) { return NcclLatency{base, {nvlink, pci, net}}; }

// One row per value: its name as NCCL spells it (NCCL_ALGO, NCCL_PROTO, tuning.cc).
constexpr std::array kAlgorithmNames{
    std::pair{NcclAlgorithm::Tree, "Tree"}, std::pair{NcclAlgorithm::Ring, "Ring"},
    std::pair{NcclAlgorithm::CollnetDirect, "CollnetDirect"}, std::pair{NcclAlgorithm::CollnetChain, "CollnetChain"},
    std::pair{NcclAlgorithm::NVLS, "NVLS"}, std::pair{NcclAlgorithm::NVLSTree, "NVLSTree"},
    std::pair{NcclAlgorithm::PAT, "PAT"}, std::pair{NcclAlgorithm::SendRecv, "SendRecv"}};
static_assert(rows_in_enum_order(kAlgorithmNames) && kAlgorithmNames.size() == kNcclAlgorithms + 1);

constexpr std::array kProtocolNames{std::pair{NcclProtocol::LL, "LL"}, std::pair{NcclProtocol::LL128, "LL128"},
                                    std::pair{NcclProtocol::Simple, "Simple"}};
static_assert(rows_in_enum_order(kProtocolNames) && kProtocolNames.size() == kNcclProtocols);

constexpr std::array kHwNames{std::pair{NcclHw::nvlink, "nvlink"}, std::pair{NcclHw::pci, "pci"},
                              std::pair{NcclHw::net, "net"}};
static_assert(rows_in_enum_order(kHwNames) && kHwNames.size() == kNcclHw);

constexpr std::array kArchNames{std::pair{NcclArch::volta, "volta"}, std::pair{NcclArch::ampere, "ampere"},
                                std::pair{NcclArch::hopper, "hopper"}, std::pair{NcclArch::blackwell, "blackwell"}};
static_assert(rows_in_enum_order(kArchNames));

// Per-generation caps (GB/s), rows [one node, two nodes, more] (tuning.cc llMaxBws,
// perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws, perChMaxNVLSTreeBws) and
// nvlsEfficiency. llMaxBws across nodes follows the CPU (Intel row) rather than the GPU.
struct ArchCaps {
  std::array<double, 3> ll_max, ring_ll128, tree_ll128, tree, nvls_tree;
  double nvls_efficiency;
};
constexpr ArchCaps kVolta{{39.0, 39.0, 20.4}, {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {26.5, 18.5, 10.0},
                          {26.5, 18.5, 10.0}, 0.0};
constexpr ArchCaps kAmpere{{87.7, 39.0, 20.4}, {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {24.0, 23.6, 17.8},
                           {24.0, 23.6, 17.8}, 0.0};
constexpr ArchCaps kHopper{{141.0, 39.0, 20.4}, {36.7, 36.7, 36.7}, {36.7, 36.7, 29.0}, {38.7, 41.4, 36.0},
                           {0.0, 57.7, 45.5}, 0.85};
constexpr ArchCaps kBlackwell{{282.0, 39.0, 20.4}, {40.0, 40.0, 40.0}, {55.6, 31.67, 20.0}, {70.0, 42.8, 24.0},
                              {0.0, 96.0, 80.0}, 0.74};

const ArchCaps& caps_of(NcclArch arch) {
  switch (arch) {
    case NcclArch::volta: return kVolta;
    case NcclArch::ampere: return kAmpere;
    case NcclArch::hopper: return kHopper;
    case NcclArch::blackwell: return kBlackwell;
  }
  static constexpr ArchCaps kNone{};
  return kNone;
}

}  // namespace

const char* nccl_algorithm_name(NcclAlgorithm a) { return name_of(kAlgorithmNames, a); }

// NCCL reads NCCL_ALGO / NCCL_PROTO ignoring case. SendRecv (the last row) is not an NCCL_ALGO value.
std::optional<NcclAlgorithm> parse_nccl_algorithm(const std::string& s) {
  const auto a = parse_name(kAlgorithmNames, s, NameCase::ignore_ascii_case);
  if (a && static_cast<int>(*a) >= kNcclAlgorithms) return std::nullopt;
  return a;
}

const char* nccl_protocol_name(NcclProtocol p) { return name_of(kProtocolNames, p); }
std::optional<NcclProtocol> parse_nccl_protocol(const std::string& s) {
  return parse_name(kProtocolNames, s, NameCase::ignore_ascii_case);
}

const char* nccl_hw_name(NcclHw h) { return name_of(kHwNames, h); }
std::optional<NcclHw> parse_nccl_hw(const std::string& s) { return parse_name(kHwNames, s); }

const char* nccl_arch_name(NcclArch a) { return name_of(kArchNames, a); }
std::optional<NcclArch> parse_nccl_arch(const std::string& s) { return parse_name(kArchNames, s); }

NcclTunerConstants NcclTunerConstants::defaults(NcclArch arch) {
  // Source: https://github.com/NVIDIA/nccl/blob/master/src/graph/tuning.cc (ncclTunerConstantsDefaults,
  // nvlsEfficiency), the values NCCL 2.2x ships. Latencies in us: base, then per step on NVLink /
  // PCI / network. An entry NCCL leaves 0 for a protocol the algorithm does not run stays 0.
  NcclTunerConstants c;
  using A = NcclAlgorithm;
  using P = NcclProtocol;
  c.at(A::Tree, P::LL) = lat(6.8, 0.6, 1.0, 5.0);
  c.at(A::Tree, P::LL128) = lat(14.0, 1.25, 1.9, 8.5);
  c.at(A::Tree, P::Simple) = lat(8.4, 4.0, 4.0, 14.0);
  c.at(A::Ring, P::LL) = lat(6.6, 0.6, 1.0, 2.7);
  c.at(A::Ring, P::LL128) = lat(14.0, 1.9, 2.5, 4.0);
  c.at(A::Ring, P::Simple) = lat(8.4, 3.4, 5.7, 14.0);
  c.at(A::CollnetDirect, P::Simple) = lat(0, 3.7, 3.7, 31.0);
  c.at(A::CollnetChain, P::Simple) = lat(0, 2.8, 2.8, 30.0);
  c.at(A::NVLS, P::Simple) = lat(0, 25.0, 0, 18.0);
  c.at(A::NVLSTree, P::Simple) = lat(0, 25.0, 0, 20.9);
  for (auto p : {P::LL, P::LL128, P::Simple}) c.at(A::PAT, p).base_us = 8.0;
  c.at(A::PAT, P::Simple) = lat(8.0, 4.0, 4.0, 14.0);

  const ArchCaps& caps = caps_of(arch);
  c.ll_max_bw_gbps = caps.ll_max;
  c.ring_ll128_channel_gbps = caps.ring_ll128;
  c.tree_ll128_channel_gbps = caps.tree_ll128;
  c.tree_channel_gbps = caps.tree;
  c.nvls_tree_channel_gbps = caps.nvls_tree;
  c.nvls_efficiency = caps.nvls_efficiency;
  return c;
}

}  // namespace overlap
