#include "cost_model/nccl_algorithms.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace overlap {
namespace {

using Ranks = std::vector<std::vector<CollectiveStep>>;
using A = NcclAlgorithm;


void add_step(Ranks& ranks) {
  for (auto& r : ranks) r.push_back(CollectiveStep{});
}

CollectiveStep& last(Ranks& ranks, int r) { return ranks[static_cast<std::size_t>(r)].back(); }

void send(Ranks& ranks, int from, int to, Bytes bytes, bool reduce) {
  if (bytes <= 0) return;
  last(ranks, from).sends.push_back({to, bytes});
  if (to == kSwitchPeer) return;
  last(ranks, to).recvs.push_back({from, bytes});
  if (reduce) last(ranks, to).reduce_bytes += bytes;
}

void from_switch(Ranks& ranks, int to, Bytes bytes) {
  if (bytes > 0) last(ranks, to).recvs.push_back({kSwitchPeer, bytes});
}

// The channel groups of a call and the ranks' order in each: one group per NIC a node's ranks reach
// (nccl_tuning.hpp NcclCommunicator::nics), the call's bytes split evenly over them. On one node (or
// with one NIC per node) one group in rank order. Across nodes group c enters each node at the rank
// whose NIC is NIC c (local rank c x ranks_per_nic), runs through every rank of the node from there,
// and leaves through the node's last rank before it, to the next node's entry rank: as NCCL's search
// lays its rings (src/graph/search.cc: NET n -> GPU a -> ... -> GPU x -> NET), each group's traffic
// between nodes crosses its own pair of NICs, and every NIC sends and receives one group's share.
struct Groups {
  std::vector<std::vector<int>> order;  // order[c]: the ranks of group c, node by node
  std::vector<Bytes> bytes;             // bytes[c]: group c's share of the call
};

Groups channel_groups(const NcclCommunicator& comm, int n, Bytes total) {
  Groups g;
  const bool spread = comm.n_nodes > 1 && comm.nics > 1 && comm.ranks_per_node > 0;
  const int groups = spread ? comm.nics : 1;
  for (int c = 0; c < groups; ++c) {
    std::vector<int> order;
    if (!spread) {
      for (int r = 0; r < n; ++r) order.push_back(r);
    } else {
      const int ppn = comm.ranks_per_node;
      for (int first = 0; first < n; first += ppn) {
        const int size = std::min(ppn, n - first);
        const int entry = (c * comm.ranks_per_nic) % size;
        for (int i = 0; i < size; ++i) order.push_back(first + (entry + i) % size);
      }
    }
    g.order.push_back(std::move(order));
    g.bytes.push_back(chunk_bytes(total, groups, c));
  }
  return g;
}

// One ring phase: n-1 steps; in each ring, the rank at position p sends chunk (p - s) of the ring's
// share to the next position (reduce-scatter reduces what arrives).
void ring_phase(Ranks& ranks, const Groups& rings, bool reduce) {
  const int n = static_cast<int>(ranks.size());
  for (int s = 0; s < n - 1; ++s) {
    add_step(ranks);
    for (std::size_t c = 0; c < rings.order.size(); ++c) {
      const std::vector<int>& o = rings.order[c];
      for (int p = 0; p < n; ++p)
        send(ranks, o[static_cast<std::size_t>(p)], o[static_cast<std::size_t>(wrap_mod(p + 1, n))],
             chunk_bytes(rings.bytes[c], n, wrap_mod(p - s, n)), reduce);
    }
  }
}

// Every rank exchanges with every peer in one step. kind 0: reduce-scatter (rank r sends chunk j to
// rank j, reduces what arrives), 1: all-gather (sends its chunk r to everyone), 2: all-to-all (sends
// block j of its buffer to rank j).
void direct_phase(Ranks& ranks, Bytes total, int kind) {
  const int n = static_cast<int>(ranks.size());
  add_step(ranks);
  for (int r = 0; r < n; ++r)
    for (int i = 1; i < n; ++i) {
      const int to = wrap_mod(r + i, n);
      send(ranks, r, to, chunk_bytes(total, n, kind == 1 ? r : to), kind == 0);
    }
}

// Round i: send to rank+i, receive from rank-i (NCCL's p2p schedule for all-to-all).
void pairwise_all_to_all(Ranks& ranks, Bytes total) {
  const int n = static_cast<int>(ranks.size());
  for (int i = 1; i < n; ++i) {
    add_step(ranks);
    for (int r = 0; r < n; ++r) {
      const int to = wrap_mod(r + i, n);
      send(ranks, r, to, chunk_bytes(total, n, to), false);
    }
  }
}

// NCCL's tree all-reduce: a chain through each node's ranks (up: reduce, down: broadcast) and a double
// binary tree over the nodes' head ranks (tree A is the heap over node indices, tree B the heap over
// the mirrored indices; each carries half of the bytes up and down). Across nodes one such pair of
// trees per channel group (channel_groups: its chain starts at the group's entry rank, whose NIC it
// uses), as NCCL's tree channels spread over the NICs. Pipelined: one step up, one step down, each
// carrying every hop's bytes (a rank sends one flow per chain step: the engine caps each flow at the
// protocol's rate, so two flows at once through one port would run twice as fast).
void tree_all_reduce(Ranks& ranks, const NcclCommunicator& comm, Bytes total) {
  const int n = static_cast<int>(ranks.size());
  const int nodes = comm.n_nodes;
  const int ppn = comm.ranks_per_node;
  const Groups groups = channel_groups(comm, n, total);
  for (int phase = 0; phase < 2; ++phase) {  // 0: up (reduce), 1: down (broadcast)
    const bool up = phase == 0;
    add_step(ranks);
    for (std::size_t c = 0; c < groups.order.size(); ++c) {
      const std::vector<int>& o = groups.order[c];
      const Bytes share = groups.bytes[c];
      const Bytes half[2] = {chunk_bytes(share, 2, 0), chunk_bytes(share, 2, 1)};
      // Position of node k's head (its first rank in the group's order).
      auto head = [&](int node) { return o[static_cast<std::size_t>(node * ppn)]; };
      for (int node = 0; node < nodes; ++node) {
        const int lo = node * ppn, hi = std::min(n, lo + ppn);
        for (int p = lo + 1; p < hi; ++p) {
          const int child = o[static_cast<std::size_t>(p)], parent = o[static_cast<std::size_t>(p - 1)];
          if (up) send(ranks, child, parent, share, true);
          else send(ranks, parent, child, share, false);
        }
      }
      for (int tree = 0; tree < 2 && nodes > 1; ++tree) {
        for (int pos = 1; pos < nodes; ++pos) {
          const int child = head(tree == 0 ? pos : nodes - 1 - pos);
          const int parent = head(tree == 0 ? (pos - 1) / 2 : nodes - 1 - (pos - 1) / 2);
          if (up) send(ranks, child, parent, half[tree], true);
          else send(ranks, parent, child, half[tree], false);
        }
      }
    }
  }
}

// NVLS on one node: the switch reduces (multimem.ld_reduce reads chunk j of every rank for rank j)
// and multicasts (multimem.st of each rank's reduced chunk to all).
void nvls(Ranks& ranks, CollectivePrimitive p, Bytes total) {
  const int n = static_cast<int>(ranks.size());
  add_step(ranks);
  for (int r = 0; r < n; ++r) {
    const Bytes mine = chunk_bytes(total, n, r);
    const bool rs = p == CollectivePrimitive::reduce_scatter || p == CollectivePrimitive::all_reduce;
    const bool ag = p == CollectivePrimitive::all_gather || p == CollectivePrimitive::all_reduce;
    Bytes out = 0, in = 0;
    if (rs) {
      out += total;  // every chunk of this rank's buffer is read by some rank's reduction
      in += mine;    // this rank's reduced chunk
    }
    if (ag) {
      out += mine;   // its chunk (reduced, or its input for all-gather) to the multicast address
      in += total;   // every rank's chunk lands in its output
    }
    send(ranks, r, kSwitchPeer, out, false);
    from_switch(ranks, r, in);
  }
}

int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

// PAT (Parallel Aggregated Trees) as Bruck exchanges: all-gather at distances 1, 2, 4, ... (rank r
// sends the blocks it holds, r .. r+cnt-1, to r-d); reduce-scatter the mirror (distances descending,
// rank r sends the partial blocks r+d .. r+d+cnt-1 to r+d, which reduces them).
void pat(Ranks& ranks, CollectivePrimitive p, Bytes total) {
  const int n = static_cast<int>(ranks.size());
  const int steps = ceil_log2(n);
  const bool ag = p == CollectivePrimitive::all_gather;
  for (int j = 0; j < steps; ++j) {
    const int k = ag ? j : steps - 1 - j;
    const int d = 1 << k;
    const int cnt = std::min(d, n - d);
    add_step(ranks);
    for (int r = 0; r < n; ++r) {
      Bytes b = 0;
      if (ag) {
        for (int i = 0; i < cnt; ++i) b += chunk_bytes(total, n, wrap_mod(r + i, n));
        send(ranks, r, wrap_mod(r - d, n), b, false);
      } else {
        for (int i = 0; i < cnt; ++i) b += chunk_bytes(total, n, wrap_mod(r + d + i, n));
        send(ranks, r, wrap_mod(r + d, n), b, true);
      }
    }
  }
}

// Broadcast from rank 0 / reduce to rank 0 as a pipelined chain along each channel group's ring,
// opened at rank 0.
void chain(Ranks& ranks, const NcclCommunicator& comm, CollectivePrimitive p, Bytes total) {
  const int n = static_cast<int>(ranks.size());
  add_step(ranks);
  const Groups rings = channel_groups(comm, n, total);
  for (std::size_t c = 0; c < rings.order.size(); ++c) {
    std::vector<int> o = rings.order[c];
    std::rotate(o.begin(), std::find(o.begin(), o.end(), 0), o.end());
    for (int i = 0; i + 1 < n; ++i) {
      const int a = o[static_cast<std::size_t>(i)], b = o[static_cast<std::size_t>(i + 1)];
      if (p == CollectivePrimitive::broadcast) send(ranks, a, b, rings.bytes[c], false);
      else send(ranks, b, a, rings.bytes[c], true);
    }
  }
}

void pad(Ranks& ranks, std::size_t steps) {
  while (!ranks.empty() && ranks.front().size() < steps) add_step(ranks);
}

}  // namespace

int nccl_latency_steps(const NcclCommunicator& comm, CollectivePrimitive p, NcclAlgorithm a) {
  const int n = comm.n_ranks;
  const bool ar = p == CollectivePrimitive::all_reduce;
  switch (a) {
    case A::Ring:
      if (p == CollectivePrimitive::broadcast || p == CollectivePrimitive::reduce) return 1;
      return ar ? 2 * (n - 1) : n - 1;
    case A::Tree: return std::max(2, 2 * (comm.ranks_per_node - 1) + 2 * nccl_log2i(comm.n_nodes));
    case A::NVLS: return comm.n_nodes > 1 ? 2 : 1;
    case A::NVLSTree: return 1 + 2 * nccl_log2i(comm.n_nodes);
    case A::CollnetDirect:
    case A::CollnetChain: return std::max(1, 2 * (comm.ranks_per_node - 1)) + 1;
    case A::PAT: return std::max(1, ceil_log2(n));
    case A::SendRecv: return n - 1;
  }
  return 1;
}

std::vector<std::vector<CollectiveStep>> nccl_algorithm_steps(const NcclCommunicator& comm, CollectivePrimitive p,
                                                              NcclAlgorithm a, Bytes bytes) {
  const int n = comm.n_ranks;
  if (n < 2) throw std::invalid_argument("collective steps: n_ranks must be >= 2");
  Ranks ranks(static_cast<std::size_t>(n));
  const bool ar = p == CollectivePrimitive::all_reduce;
  const std::string what = std::string(nccl_algorithm_name(a)) + " " + collective_primitive_name(p);
  switch (a) {
    case A::Ring:
      if (p == CollectivePrimitive::broadcast || p == CollectivePrimitive::reduce) {
        chain(ranks, comm, p, bytes);
        break;
      }
      if (p == CollectivePrimitive::all_to_all) throw std::invalid_argument("collective steps: all_to_all runs as SendRecv");
      if (comm.full_mesh) {
        const std::size_t phase = static_cast<std::size_t>(n - 1);
        if (p != CollectivePrimitive::all_gather) {
          direct_phase(ranks, bytes, 0);
          pad(ranks, phase);
        }
        if (p != CollectivePrimitive::reduce_scatter) {
          direct_phase(ranks, bytes, 1);
          pad(ranks, ar ? 2 * phase : phase);
        }
      } else {
        const Groups rings = channel_groups(comm, n, bytes);
        if (p != CollectivePrimitive::all_gather) ring_phase(ranks, rings, true);
        if (p != CollectivePrimitive::reduce_scatter) ring_phase(ranks, rings, false);
      }
      break;
    case A::Tree:
      if (!ar) throw std::invalid_argument("collective steps: Tree runs only all_reduce");
      if (comm.full_mesh) {
        // NCCL's channels chain the ranks in different orders, so on a full mesh the trees, like the
        // rings, drive every link: the all-reduce's bytes go to every peer at once.
        direct_phase(ranks, bytes, 0);
        direct_phase(ranks, bytes, 1);
      } else {
        tree_all_reduce(ranks, comm, bytes);
      }
      break;
    case A::NVLS:
      if (comm.n_nodes > 1) throw std::invalid_argument("collective steps: NVLS across nodes (with CollNet) has no steps model");
      if (p != CollectivePrimitive::all_reduce && p != CollectivePrimitive::reduce_scatter &&
          p != CollectivePrimitive::all_gather)
        throw std::invalid_argument("collective steps: NVLS does not run " + std::string(collective_primitive_name(p)));
      nvls(ranks, p, bytes);
      break;
    case A::PAT:
      if (p != CollectivePrimitive::all_gather && p != CollectivePrimitive::reduce_scatter)
        throw std::invalid_argument("collective steps: PAT runs only all_gather and reduce_scatter");
      pat(ranks, p, bytes);
      break;
    case A::SendRecv:
      if (p != CollectivePrimitive::all_to_all) throw std::invalid_argument("collective steps: SendRecv runs only all_to_all");
      // Across nodes the grouped sends progress together (a GPU's blocks for other nodes through its
      // NIC, the rest over NVLink at once; nccl_p2p_cost), so they are one step, as on a full mesh;
      // inside a node every block crosses the one port either way, in NCCL's pairwise rounds.
      if (comm.full_mesh || comm.n_nodes > 1) direct_phase(ranks, bytes, 2);
      else pairwise_all_to_all(ranks, bytes);
      break;
    case A::NVLSTree:
    case A::CollnetDirect:
    case A::CollnetChain:
      throw std::invalid_argument("collective steps: " + what + " has no steps model yet (curve fidelity only)");
  }
  pad(ranks, static_cast<std::size_t>(nccl_latency_steps(comm, p, a)));
  return ranks;
}

}  // namespace overlap
