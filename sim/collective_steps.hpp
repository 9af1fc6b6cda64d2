#pragma once
// What a collective member moves, as plain data: its legs to peers and, at steps fidelity, its phases
// (design.md "Collectives"). Ops carry them (task_graph.hpp); the network side runs them from a
// CollectiveRequest (network_api.hpp) without seeing an op.
#include <vector>

#include "cost_model/units.hpp"

namespace overlap::sim {

// A peer that is the NVSwitch the GPU is attached to (NVLS: the switch reduces and multicasts).
inline constexpr int kSwitchPeer = -2;

// One peer-to-peer leg of a phase.
struct PeerBytes {
  int peer = -1;  // GPU index, or kSwitchPeer
  Bytes bytes = 0;
  bool operator==(const PeerBytes&) const = default;
};

// One step of an SM-driven collective or copy (design.md "Collectives", fidelity `steps`).
// A send from r to p in phase k of collective c is matched with p's receive from r in phase k of c;
// the transfer starts when both sides have entered the phase (rendezvous). Transfers to or from the
// switch (kSwitchPeer) need no partner: they cross the GPU's own link to the switch. A phase ends
// when its sends and receives are done, then `compute_ps` and `latency_ps` (per-step protocol
// latency) pass. `reduce`: the receiver reduces what arrives as it streams in (NCCL reduces inside its
// copy loop), reading its HBM twice more per received byte (the arrival and its own contribution).
struct Phase {
  std::vector<PeerBytes> sends;
  std::vector<PeerBytes> recvs;
  Ps compute_ps = 0;
  Ps latency_ps = 0;
  bool reduce = false;
  bool operator==(const Phase&) const = default;
};

}  // namespace overlap::sim
