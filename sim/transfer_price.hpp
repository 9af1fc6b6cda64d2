#pragma once
// The price of one isolated transfer, for code that sizes work by it (a scheme choosing its chunks):
// the network side's own answer (design.md "Fabric": every transport costed the same way whichever
// scheme sends), asked in plain data so the asker needs neither a node nor the fabric.
#include "cost_model/hardware_profile.hpp"
#include "cost_model/units.hpp"

namespace overlap::sim {

struct NodeConfig;  // node_config.hpp

// How long `bytes` (> 0) take from GPU src to GPU dst by `transport` alone on an idle node (`ctas`:
// an SM copy kernel's CTAs, 0 = no limit): on `node` when it is given and has at least `ranks` GPUs
// (the scenario's, whose routes are cached), else on the first `ranks` GPUs of `hw`'s fabric.
Ps isolated_transfer_ps(const HardwareProfile& hw, int ranks, const NodeConfig* node, int src, int dst, Bytes bytes,
                        Transport transport, int ctas = 0);

}  // namespace overlap::sim
