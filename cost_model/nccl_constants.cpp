#include "cost_model/nccl_constants.hpp"

#include <array>
#include <cctype>
#include <initializer_list>

namespace overlap {
namespace {

bool iequal(const std::string& a, const char* b) {
  std::size_t i = 0;
  for (; i < a.size() && b[i] != '\0'; ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return i == a.size() && b[i] == '\0';
}

NcclLatency lat(double base, double nvlink, double pci, double net) { return NcclLatency{base, {nvlink, pci, net}}; }

// The value among `values` that `name` calls `s` (ASCII case ignored with `ignore_case`: NCCL_ALGO /
// NCCL_PROTO are read that way).
template <typename E, typename Name>
std::optional<E> find_named(const std::string& s, std::initializer_list<E> values, Name name, bool ignore_case) {
  for (E v : values)
    if (ignore_case ? iequal(s, name(v)) : s == name(v)) return v;
  return std::nullopt;
}

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

const char* nccl_algorithm_name(NcclAlgorithm a) {
  switch (a) {
    case NcclAlgorithm::Tree: return "Tree";
    case NcclAlgorithm::Ring: return "Ring";
    case NcclAlgorithm::CollnetDirect: return "CollnetDirect";
    case NcclAlgorithm::CollnetChain: return "CollnetChain";
    case NcclAlgorithm::NVLS: return "NVLS";
    case NcclAlgorithm::NVLSTree: return "NVLSTree";
    case NcclAlgorithm::PAT: return "PAT";
    case NcclAlgorithm::SendRecv: return "SendRecv";
  }
  return "?";
}

std::optional<NcclAlgorithm> parse_nccl_algorithm(const std::string& s) {
  using A = NcclAlgorithm;  // the NCCL_ALGO values: SendRecv is not one
  return find_named(s, {A::Tree, A::Ring, A::CollnetDirect, A::CollnetChain, A::NVLS, A::NVLSTree, A::PAT},
                    nccl_algorithm_name, true);
}

const char* nccl_protocol_name(NcclProtocol p) {
  switch (p) {
    case NcclProtocol::LL: return "LL";
    case NcclProtocol::LL128: return "LL128";
    case NcclProtocol::Simple: return "Simple";
  }
  return "?";
}

std::optional<NcclProtocol> parse_nccl_protocol(const std::string& s) {
  return find_named(s, {NcclProtocol::LL, NcclProtocol::LL128, NcclProtocol::Simple}, nccl_protocol_name, true);
}

const char* nccl_hw_name(NcclHw h) {
  switch (h) {
    case NcclHw::nvlink: return "nvlink";
    case NcclHw::pci: return "pci";
    case NcclHw::net: return "net";
  }
  return "?";
}

std::optional<NcclHw> parse_nccl_hw(const std::string& s) {
  return find_named(s, {NcclHw::nvlink, NcclHw::pci, NcclHw::net}, nccl_hw_name, false);
}

const char* nccl_arch_name(NcclArch a) {
  switch (a) {
    case NcclArch::volta: return "volta";
    case NcclArch::ampere: return "ampere";
    case NcclArch::hopper: return "hopper";
    case NcclArch::blackwell: return "blackwell";
  }
  return "?";
}

std::optional<NcclArch> parse_nccl_arch(const std::string& s) {
  return find_named(s, {NcclArch::volta, NcclArch::ampere, NcclArch::hopper, NcclArch::blackwell}, nccl_arch_name,
                    false);
}

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
