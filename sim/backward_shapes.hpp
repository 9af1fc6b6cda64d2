#pragma once
// The backward pass of every layer workload as the steps a scheme overlaps (docs/guide/training.md),
// per rank, from the same shapes as the forward (sim/workload_shapes.hpp).
//
// A TP + SP linear's backward follows Megatron-LM's sequence parallelism (Korthikanti et al., "Reducing
// Activation Recomputation in Large Transformer Models", Sec. 4.2.2) and the conjugate operators of
// Shoeybi et al. ("Megatron-LM", Sec. 3, the f / g operators of Fig. 3): what is an all-gather in the
// forward is a reduce-scatter in the backward and the other way round; an all-reduce in the forward is
// the identity in the backward, and the identity an all-reduce.
//   row-parallel linear (forward: GEMM, reduce-scatter): all-gather dY, then
//       dgrad  dX = dY W^T   and   wgrad  dW = X^T dY;
//   column-parallel linear (forward: all-gather X, GEMM): dgrad dX = dY W^T, reduce-scatter dX; the
//       input is all-gathered again for wgrad dW = X^T dY (Megatron saves only each rank's shard).
// A forward GEMM of M x N x K has a dgrad of M x K x N and a wgrad of K x N x M (the tokens become the
// reduction dimension): dgrad and wgrad are separate GEMMs with their own waves, and together twice the
// forward's FLOPs (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters",
// Sec. 5.1: a backward pass is twice a forward pass).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cost_model/units.hpp"
#include "sim/workload.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

// A unit of a layer workload that the forward emitters build as one piece: the whole workload
// (gemm_collective, mlp_tpsp, attention_tpsp, attention_ulysses), or the attention or MLP half of a
// transformer layer.
enum class Block : std::uint8_t { whole, attention, mlp };

// The blocks of one layer in forward order (transformer: attention, MLP; else the whole workload).
std::vector<Block> layer_blocks(const Workload& w);
// Layers the blocks repeat over (transformer: its layers; else 1).
int layer_count(const Workload& w);

// The backward GEMMs of a forward M x N x K GEMM: dgrad M x K x N, wgrad K x N x M.
RankGemm dgrad_of(const RankGemm& forward);
RankGemm wgrad_of(const RankGemm& forward);

struct LinearBackward {
  std::string name;  // the forward GEMM's name: "fc2", "qkv", ...
  // The collective that brings dY in before dgrad (row-parallel: all_gather; after a forward
  // all-to-all: all_to_all); bytes = nccl-tests S, 0 = none.
  Primitive gather = Primitive::all_gather;
  Bytes gather_bytes = 0;
  RankGemm dgrad;  // M = tokens, N = the linear's input width on this rank, K = its output width
  // The collective of dX after dgrad (column-parallel: reduce_scatter with SP, all_reduce without);
  // 0 = none.
  Primitive scatter = Primitive::reduce_scatter;
  Bytes scatter_bytes = 0;
  // The input all-gathered again for wgrad (column-parallel with SP); 0 = none.
  Bytes regather_bytes = 0;
  RankGemm wgrad;  // M = input width, N = output width, K = tokens (the gathered dimension)
};

// One step of a block's backward, in the order it runs.
struct BackwardStep {
  enum class Kind : std::uint8_t {
    linear,    // LinearBackward
    memory,    // an elementwise backward (activation): `bytes` through HBM
    flops,     // core attention's backward: `flops` in `tiles` tiles
    ulysses,   // all-to-all (ulysses_in_bytes), core attention backward, all-to-all (bytes)
  };
  Kind kind = Kind::memory;
  std::string name;
  LinearBackward linear;
  Bytes bytes = 0;
  double flops = 0;
  std::int64_t tiles = 0;
  DType dtype = DType::bf16;
  Bytes ulysses_in_bytes = 0;
  std::int64_t heads = 0;  // ulysses: the rank's heads (what data slicing cuts)
  // Core attention forward FLOPs of this step's block (what selective recomputation redoes first).
  double recompute_flops = 0;
  // flops: core attention unfused (its kernels instead of one tiled kernel of `flops`).
  std::optional<UnfusedAttention> unfused;
};

std::vector<BackwardStep> backward_steps(const Workload& w, Block block);

// Model FLOPs of one block's forward on one rank: its GEMMs and core attention (the FLOPs MFU counts,
// PaLM, Chowdhery et al., Appendix B; no recomputation).
double forward_flops(const Workload& w, Block block);
// Model FLOPs of the workload's whole forward on one rank: forward_flops of every layer's blocks. A MoE
// transformer's FFN from dense_layers on is its MoE block's moe_forward_flops: the router, the shared
// experts and the routed experts' GEMMs on the slots routed (each token's top_k experts, dropped slots
// left out), per GPU; the inactive experts' weights count nothing. A dense transformer step with its
// step kernels and a vocabulary adds the output layer's GEMM (output_layer_flops).
double workload_forward_flops(const Workload& w);
// The output layer's forward GEMM on one rank (tokens x vocab / tp x d_model) where the step runs it
// (sim/schemes/training_step.cpp); 0 otherwise.
double output_layer_flops(const Workload& w);
// Trainable weights of one block on one rank (elements): what its gradients and FSDP's gathers move.
// Norm weights are left out (d_model elements against d_model x d_ffn / tp).
std::int64_t block_parameters(const Workload& w, Block block);
// Tokens one step of the TP group processes (batch x seq, or a GEMM's rows).
std::int64_t step_tokens(const Workload& w);
// The element type of the workload's activations and weights.
DType workload_dtype(const Workload& w);

}  // namespace overlap::sim
