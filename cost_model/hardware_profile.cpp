#include "cost_model/hardware_profile.hpp"

#include <algorithm>

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

const char* dtype_name(DType t) {
  switch (t) {
    case DType::fp8: return "fp8";
    case DType::fp16: return "fp16";
    case DType::bf16: return "bf16";
    case DType::fp32: return "fp32";
  }
  return "?";
}

std::optional<DType> parse_dtype(const std::string& s) {
  if (s == "fp8") return DType::fp8;
  if (s == "fp16") return DType::fp16;
  if (s == "bf16") return DType::bf16;
  if (s == "fp32") return DType::fp32;
  return std::nullopt;
}

const char* fabric_node_kind_name(FabricNodeKind k) {
  switch (k) {
    case FabricNodeKind::gpu: return "gpu";
    case FabricNodeKind::nvswitch: return "nvswitch";
    case FabricNodeKind::pcie_switch: return "pcie_switch";
    case FabricNodeKind::host: return "host";
    case FabricNodeKind::nic: return "nic";
    case FabricNodeKind::network_switch: return "network_switch";
    case FabricNodeKind::gpu_memory: return "gpu_memory";
  }
  return "?";
}

const char* transport_name(Transport t) {
  switch (t) {
    case Transport::nccl_p2p: return "nccl_p2p";
    case Transport::sm_copy: return "sm_copy";
    case Transport::copy_engine: return "copy_engine";
    case Transport::one_sided: return "one_sided";
  }
  return "?";
}

std::optional<Transport> parse_transport(const std::string& s) {
  for (Transport t : kAllTransports)
    if (s == transport_name(t)) return t;
  return std::nullopt;
}

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
