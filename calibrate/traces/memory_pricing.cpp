#include "calibrate/traces/memory_pricing.hpp"

#include "calibrate/traces/trace_analysis.hpp"

namespace overlap::traces {

namespace {

bool is_reduction(const std::string& n) {
  static const char* kOps[] = {"aten::sum",  "aten::mean",   "aten::amax",   "aten::amin",
                               "aten::max",  "aten::min",    "aten::norm",   "aten::linalg_vector_norm",
                               "aten::argmax", "aten::argmin"};
  for (const char* op : kOps)
    if (n == op) return true;
  return false;
}

}  // namespace

std::optional<Bytes> memory_bound_bytes(const OpInfo& op) {
  // Bytes of input i; 0 for a non-tensor argument (its dims are []); nullopt for an unknown dtype.
  const auto bytes_of = [&](std::size_t i) -> std::optional<Bytes> {
    if (i >= op.input_dims.size() || op.input_dims[i].empty()) return Bytes{0};
    std::string type = i < op.input_types.size() ? op.input_types[i] : std::string();
    if (type.rfind("c10::", 0) == 0) type = type.substr(5);  // "c10::BFloat16"
    const int b = dtype_bytes(type);
    if (b <= 0) return std::nullopt;
    Bytes n = b;
    for (std::int64_t d : op.input_dims[i]) {
      if (d < 0) return std::nullopt;
      n = checked_mul(n, d);
    }
    return n;
  };
  if (op.name == "aten::copy_") {
    const auto dst = bytes_of(0), src = bytes_of(1);
    if (!dst || !src || *dst == 0) return std::nullopt;
    return checked_add(*dst, *src);
  }
  Bytes read = 0, largest = 0;
  bool tensor = false;
  for (std::size_t i = 0; i < op.input_dims.size(); ++i) {
    if (op.input_dims[i].empty()) continue;
    const auto b = bytes_of(i);
    if (!b) return std::nullopt;
    tensor = true;
    read = checked_add(read, *b);
    largest = std::max(largest, *b);
  }
  if (!tensor) return std::nullopt;
  return is_reduction(op.name) ? read : checked_add(read, largest);
}

}  // namespace overlap::traces
