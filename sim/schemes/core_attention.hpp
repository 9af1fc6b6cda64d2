#pragma once
// Core attention's kernels on one rank (workload.attention; docs/guide/training.md "Core attention").
// Flash attention is one tiled kernel from its FLOPs (GraphBuilder::add_flop_kernel). Unfused attention
// is the kernel sequence Megatron-LM ran before flash attention (megatron/model/transformer.py
// CoreAttention, Narayanan et al. SC'21), each kernel priced from its shape by the cost model:
//   forward   Q K^T, one batched GEMM over every seq x seq score of the rank's batch x heads (no causal
//             skipping: torch.baddbmm computes the whole matrix); the fused scale-mask-softmax (one read
//             of the scores, one write of the probabilities, FusedScaleMaskSoftmax); dropout on the
//             probabilities (reads them, writes the dropped ones and a 1-byte mask); probabilities x V,
//             one batched GEMM.
//   backward  dP = dO V^T and dV = P^T dO (two batched GEMMs); dropout's backward (reads dP and the
//             mask, writes dP); the softmax's backward (reads the probabilities and dP, writes dS); dQ =
//             dS K and dK = dS^T Q (two batched GEMMs).
// A batched GEMM is one launch: one grid of problems x tiles CTAs (a grouped GEMM of identical problems,
// as cost_model/gemm_launch.hpp prices a strided-batched launch); the softmax and dropout kernels are
// memory-bound kernels, their bytes over the profile's HBM rate plus a launch, as the step's others.
#include <string>
#include <vector>

#include "sim/schemes/graph_builder.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

enum class AttentionPass : std::uint8_t { forward, backward };

// Unfused attention's kernels, in order, on `rank`'s `stream` after `deps`; returns the last one.
// Op names: name + ".scores", ".softmax", ".dropout", ".context" (forward); ".dprobs", ".dv",
// ".dropout", ".softmax", ".dq", ".dk" (backward). Dropout's kernels only with UnfusedAttention::dropout.
OpId add_unfused_attention(GraphBuilder& b, int rank, StreamId stream, const UnfusedAttention& u, AttentionPass pass,
                           const std::string& name, const std::vector<OpId>& deps);

// Core attention's forward as the workload runs it: unfused (AttentionShapes::unfused) or one tiled kernel.
OpId add_core_attention(GraphBuilder& b, int rank, StreamId stream, const AttentionShapes& s, DType dtype,
                        const std::string& name, const std::vector<OpId>& deps);

// The bytes the memory-bound kernels of unfused attention move, each kernel's read + written.
struct UnfusedAttentionBytes {
  Bytes softmax = 0;           // forward: read the scores, write the probabilities
  Bytes dropout = 0;           // forward: read the probabilities, write the dropped ones and the mask (0: none)
  Bytes dropout_backward = 0;  // read dP and the mask, write dP (0: none)
  Bytes softmax_backward = 0;  // read the probabilities and dP, write dS
};
UnfusedAttentionBytes unfused_attention_bytes(const UnfusedAttention& u);

}  // namespace overlap::sim
