#pragma once
// The transfers of NCCL's algorithms, per rank and step (design.md "Collectives", fidelity `steps`).
// Only the shape lives here: who sends how many bytes to whom in which step. Latencies and the
// bandwidth the bytes move at come from the plan (collective_model.cpp), so that the steps take the
// plan's time on an idle fabric.
//
// Ring algorithms run their natural steps (chunk S/n to the next rank, n-1 per phase). Pipelined
// algorithms (tree, NVLS, broadcast/reduce chains) move every byte of a call concurrently on every
// hop once the pipeline is full, so they are one step carrying each rank's whole traffic, followed by
// latency-only steps for the pipeline's depth: the bytes cross the links they really cross, for as
// long as the plan says.
//
//  Ring        all_reduce (reduce-scatter then all-gather), reduce_scatter, all_gather: n-1 steps per
//              phase on a switch; on a full mesh NCCL's rings of different orders use every link at
//              once, so each phase is one step to every peer plus latency-only steps.
//              Across nodes one ring per NIC a node's ranks reach, each carrying its share of S:
//              ring c enters every node at the GPU of NIC c and leaves it from the node's GPU before
//              that one (NCCL's search: NET -> GPU a -> ... -> GPU x -> NET), so every NIC sends and
//              receives one ring's traffic.
//  Ring        broadcast / reduce (root 0): a chain r -> r+1 (reduce: r -> r-1), one step; across
//              nodes one chain per NIC along those rings.
//  Tree        all_reduce: a chain through each node's GPUs (NCCL's intra-node tree) and NCCL's double
//              binary tree between nodes (each tree carries S/2); S up then S down each hop (one step
//              each way); across nodes one such pair per NIC (its share of S), headed on each node by
//              the GPU of that NIC. On a full mesh, like the ring: every peer at once.
//  NVLS        all_reduce on one node: each rank sends its buffer to the switch (the switch reads
//              every chunk to reduce it) and its reduced chunk back for multicast; it receives its
//              reduced chunk and every chunk of the result: (n+1)/n x S each way through its switch
//              link. reduce_scatter / all_gather: the halves of that.
//  PAT         reduce_scatter / all_gather: Bruck-style exchanges at distances 1, 2, 4, ...
//  SendRecv    all_to_all: round i sends to rank+i and receives from rank-i (a full mesh: all at once).
// NVLSTree and CollNet (across nodes, switch reductions in the network too) have no steps here yet:
// std::invalid_argument.
#include <vector>

#include "cost_model/collective_model.hpp"
#include "cost_model/nccl_tuning.hpp"

namespace overlap {

// The transfers of one call (no latencies): ranks[r][s]. Throws std::invalid_argument for a
// combination without steps (see above).
std::vector<std::vector<CollectiveStep>> nccl_algorithm_steps(const NcclCommunicator& comm, CollectivePrimitive p,
                                                              NcclAlgorithm a, Bytes bytes);

// How many steps NCCL's latency model counts for this call (at least the transfer steps): the
// plan's latency beyond the base is spread evenly over them.
int nccl_latency_steps(const NcclCommunicator& comm, CollectivePrimitive p, NcclAlgorithm a);

}  // namespace overlap
