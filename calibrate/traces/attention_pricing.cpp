#include "calibrate/traces/attention_pricing.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "calibrate/traces/profile_fit.hpp"

namespace overlap::traces {

double attention_flop(const AttentionShape& s) {
  double f = 4.0 * static_cast<double>(s.batch) * static_cast<double>(s.heads) * static_cast<double>(s.seq_q) *
             static_cast<double>(s.seq_kv) * static_cast<double>(s.head_dim);
  if (s.causal) f *= 0.5;
  if (s.pass == AttentionPass::backward) f *= 2.5;
  return f;
}

std::optional<AttentionShape> attention_shape(const OpInfo& op, std::optional<bool> causal) {
  const std::string& n = op.name;
  const bool sdpa = n == "aten::scaled_dot_product_attention" || n == "aten::_scaled_dot_product_flash_attention" ||
                    n == "aten::_scaled_dot_product_efficient_attention" || n == "aten::_scaled_dot_product_cudnn_attention";
  const bool sdpa_bwd = n == "aten::_scaled_dot_product_flash_attention_backward" ||
                        n == "aten::_scaled_dot_product_efficient_attention_backward" ||
                        n == "aten::_scaled_dot_product_cudnn_attention_backward";
  const bool flash = n == "aten::_flash_attention_forward" || n == "flash_attn::_flash_attn_forward";
  const bool flash_bwd = n == "aten::_flash_attention_backward" || n == "flash_attn::_flash_attn_backward";
  if (!(sdpa || sdpa_bwd || flash || flash_bwd) || !causal) return std::nullopt;
  // Backward ops take the output's gradient first, then query and key.
  const std::size_t q = sdpa_bwd || flash_bwd ? 1 : 0;
  const auto& d = op.input_dims;
  if (d.size() <= q + 1 || d[q].size() != 4 || d[q + 1].size() != 4) return std::nullopt;
  const auto& qd = d[q];
  const auto& kd = d[q + 1];
  AttentionShape s;
  s.batch = qd[0];
  s.head_dim = qd[3];
  if (sdpa || sdpa_bwd) {  // [b, h, s, d]
    s.heads = qd[1];
    s.seq_q = qd[2];
    s.seq_kv = kd[2];
  } else {  // [b, s, h, d]
    s.heads = qd[2];
    s.seq_q = qd[1];
    s.seq_kv = kd[1];
  }
  if (kd[0] != s.batch || kd[3] != s.head_dim) return std::nullopt;
  for (std::int64_t v : {s.batch, s.heads, s.seq_q, s.seq_kv, s.head_dim})
    if (v <= 0 || v > (std::int64_t{1} << 24)) return std::nullopt;
  s.causal = *causal;
  s.pass = sdpa_bwd || flash_bwd ? AttentionPass::backward : AttentionPass::forward;
  s.dtype = q < op.input_types.size() ? op.input_types[q] : std::string();
  return s;
}

namespace {

// Position of is_causal (causal) among each op's arguments.
const std::pair<const char*, std::size_t> kCausalAt[] = {
    {"aten::scaled_dot_product_attention", 5},
    {"aten::_scaled_dot_product_flash_attention", 4},
    {"aten::_scaled_dot_product_efficient_attention", 6},
    {"aten::_scaled_dot_product_cudnn_attention", 6},
    {"aten::_scaled_dot_product_flash_attention_backward", 11},
    {"aten::_scaled_dot_product_efficient_attention_backward", 11},
    {"aten::_scaled_dot_product_cudnn_attention_backward", 14},
    {"aten::_flash_attention_forward", 8},
    {"aten::_flash_attention_backward", 11},
    {"flash_attn::_flash_attn_forward", 5},
    {"flash_attn::_flash_attn_backward", 11},
};

}  // namespace

bool is_attention_op(const std::string& name) {
  for (const auto& [op, at] : kCausalAt)
    if (name == op) return true;
  return false;
}

std::optional<bool> attention_causal(const OpInfo& op) {
  for (const auto& [name, at] : kCausalAt) {
    if (op.name != name) continue;
    if (at >= op.concrete_inputs.size()) return std::nullopt;
    const std::string& v = op.concrete_inputs[at];
    if (v == "True" || v == "true" || v == "1") return true;
    if (v == "False" || v == "false" || v == "0") return false;
    return std::nullopt;
  }
  return std::nullopt;
}

double attention_efficiency(const std::string& kernel, AttentionPass pass) {
  if (pass == AttentionPass::backward) return kFlashAttention2BackwardEfficiency;
  std::string k = kernel;
  std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // FlashAttention-3's kernels are Hopper-only (flash::FlashAttnFwdSm90, launched through enable_sm90_or_later).
  const bool fa3 = k.find("flash") != std::string::npos && k.find("sm90") != std::string::npos;
  return fa3 ? kFlashAttention3ForwardEfficiency : kFlashAttention2ForwardEfficiency;
}

std::optional<Ps> attention_time_ps(const HardwareProfile& hw, const AttentionShape& s, const std::string& kernel) {
  const auto dt = model_dtype(s.dtype);
  if (!dt || (*dt != DType::bf16 && *dt != DType::fp16)) return std::nullopt;
  double tflops = 0;
  for (const char* t : {dtype_name(*dt), *dt == DType::bf16 ? "fp16" : "bf16"}) {
    const auto it = hw.gpu.peak_tflops.find(t);
    if (it != hw.gpu.peak_tflops.end() && it->second > 0) {
      tflops = it->second;
      break;
    }
  }
  if (!(tflops > 0)) return std::nullopt;
  return checked_ps(std::ceil(attention_flop(s) / (flop_per_ps_from_tflops(tflops) * attention_efficiency(kernel, s.pass))));
}

}  // namespace overlap::traces
