#include "cost_model/hardware_profile.hpp"

namespace overlap {

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
  }
  return "?";
}

}  // namespace overlap
