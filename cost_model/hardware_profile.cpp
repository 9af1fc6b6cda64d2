#include "cost_model/hardware_profile.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <utility>

#include "cost_model/enum_names.hpp"

namespace overlap {

double streaming_kernel_gbps(const HardwareProfile& hw, int sms) {
  double gbps = hw.gpu.hbm_bandwidth_gbps * hw.gpu.hbm_efficiency;
  if (!(gbps > 0)) return 0;
  if (hw.gpu.hbm_sm_gbps > 0) gbps = std::min(gbps, (sms > 0 ? sms : hw.gpu.sm_count) * hw.gpu.hbm_sm_gbps);
  return gbps;
}

Ps streaming_kernel_ps(const HardwareProfile& hw, Bytes bytes, int sms) {
  const double gbps = streaming_kernel_gbps(hw, sms);
  if (!(gbps > 0)) return 0;
  return checked_add(ps_from_us(hw.gpu.hbm_latency_us), transfer_ps(bytes, gbps));
}

int dtype_bytes(DType t) {
  switch (t) {
    case DType::fp8: return 1;
    case DType::fp16: return 2;
    case DType::bf16: return 2;
    case DType::fp32: return 4;
  }
  return 0;
}

namespace {

constexpr std::array kDTypeNames{std::pair{DType::fp8, "fp8"}, std::pair{DType::fp16, "fp16"},
                                 std::pair{DType::bf16, "bf16"}, std::pair{DType::fp32, "fp32"}};
static_assert(rows_in_enum_order(kDTypeNames));

using K = FabricNodeKind;
constexpr std::array kFabricNodeKindNames{
    std::pair{K::gpu, "gpu"},   std::pair{K::nvswitch, "nvswitch"}, std::pair{K::pcie_switch, "pcie_switch"},
    std::pair{K::host, "host"}, std::pair{K::nic, "nic"},           std::pair{K::network_switch, "network_switch"},
    std::pair{K::gpu_memory, "gpu_memory"}};
static_assert(rows_in_enum_order(kFabricNodeKindNames));

constexpr std::array kTransportNames{std::pair{Transport::nccl_p2p, "nccl_p2p"},
                                     std::pair{Transport::sm_copy, "sm_copy"},
                                     std::pair{Transport::copy_engine, "copy_engine"},
                                     std::pair{Transport::one_sided, "one_sided"}};
static_assert(rows_in_enum_order(kTransportNames));
static_assert(std::size(kAllTransports) == kTransportNames.size());

}  // namespace

const char* dtype_name(DType t) { return name_of(kDTypeNames, t); }
std::optional<DType> parse_dtype(const std::string& s) { return parse_name(kDTypeNames, s); }

const char* fabric_node_kind_name(FabricNodeKind k) { return name_of(kFabricNodeKindNames, k); }
std::optional<FabricNodeKind> parse_fabric_node_kind(const std::string& s) {
  return parse_name(kFabricNodeKindNames, s);
}

const char* transport_name(Transport t) { return name_of(kTransportNames, t); }
std::optional<Transport> parse_transport(const std::string& s) { return parse_name(kTransportNames, s); }

const TransportSpec& TransportsSpec::of(Transport t) const {
  switch (t) {
    case Transport::nccl_p2p: return nccl_p2p;
    case Transport::sm_copy: return sm_copy;
    case Transport::copy_engine: return copy_engine;
    case Transport::one_sided: return one_sided;
  }
  return copy_engine;
}

TransportSpec& TransportsSpec::of(Transport t) {
  return const_cast<TransportSpec&>(static_cast<const TransportsSpec&>(*this).of(t));
}

}  // namespace overlap
