#pragma once
// DeepEP's expert all-to-all (deepseek-ai/DeepEP, the V1 kernels its "legacy" documentation
// describes; DeepSeek-V3 technical report Sec. 3.2.2), the dispatch and combine MoE training and
// serving at scale run instead of NCCL's pairwise all-to-all.
//
//   normal kernels       (training, prefill) a token goes once to every node holding one of its experts,
//                        over RDMA to the GPU of the same index there, which forwards it over NVLink to
//                        each GPU of its node holding its experts. Node-limited routing (the report's
//                        "each token is sent to at most M nodes", M = 4 for DeepSeek-V3) bounds the
//                        RDMA copies; the NVLink forwarding is the node's second hop. Every copy a GPU
//                        receives passes that NVLink stage, its own included: the intranode kernels
//                        give each rank (the GPU's own among them) a warp group, a channel queue in the
//                        receiver's buffer and the receiver's copy out of it, and the internode
//                        forwarders write to every GPU of their node, themselves too
//                        (csrc/kernels/legacy/intranode.cu, internode.cu: `responsible_rank` runs over
//                        all ranks). So the NVLink stage's time is every received copy over the
//                        NVLink rate, as DeepEP's own "bottleneck bandwidth" counts it (its own
//                        tokens included) against the ~160 GB/s NVLink maximum.
//   low-latency kernels  (decoding) each (token, expert) selection goes straight to the expert's GPU,
//                        over RDMA to another node and over NVLink inside the node, all peers at once
//                        (one message per selection, no deduplication, no forwarding): the time is the
//                        busier of the GPU's NIC and NVLink plus a fixed cost that does not grow with
//                        the number of peers.
// Each GPU's NIC and NVLink port work at once; an operation takes as long as its busiest GPU's
// busiest port. Combine moves the same pairs back (BF16) and reduces them on the way.
#include <cstdint>
#include <vector>

#include "cost_model/all_to_allv.hpp"
#include "cost_model/hardware_profile.hpp"
#include "cost_model/units.hpp"

namespace overlap {

enum class DeepEpKernel : std::uint8_t { normal, low_latency };

struct DeepEpLayout {
  int ep = 1;             // GPUs (ranks) in the expert-parallel group
  int gpus_per_node = 8;  // GPUs of one node in the group (min(ep, node size))
  int experts = 1;        // routed experts, spread evenly: experts / ep per GPU
  int top_k = 1;          // experts per token
  int max_nodes = 0;      // node-limited routing: a token's experts lie on at most this many nodes (0: any)
};

// Throws std::invalid_argument naming the rule a layout breaks (ep a multiple of gpus_per_node,
// experts a multiple of ep, 1 <= top_k <= experts, max_nodes <= nodes).
void check_deepep_layout(const DeepEpLayout& layout);

// What one GPU's ports carry in one dispatch (or, reversed, one combine), in bytes.
struct DeepEpPortBytes {
  double rdma_send = 0, rdma_recv = 0;      // through its NIC
  double nvlink_send = 0, nvlink_recv = 0;  // through its NVLink stage (normal kernels: its own copies too)
};

// Per GPU (ep entries) from an explicit routing: experts_of[g][t] lists the experts of token t of GPU
// g. token_bytes: one token's message (the hidden state in the dispatch's dtype, with FP8 scales).
std::vector<DeepEpPortBytes> deepep_port_bytes(DeepEpKernel kernel, const DeepEpLayout& layout,
                                               const std::vector<std::vector<std::vector<int>>>& experts_of,
                                               double token_bytes);

// The same per GPU in expectation when every token picks its top_k experts uniformly (within
// max_nodes nodes chosen uniformly), every GPU alike.
DeepEpPortBytes deepep_expected_port_bytes(DeepEpKernel kernel, const DeepEpLayout& layout,
                                           std::int64_t tokens_per_gpu, double token_bytes);

// The rates one GPU's ports sustain, in GB/s, and the kernels' fixed cost.
struct DeepEpRates {
  double rdma_gbps = 0;    // one NIC: line rate x efficiency
  double nvlink_gbps = 0;  // one GPU's NVLink, one direction
  double latency_us = 0;   // launch, signalling and the receiver's wait, paid once per operation
};

// The busiest GPU's busiest port over its rate, plus the fixed cost.
Ps deepep_time_ps(const std::vector<DeepEpPortBytes>& per_gpu, const DeepEpRates& rates);
Ps deepep_time_ps(const DeepEpPortBytes& every_gpu, const DeepEpRates& rates);

// The same per GPU of an EP group from the per-pair bytes an all-to-allv would move (pairs[src][dst], one
// copy per (token, expert) selection, as NCCL's all-to-all sends them; the group's GPUs node by node,
// layout.gpus_per_node to a node). Low latency sends one message per selection, so its ports are the
// pairs' own: bytes to other nodes through the NIC, to the node's other GPUs through NVLink (exact).
// The normal kernels route every pair as DeepEP does (another node's over RDMA to the GPU of the
// source's index there, then through its NVLink stage to the destination, that GPU itself included; its
// own node's, its own GPU's included, through the NVLink stage), so a hot GPU's remote traffic arrives
// through every NIC of its node; the deduplication needs
// each token's experts, which a count matrix does not keep, so the RDMA and NVLink hops are scaled by
// deepep_dedup_ratios. With the expected pairs of uniform routing this is deepep_expected_port_bytes
// exactly.
std::vector<DeepEpPortBytes> deepep_port_bytes_of_pairs(DeepEpKernel kernel, const DeepEpLayout& layout,
                                                        const PairBytes& pairs);

// The normal kernels' bytes per selection byte under uniform routing within max_nodes: on the RDMA hop
// (normal / selections to other nodes) and on the NVLink stage (normal / every selection, each passes it
// once). Both 1 for the low-latency kernels.
struct DeepEpDedup {
  double rdma = 1, nvlink = 1;
};
DeepEpDedup deepep_dedup_ratios(DeepEpKernel kernel, const DeepEpLayout& layout);
// The GPU a token of `src` for `dst` on another node reaches first: the GPU of src's index on dst's node.
inline int deepep_forwarder(int src, int dst, int gpus_per_node) {
  return dst / gpus_per_node * gpus_per_node + src % gpus_per_node;
}

// The rates of a GPU of `hw` (a multi_node profile, or one node): its share of the node's NICs
// (fabric.links.network x fabric.nic_efficiency x nics_per_node / gpus_per_node), its NVLink port one
// way (fabric.links.nvlink x comm.bandwidth_efficiency), and kDeepEpFixedCostUs. Throws
// std::invalid_argument when the profile has no nvlink class (DeepEP's kernels need NVLink in the node).
DeepEpRates deepep_rates(const HardwareProfile& hw);

// The fixed cost of one DeepEP operation: DeepEP's EP 8 low-latency dispatch (77 us, docs/legacy.md
// "Performance", H800) less its NVLink time at H800's 164 GB/s one way (200 x the profiles' ring
// efficiency 0.82): 128 tokens x 8 selections x 7/8 on other GPUs x 7408 bytes = 40.5 us. The one
// figure taken from DeepEP's tables; every other row is a prediction (tests/cost_model/deepep_test.cpp).
inline constexpr double kDeepEpFixedCostUs = 36.5;

// SMs the normal kernels hold while they run: DeepEP's README, "Example use in model training or
// inference prefilling" (Buffer.set_num_sms(24)). The low-latency kernels hold none once issued: the
// README's "hook-based communication-computation overlapping method that does not occupy any SM".
inline constexpr int kDeepEpNormalSms = 24;

// The message of one token: hidden values in FP8 with one 4-byte scale per 128 (DeepEP's per-token,
// per-128-channel quantisation), or in BF16.
double deepep_fp8_token_bytes(std::int64_t hidden);
double deepep_bf16_token_bytes(std::int64_t hidden);

}  // namespace overlap
