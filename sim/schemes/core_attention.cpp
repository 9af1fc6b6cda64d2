#include "sim/schemes/core_attention.hpp"

namespace overlap::sim {

UnfusedAttentionBytes unfused_attention_bytes(const UnfusedAttention& u) {
  const Bytes m = u.matrix_bytes();
  UnfusedAttentionBytes out;
  out.softmax = 2 * m;
  out.softmax_backward = 3 * m;
  if (u.dropout) {
    out.dropout = 2 * m + u.mask_bytes();
    out.dropout_backward = 2 * m + u.mask_bytes();
  }
  return out;
}

OpId add_unfused_attention(GraphBuilder& b, int rank, StreamId stream, const UnfusedAttention& u, AttentionPass pass,
                           const std::string& name, const std::vector<OpId>& deps) {
  const UnfusedAttentionBytes bytes = unfused_attention_bytes(u);
  std::vector<OpId> after = deps;
  // Each kernel waits for the one before it (they share the stream; the dependency also holds when a
  // caller passes ops of another stream in `deps`).
  auto batched = [&](const RankGemm& g, const std::string& tag) {
    GemmOptions o;
    o.name = name + tag;
    o.deps = after;
    const OpId op = b.add_grouped_gemm(rank, stream, std::vector<GemmShape>(static_cast<std::size_t>(u.problems), g), o);
    after = {op};
    return op;
  };
  auto memory = [&](Bytes n, const std::string& tag) {
    if (n <= 0) return;
    after = {b.add_memory(rank, stream, MemoryKernel{name + tag, n, after, 0})};
  };
  if (pass == AttentionPass::forward) {
    batched(u.scores(), ".scores");
    memory(bytes.softmax, ".softmax");
    memory(bytes.dropout, ".dropout");
    return batched(u.context(), ".context");
  }
  batched(u.scores(), ".dprobs");
  batched(u.context(), ".dv");
  memory(bytes.dropout_backward, ".dropout");
  memory(bytes.softmax_backward, ".softmax");
  batched(u.context(), ".dq");
  return batched(u.context(), ".dk");
}

OpId add_core_attention(GraphBuilder& b, int rank, StreamId stream, const AttentionShapes& s, DType dtype,
                        const std::string& name, const std::vector<OpId>& deps) {
  if (s.unfused) return add_unfused_attention(b, rank, stream, *s.unfused, AttentionPass::forward, name, deps);
  return b.add_flop_kernel(rank, stream, name, s.attention_flops, s.attention_tiles, dtype, deps);
}

}  // namespace overlap::sim
