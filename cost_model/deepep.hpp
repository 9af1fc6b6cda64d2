#pragma once
// DeepEP's expert all-to-all (deepseek-ai/DeepEP, the V1 kernels its "legacy" documentation
// describes; DeepSeek-V3 technical report Sec. 3.2.2), the dispatch and combine MoE training and
// serving at scale run instead of NCCL's pairwise all-to-all.
//
//   normal kernels       (training, prefill) a token goes once to every node holding one of its experts,
//                        over RDMA to the GPU of the same index there, which forwards it over NVLink to
//                        each GPU of its node holding its experts. Node-limited routing (the report's
//                        "each token is sent to at most M nodes", M = 4 for DeepSeek-V3) bounds the
//                        RDMA copies; the NVLink forwarding is the node's second hop.
//   low-latency kernels  (decoding) each (token, expert) selection goes straight to the expert's GPU,
//                        over RDMA to another node and over NVLink inside the node, all peers at once
//                        (one message per selection, no deduplication, no forwarding): the time is the
//                        busier of the GPU's NIC and NVLink plus a fixed cost that does not grow with
//                        the number of peers.
// Each GPU's NIC and NVLink port work at once; an operation takes as long as its busiest GPU's
// busiest port. Combine moves the same pairs back (BF16) and reduces them on the way.
#include <cstdint>
#include <vector>

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
  double nvlink_send = 0, nvlink_recv = 0;  // through its NVLink port
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

// The message of one token: hidden values in FP8 with one 4-byte scale per 128 (DeepEP's per-token,
// per-128-channel quantisation), or in BF16.
double deepep_fp8_token_bytes(std::int64_t hidden);
double deepep_bf16_token_bytes(std::int64_t hidden);

}  // namespace overlap
