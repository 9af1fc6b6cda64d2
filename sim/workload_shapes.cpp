#include "sim/workload_shapes.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "sim/model_config.hpp"
#include "sim/workload_key_table.hpp"

namespace overlap::sim {

namespace {


// Sizes stay far below what would overflow byte counts (a product of two dimensions times the dtype
// size fits in 64 bits) and what the engine could simulate tile by tile.
constexpr std::int64_t kMaxDimension = std::int64_t{1} << 24;

void require_positive(std::int64_t v, const char* field) {
  if (v <= 0) throw std::invalid_argument(fmt::format("workload.{}: must be positive (got {})", field, v));
  if (v > kMaxDimension)
    throw std::invalid_argument(fmt::format("workload.{}: must be at most {} (got {})", field, kMaxDimension, v));
}

namespace rule = workload_key::rule;

// A cross-key rule of the key table (sim/workload_key_table.hpp) whose divisor is tp, named at its key.
void require_divisible(const workload_key::DivisibilityRule& r, std::int64_t v, int tp) {
  if (!r.holds(v, tp))
    throw std::invalid_argument(fmt::format("workload.{}: {} is not divisible by {} = {}", r.key, v, r.divisor, tp));
}

// Query block of a FlashAttention-style kernel: one CTA per (batch, head, 128 queries).
constexpr std::int64_t kAttentionQueryBlock = 128;

// Core attention FLOPs: QK^T is 2 x seq x seq x qk_dim and PV 2 x seq x seq x v_dim per head and batch
// (equal head dims but in MLA); a causal mask skips (about) half of the score matrix.
double attention_flops(std::int64_t batch, std::int64_t seq, std::int64_t heads, std::int64_t qk_dim,
                       std::int64_t v_dim, bool causal) {
  const double full = 2.0 * static_cast<double>(batch) * static_cast<double>(seq) * static_cast<double>(seq) *
                      static_cast<double>(heads) * static_cast<double>(qk_dim + v_dim);
  return causal ? full / 2.0 : full;
}
double attention_flops(std::int64_t batch, std::int64_t seq, std::int64_t heads, std::int64_t head_dim,
                       bool causal) {
  return attention_flops(batch, seq, heads, head_dim, head_dim, causal);
}

}  // namespace

Bytes UnfusedAttention::matrix_bytes() const { return checked_mul(checked_mul(problems, seq), seq * dtype_bytes(dtype)); }
Bytes UnfusedAttention::mask_bytes() const { return checked_mul(problems, seq * seq); }

Bytes activation_bytes(std::int64_t tokens, std::int64_t width, DType dtype) {
  return tokens * width * dtype_bytes(dtype);
}

MoeRouting moe_routing(const Moe& m) {
  MoeShape shape;
  shape.experts = m.experts;
  shape.top_k = m.top_k;
  shape.ep_ranks = m.ep;
  shape.tokens_per_rank = m.tokens;
  shape.capacity_factor = m.capacity_factor;
  return route_tokens(shape, m.routing, m.file, m.line);
}

MoeShapes moe_shapes(const Moe& m, const CountMatrix& tokens) {
  MoeShapes s;
  s.tokens = tokens;
  const int ep = m.ep;
  const int per_rank = m.experts / ep;
  const Bytes per_slot = activation_bytes(1, m.d_model, m.dtype);
  s.dispatch.assign(static_cast<std::size_t>(ep), std::vector<Bytes>(static_cast<std::size_t>(ep), 0));
  s.combine = s.dispatch;
  s.up.assign(static_cast<std::size_t>(ep), {});
  s.down.assign(static_cast<std::size_t>(ep), {});
  s.activation_bytes.assign(static_cast<std::size_t>(ep), 0);
  for (int dst = 0; dst < ep; ++dst)
    for (int le = 0; le < per_rank; ++le) {
      const std::size_t e = static_cast<std::size_t>(dst * per_rank + le);
      std::int64_t rows = 0;
      for (int src = 0; src < ep; ++src) {
        const std::int64_t n = tokens[static_cast<std::size_t>(src)][e];
        rows += n;
        s.dispatch[static_cast<std::size_t>(src)][static_cast<std::size_t>(dst)] += n * per_slot;
      }
      s.up[static_cast<std::size_t>(dst)].push_back(RankGemm{rows, 2 * m.d_ffn_expert, m.d_model, m.dtype});
      s.down[static_cast<std::size_t>(dst)].push_back(RankGemm{rows, m.d_model, m.d_ffn_expert, m.dtype});
      s.activation_bytes[static_cast<std::size_t>(dst)] += activation_bytes(rows, 3 * m.d_ffn_expert, m.dtype);
    }
  for (int a = 0; a < ep; ++a)
    for (int b = 0; b < ep; ++b)
      s.combine[static_cast<std::size_t>(b)][static_cast<std::size_t>(a)] =
          s.dispatch[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)];
  return s;
}

double moe_forward_flops(const Moe& m) {
  const MoeShapes sh = moe_shapes(m, moe_routing(m).tokens);
  auto gemm_flops = [](const RankGemm& g) {
    return 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
  };
  double total = 0;
  for (int r = 0; r < m.ep; ++r) {
    total += gemm_flops(moe_router_gemm(m)) + gemm_flops(moe_shared_up(m)) + gemm_flops(moe_shared_down(m));
    for (const RankGemm& g : sh.up[static_cast<std::size_t>(r)]) total += gemm_flops(g);
    for (const RankGemm& g : sh.down[static_cast<std::size_t>(r)]) total += gemm_flops(g);
  }
  // With expert TP every ETP member routes its EP rank's counts (moe.hpp moe_etp_shapes): each GPU's share
  // is still its EP rank's FLOPs.
  return total / static_cast<double>(m.ep);
}

std::int64_t moe_step_tokens(const Moe& m) {
  return static_cast<std::int64_t>(m.ep) * std::max(1, m.expert_tp) * m.tokens;
}

CountMatrix moe_chunk_tokens(const CountMatrix& tokens, int chunks, int c) {
  CountMatrix out = tokens;
  for (auto& row : out)
    for (std::int64_t& n : row) n = n / chunks + (c < n % chunks ? 1 : 0);
  return out;
}

RankGemm moe_router_gemm(const Moe& m) { return RankGemm{m.tokens, m.experts, m.d_model, m.dtype}; }
RankGemm moe_shared_up(const Moe& m) {
  return RankGemm{m.shared_experts > 0 ? m.tokens : 0, 2 * m.shared_experts * m.d_ffn_expert, m.d_model, m.dtype};
}
RankGemm moe_shared_down(const Moe& m) {
  return RankGemm{m.shared_experts > 0 ? m.tokens : 0, m.d_model, m.shared_experts * m.d_ffn_expert, m.dtype};
}
Bytes moe_shared_activation_bytes(const Moe& m) {
  return activation_bytes(m.tokens, 3 * m.shared_experts * m.d_ffn_expert, m.dtype);
}

GemmCollective gemm_collective_shape(const Workload& w) { return std::get<GemmCollective>(w.shape); }

MlpShapes mlp_shapes(const MlpTpSp& mlp, int tp) {
  MlpShapes s;
  const std::int64_t ffn_rank = mlp.d_ffn / tp;
  const std::int64_t cols = (mlp.gated ? 2 : 1) * ffn_rank;
  s.all_gather_bytes = mlp.gather_input ? activation_bytes(mlp.tokens, mlp.d_model, mlp.dtype) : 0;
  s.col = RankGemm{mlp.tokens, cols, mlp.d_model, mlp.dtype};
  s.activation_bytes = activation_bytes(mlp.tokens, cols + ffn_rank, mlp.dtype);
  s.row = RankGemm{mlp.tokens, mlp.d_model, ffn_rank, mlp.dtype};
  s.reduce_scatter_bytes = activation_bytes(mlp.tokens, mlp.d_model, mlp.dtype);
  return s;
}

AttentionShapes attention_shapes(const AttentionTpSp& att, int tp) {
  AttentionShapes s;
  const std::int64_t tokens = att.batch * att.seq;
  // Explicit head width (Qwen3-MoE's head_dim) or d_model / heads: q, k and v are head_dim wide per
  // head, so qkv's N and out_proj's K follow heads x head_dim, not d_model. Qwen3's per-head q_norm /
  // k_norm (RMSNorm over head_dim) are elementwise and not counted, as no other RMSNorm of the
  // attention block is (only MLA's latent norms are: latent_norm_bytes).
  const std::int64_t head_dim = att.head_dim > 0 ? att.head_dim : att.d_model / att.heads;
  const std::int64_t kv_heads = att.kv_heads > 0 ? att.kv_heads : att.heads;
  const std::int64_t heads_rank = att.heads / tp;
  const std::int64_t kv_rank = std::max<std::int64_t>(1, kv_heads / tp);  // GQA: kv heads replicate when kv < tp
  s.all_gather_bytes = att.gather_input ? activation_bytes(tokens, att.d_model, att.dtype) : 0;
  s.qkv = RankGemm{tokens, (heads_rank + 2 * kv_rank) * head_dim, att.d_model, att.dtype};
  s.attention_flops = attention_flops(att.batch, att.seq, heads_rank, head_dim, att.causal);
  s.attention_tiles = att.batch * heads_rank * ceil_div(att.seq, kAttentionQueryBlock);
  if (att.implementation == AttentionImplementation::unfused) {
    UnfusedAttention u{att.batch * heads_rank, att.seq, head_dim, att.dtype, att.attention_dropout};
    const auto tiles128 = [](const RankGemm& g) { return ceil_div(g.m, 128) * ceil_div(g.n, 128); };
    s.attention_tiles = u.problems * (tiles128(u.scores()) + tiles128(u.context()));
    s.unfused = u;
  }
  s.out = RankGemm{tokens, att.d_model, heads_rank * head_dim, att.dtype};
  s.reduce_scatter_bytes = activation_bytes(tokens, att.d_model, att.dtype);
  return s;
}

MlaShapes mla_shapes(const Transformer& t, int tp) {
  const LatentAttention& a = t.mla.value();
  MlaShapes s;
  const std::int64_t tokens = t.batch * t.seq;
  const std::int64_t shard = tokens / tp;  // the rank's sequence-parallel tokens
  const std::int64_t heads_rank = t.heads / tp;
  const std::int64_t qk_dim = a.qk_nope + a.qk_rope;
  // Down-projections (DeepSeek-V2 eq. 9 c^KV = W^DKV h, eq. 14 k^R = RoPE(W^KR h), eq. 12 c^Q = W^DQ h):
  // W^DKV and W^KR are one linear_kv_down_proj, replicated, on the rank's own tokens.
  if (a.q_lora > 0) s.q_down = RankGemm{shard, a.q_lora, t.d_model, t.dtype};
  s.kv_down = RankGemm{shard, a.kv_lora + a.qk_rope, t.d_model, t.dtype};
  s.latent_norm_bytes = 2 * activation_bytes(shard, a.q_lora + a.kv_lora, t.dtype);
  s.q_all_gather_bytes = activation_bytes(tokens, a.q_lora > 0 ? a.q_lora : t.d_model, t.dtype);
  s.kv_all_gather_bytes = activation_bytes(tokens, a.kv_lora, t.dtype);
  s.rope_all_gather_bytes = activation_bytes(tokens, a.qk_rope, t.dtype);
  // Up-projections (eq. 10-11 k^C = W^UK c^KV, v^C = W^UV c^KV as one linear_kv_up_proj; eq. 13 and 15
  // q^C = W^UQ c^Q, q^R = RoPE(W^QR c^Q) as one linear_q_up_proj), column-parallel over heads.
  s.q_up = RankGemm{tokens, heads_rank * qk_dim, a.q_lora > 0 ? a.q_lora : t.d_model, t.dtype};
  s.kv_up = RankGemm{tokens, heads_rank * (a.qk_nope + a.v_head), a.kv_lora, t.dtype};
  s.rope_bytes = 2 * activation_bytes(tokens, heads_rank * a.qk_rope + a.qk_rope, t.dtype);
  // eqs. 16-19: attention over [q^C; q^R] . [k^C; k^R] (nope + rope wide) and values v_head wide.
  s.attention_flops = attention_flops(t.batch, t.seq, heads_rank, qk_dim, a.v_head, true);
  s.attention_tiles = t.batch * heads_rank * ceil_div(t.seq, kAttentionQueryBlock);
  s.out = RankGemm{tokens, t.d_model, heads_rank * a.v_head, t.dtype};
  s.reduce_scatter_bytes = activation_bytes(tokens, t.d_model, t.dtype);
  return s;
}

UlyssesShapes ulysses_shapes(const AttentionUlysses& att, int tp) {
  UlyssesShapes s;
  const std::int64_t local_tokens = att.batch * (att.seq / tp);
  const std::int64_t head_dim = att.d_model / att.heads;
  const std::int64_t heads_rank = att.heads / tp;
  s.qkv_all_to_all_bytes = 3 * activation_bytes(local_tokens, att.d_model, att.dtype);
  s.attention_flops = attention_flops(att.batch, att.seq, heads_rank, head_dim, att.causal);
  s.attention_tiles = att.batch * heads_rank * ceil_div(att.seq, kAttentionQueryBlock);
  s.out_all_to_all_bytes = activation_bytes(local_tokens, att.d_model, att.dtype);
  return s;
}

DecodeShapes decode_shapes(const DecodeStack& dec, int tp) {
  DecodeShapes s;
  const std::int64_t head_dim = dec.d_model / dec.heads;
  const std::int64_t kv_heads = dec.kv_heads > 0 ? dec.kv_heads : dec.heads;
  const std::int64_t q_width = dec.heads * head_dim;
  const std::int64_t kv_width = kv_heads * head_dim;
  const std::int64_t p = dtype_bytes(dec.dtype);
  s.attention_weight_bytes = (dec.d_model * (q_width + 2 * kv_width) + q_width * dec.d_model) * p / tp;
  s.mlp_weight_bytes = 3 * dec.d_model * dec.d_ffn * p / tp;
  s.all_reduce_bytes = activation_bytes(1, dec.d_model, DType::bf16);
  return s;
}

AttentionTpSp transformer_attention(const Transformer& t) {
  AttentionTpSp a;
  a.batch = t.batch;
  a.seq = t.seq;
  a.d_model = t.d_model;
  a.heads = t.heads;
  a.kv_heads = t.kv_heads;
  a.head_dim = t.head_dim;
  a.causal = true;
  a.dtype = t.dtype;
  a.implementation = t.attention;
  a.attention_dropout = t.dropout > 0;
  return a;
}

MlpTpSp transformer_mlp(const Transformer& t) {
  MlpTpSp m;
  m.tokens = t.batch * t.seq;
  m.d_model = t.d_model;
  m.d_ffn = t.d_ffn;
  m.gated = true;
  m.dtype = t.dtype;
  return m;
}

std::optional<Transformer> named_model(const std::string& name, const Transformer& base) {
  const std::optional<ModelConfig> config = builtin_model_config(name);
  if (!config) return std::nullopt;
  Transformer t = base;
  t.model = name;
  t.layers = config->layers;
  t.d_model = config->d_model;
  t.d_ffn = config->d_ffn;
  t.heads = config->heads;
  t.kv_heads = config->kv_heads;
  t.head_dim = config->head_dim;
  return t;
}

namespace {

// The kind each shape is written as. WorkloadKind lists the kinds in the order of Workload::shape's
// alternatives (sim/workload_kind.hpp), so a workload's kind is the index of its shape: checked here.
using WorkloadShapeVariant = decltype(Workload::shape);
constexpr WorkloadKind kind_of_shape(const GemmCollective*) { return WorkloadKind::gemm_collective; }
constexpr WorkloadKind kind_of_shape(const MlpTpSp*) { return WorkloadKind::mlp_tpsp; }
constexpr WorkloadKind kind_of_shape(const AttentionTpSp*) { return WorkloadKind::attention_tpsp; }
constexpr WorkloadKind kind_of_shape(const AttentionUlysses*) { return WorkloadKind::attention_ulysses; }
constexpr WorkloadKind kind_of_shape(const DecodeStack*) { return WorkloadKind::decode_stack; }
constexpr WorkloadKind kind_of_shape(const Transformer*) { return WorkloadKind::transformer; }
constexpr WorkloadKind kind_of_shape(const Moe*) { return WorkloadKind::moe; }
template <std::size_t... I>
constexpr bool kinds_in_shape_order(std::index_sequence<I...>) {
  return ((kind_of_shape(static_cast<const std::variant_alternative_t<I, WorkloadShapeVariant>*>(nullptr)) == static_cast<WorkloadKind>(I)) &&
          ...);
}
static_assert(std::variant_size_v<WorkloadShapeVariant> == kWorkloadKindNames.size());
static_assert(kinds_in_shape_order(std::make_index_sequence<std::variant_size_v<WorkloadShapeVariant>>{}));

WorkloadKind shape_kind(const Workload& w) { return static_cast<WorkloadKind>(w.shape.index()); }

// Each attention head takes d_model / heads of the width (without an explicit head width).
void require_heads_divide_width(std::int64_t d_model, std::int64_t heads) {
  if (!rule::width_by_heads.holds(d_model, heads))
    throw std::invalid_argument(fmt::format("workload.{}: {} is not divisible by {}", rule::width_by_heads.key,
                                            rule::width_by_heads.value_name, rule::width_by_heads.divisor));
}

void validate_shape(const GemmCollective& g, int tp) {
  require_positive(g.m, "m");
  require_positive(g.n, "n");
  require_positive(g.k, "k");
  // Reduce-scatter and all-to-all split the output rows across ranks.
  if (g.primitive == Primitive::reduce_scatter || g.primitive == Primitive::all_to_all) require_divisible(rule::gemm_rows_by_tp, g.m, tp);
}

void validate_shape(const MlpTpSp& m, int tp) {
  require_positive(m.tokens, "tokens");
  require_positive(m.d_model, "d_model");
  require_positive(m.d_ffn, "d_ffn");
  require_divisible(rule::tokens_by_tp, m.tokens, tp);
  require_divisible(rule::ffn_by_tp, m.d_ffn, tp);
}

// The attention every TP+SP attention block and transformer layer shares.
void validate_attention(std::int64_t batch, std::int64_t seq, std::int64_t d, std::int64_t heads, std::int64_t kv,
                        std::int64_t head_dim, int tp) {
  require_positive(batch, "batch");
  require_positive(seq, "seq");
  require_positive(d, "d_model");
  require_positive(heads, "heads");
  if (kv < 0) throw std::invalid_argument("workload.kv_heads: must be >= 0");
  if (head_dim < 0) throw std::invalid_argument("workload.head_dim: must be >= 0");
  // An explicit head width frees d_model from being a multiple of heads (Qwen3-MoE).
  if (head_dim == 0) require_heads_divide_width(d, heads);
  if (kv > 0 && !rule::heads_by_kv_heads.holds(heads, kv))
    throw std::invalid_argument(fmt::format("workload.{}: {} is not divisible by {}", rule::heads_by_kv_heads.key,
                                            rule::heads_by_kv_heads.value_name, rule::heads_by_kv_heads.divisor));
  require_divisible(rule::heads_by_tp, heads, tp);
  require_divisible(rule::batch_seq_by_tp, batch * seq, tp);
}

void validate_shape(const AttentionTpSp& a, int tp) {
  validate_attention(a.batch, a.seq, a.d_model, a.heads, a.kv_heads, a.head_dim, tp);
}

// A transformer's MoE block: its EP group is the TP group, routing each rank's sequence-parallel shard.
void validate_moe_block(const Transformer& t, const Moe& m, int tp) {
  if (m.experts < 1 || m.top_k < 1 || !rule::top_k_within_experts.holds(m.top_k, m.experts))
    throw std::invalid_argument(fmt::format("workload.top_k: must be in [1, experts = {}] (got {})", m.experts, m.top_k));
  if (m.ep != tp || !rule::experts_by_tp.holds(m.experts, tp))
    throw std::invalid_argument(fmt::format(
        "workload.experts: the EP group is the TP group (ep = tp = {}), which must divide experts = {}", tp, m.experts));
  require_positive(m.d_ffn_expert, "d_ffn_expert");
  if (m.d_model != t.d_model || m.tokens * tp != t.batch * t.seq)
    throw std::invalid_argument("workload.experts: the MoE block must route each rank's batch x seq / tp tokens "
                                "of d_model");
  if (t.dense_layers < 0 || !rule::dense_layers_within_layers.holds(t.dense_layers, t.layers))
    throw std::invalid_argument(fmt::format("workload.dense_layers: must be in [0, layers = {}]", t.layers));
}

void validate_shape(const Transformer& t, int tp) {
  if (t.layers < 1) throw std::invalid_argument(fmt::format("workload.layers: must be >= 1 (got {})", t.layers));
  require_positive(t.d_ffn, "d_ffn");
  require_divisible(rule::ffn_by_tp, t.d_ffn, tp);
  if (t.mla && !t.moe)
    throw std::invalid_argument("workload.model: multi-head latent attention runs in a mixture-of-experts "
                                "transformer only");
  if (t.mla &&
      (t.mla->kv_lora < 1 || t.mla->qk_nope < 1 || t.mla->qk_rope < 1 || t.mla->v_head < 1 || t.mla->q_lora < 0))
    throw std::invalid_argument("workload.model: a latent attention width is not positive");
  if (t.moe) validate_moe_block(t, *t.moe, tp);
  validate_attention(t.batch, t.seq, t.d_model, t.heads, t.kv_heads, t.head_dim, tp);
}

void validate_shape(const AttentionUlysses& a, int tp) {
  require_positive(a.batch, "batch");
  require_positive(a.seq, "seq");
  require_positive(a.d_model, "d_model");
  require_positive(a.heads, "heads");
  require_heads_divide_width(a.d_model, a.heads);
  require_divisible(rule::ulysses_seq_by_tp, a.seq, tp);
  require_divisible(rule::heads_by_tp, a.heads, tp);
}

void validate_shape(const DecodeStack& d, int tp) {
  if (d.layers < 1) throw std::invalid_argument(fmt::format("workload.layers: must be >= 1 (got {})", d.layers));
  require_positive(d.d_model, "d_model");
  require_positive(d.d_ffn, "d_ffn");
  require_positive(d.heads, "heads");
  require_heads_divide_width(d.d_model, d.heads);
  require_divisible(rule::heads_by_tp, d.heads, tp);
  require_divisible(rule::ffn_by_tp, d.d_ffn, tp);
}

void validate_shape(const Moe& m, int tp) {
  require_positive(m.tokens, "tokens");
  require_positive(m.d_model, "d_model");
  require_positive(m.d_ffn_expert, "d_ffn_expert");
  if (m.experts < 1 || m.top_k < 1 || !rule::top_k_within_experts.holds(m.top_k, m.experts))
    throw std::invalid_argument(fmt::format("workload.top_k: must be in [1, experts = {}] (got {})", m.experts, m.top_k));
  if (m.ep < 1 || !rule::experts_by_ep.holds(m.experts, m.ep))
    throw std::invalid_argument(fmt::format("workload.ep: must divide experts = {} (got {})", m.experts, m.ep));
  if (m.expert_tp < 1 || !rule::expert_ffn_by_expert_tp.holds(m.d_ffn_expert, m.expert_tp))
    throw std::invalid_argument(
        fmt::format("workload.expert_tp: must divide d_ffn_expert = {} (got {})", m.d_ffn_expert, m.expert_tp));
  if (tp != m.ep * m.expert_tp)
    throw std::invalid_argument(
        fmt::format("workload.ep: the graph's ranks ({}) must be ep x expert_tp ({} x {})", tp, m.ep, m.expert_tp));
  if (m.shared_experts < 0) throw std::invalid_argument("workload.shared_experts: must be >= 0");
}

}  // namespace

void validate_workload(const Workload& w) {
  if (w.tp < 1) throw std::invalid_argument(fmt::format("workload.tp: must be >= 1 (got {})", w.tp));
  // The kind names the shape; one that does not is a workload built by hand wrongly.
  if (w.kind != shape_kind(w))
    throw std::invalid_argument(fmt::format("workload.kind: a {} workload holds a {} shape", workload_kind_name(w.kind),
                                            workload_kind_name(shape_kind(w))));
  std::visit([&](const auto& s) { validate_shape(s, w.tp); }, w.shape);
}

}  // namespace overlap::sim
