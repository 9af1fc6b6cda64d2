#pragma once
// An attention kernel priced from its op's shapes: FLOPs over the profile's tensor rate at a published
// attention efficiency.
//
// FLOPs (FlashAttention-2, Dao 2023, Sec. 4.1 "Benchmarking attention", the count its TFLOP/s use):
// forward 4 * batch * heads * seq_q * seq_kv * head_dim (the two matmuls Q K^T and P V, 2 FLOPs a
// multiply-add), halved when causal (half the score matrix is masked and skipped); backward 2.5 times
// the forward (five matmuls instead of two).
//
// Efficiency: the share of the dense 16-bit tensor rate the kernels reach, as their authors measured
// it at long sequences (head dim 128): FlashAttention-2 (Dao 2023, abstract and Sec. 4.1) up to 73 %
// of A100's peak forward and up to 63 % backward; FlashAttention-3 (Shah et al. 2024, abstract) up to
// 740 TFLOP/s forward in FP16 on H100 SXM5, 75 % of its 989. Not fitted to any trace: short
// sequences and small head dims run below these figures, so the model is optimistic there.
#include <cstdint>
#include <optional>
#include <string>

#include "calibrate/traces/trace_model.hpp"
#include "cost_model/hardware_profile.hpp"

namespace overlap::traces {

enum class AttentionPass : std::uint8_t { forward, backward };

struct AttentionShape {
  std::int64_t batch = 0, heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
  bool causal = false;
  AttentionPass pass = AttentionPass::forward;
  std::string dtype;  // the query's "Input type"
};

inline constexpr double kFlashAttention2ForwardEfficiency = 0.73;
inline constexpr double kFlashAttention2BackwardEfficiency = 0.63;
inline constexpr double kFlashAttention3ForwardEfficiency = 740.0 / 989.0;

// 4 b h s_q s_kv d, x 0.5 causal, x 2.5 backward.
double attention_flop(const AttentionShape& s);

// The shape an attention op's Input Dims give, with `causal` from the op's is_causal argument (its
// "Concrete Inputs" value; nullopt when the trace did not record it). Ops read: aten's SDPA family
// (scaled_dot_product_attention, _scaled_dot_product_{flash,efficient,cudnn}_attention and their
// _backward; query [b, h, s, d]) and the flash-attn ops (aten::_flash_attention_forward/_backward,
// flash_attn::_flash_attn_forward/_backward; query [b, s, h, d]). nullopt: not such an op, dims that
// do not fit, or causal unknown.
std::optional<AttentionShape> attention_shape(const OpInfo& op, std::optional<bool> causal);

// One of the ops attention_shape reads.
bool is_attention_op(const std::string& name);

// The op's is_causal argument from its "Concrete Inputs" (at the argument's position in the op's
// schema: aten's native_functions.yaml, flash-attn's torch.library ops); nullopt when not recorded.
std::optional<bool> attention_causal(const OpInfo& op);

// The efficiency for a kernel (FlashAttention-3's Hopper kernels forward: FA3's figure; every other
// kernel: FlashAttention-2's for its pass).
double attention_efficiency(const std::string& kernel, AttentionPass pass);

// attention_flop over the profile's dense rate for the dtype (bf16 / fp16) x attention_efficiency;
// nullopt when the profile has no rate for it.
std::optional<Ps> attention_time_ps(const HardwareProfile& hw, const AttentionShape& s, const std::string& kernel);

}  // namespace overlap::traces
