#pragma once
// What the rest of the engine may ask of the network side (fabric routes, max-min shared flows, HBM
// and the collectives that run on them), in the shape of ASTRA-sim's AstraNetworkAPI (style.md):
// start moving bytes, keep a running kernel's HBM demand, hand over the events it scheduled, and hear
// back through NetworkListener (sim_context.hpp). The GPU side and the event loop see nothing else, so
// a packet-level or table-driven backend can replace network_side.cpp without touching dispatch.
#include <cstdint>
#include <memory>

#include "sim/sim_context.hpp"

namespace overlap::sim {

class NetworkApi {
 public:
  virtual ~NetworkApi() = default;

  // A gang kernel (comm_kernel or memory) holds its SMs: run its work. Collectives wait for all their
  // members (curve fidelity) or match their phases' sends and receives (steps fidelity). Ends with
  // NetworkListener::gang_work_done.
  virtual void start_gang_work(OpId op) = 0;
  // A copy op got a copy engine: move its bytes. Ends with NetworkListener::copy_done.
  virtual void start_copy(OpId op) = 0;

  // A running kernel's HBM traffic at full speed (bytes/ps): an endless flow on its GPU's HBM whose
  // multiplier (0..1] says how much of that it gets. Changes arrive as NetworkListener::demand_changed.
  virtual int add_demand(int rank, double bytes_per_ps) = 0;
  virtual void set_demand(int demand, double bytes_per_ps) = 0;
  virtual void remove_demand(int demand) = 0;
  virtual double demand_multiplier(int demand) const = 0;

  // An event this side scheduled (EventType::net_timer, flow_end) is due.
  virtual void on_event(const Event& e) = 0;

  // How often flow shares were recomputed (the engine's statistics).
  virtual std::uint64_t reshares() const = 0;
  // Diagnostics for a stalled run: a collective member still waiting for the others.
  virtual bool waiting_in_rendezvous(OpId op) const = 0;
};

// The flow-level network side (network_side.cpp): every transfer crosses its route's links and the
// HBM it reads at the source and writes at the destination, shared max-min fairly.
std::unique_ptr<NetworkApi> make_flow_network_side(SimContext& ctx, NetworkListener& listener);

}  // namespace overlap::sim
