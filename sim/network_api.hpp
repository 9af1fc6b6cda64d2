#pragma once
// What the rest of the engine may ask of the network side (fabric routes, max-min shared flows and
// the collectives that run on them), in the shape of ASTRA-sim's AstraNetworkAPI (style.md):
// move bytes and say when they arrived, call back after a delay, tell the time. Requests are plain
// data (GPUs, bytes, transport; a collective's members, phases and legs); the answer is a token the
// caller chose, handed back through NetworkClient. The network side sees no op, graph or timeline:
// it reports each move (TransferReport) and the caller records it. A backend is chosen by the
// NetworkFactory given to run_with_network, so a calibrated-table or packet-level backend needs no
// change to the GPU side or to any scheme.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "cost_model/units.hpp"
#include "sim/collective_steps.hpp"
#include "sim/engine.hpp"
#include "sim/event_queue.hpp"
#include "sim/node_config.hpp"
#include "sim/shared_bandwidth.hpp"
#include "sim/timeline.hpp"

namespace overlap::sim {

// The caller's name for a request, handed back when it is done (the engine uses the op's id; a
// backend keeps no state per token beyond the requests it holds).
using NetToken = std::int32_t;

// A point-to-point move of `bytes` from one GPU to another by one transport.
struct TransferRequest {
  int src_gpu = -1, dst_gpu = -1;
  Bytes bytes = 0;
  Transport transport = Transport::copy_engine;
  int ctas = 0;  // an SM copy kernel's CTAs (its per-CTA rate limit); 0: no limit
};

// A memory kernel streaming `bytes` through one GPU's HBM, at most `max_bytes_per_ps` (0: no cap
// beyond the HBM's), after `latency_ps` of ramp that takes no HBM share (GpuSpec::hbm_latency_us).
struct MemoryStreamRequest {
  int gpu = -1;
  Bytes bytes = 0;
  double max_bytes_per_ps = 0;
  Ps latency_ps = 0;
};

// One member of a collective: what it moves and how, as data (the spans are the caller's and stay
// valid until the member is done). Members of one `group` meet: at curve fidelity the collective
// runs once all `members` have asked; at steps fidelity each phase's send to a peer is matched with
// that peer's receive in the same phase of the same group (design.md "Collectives").
struct CollectiveRequest {
  std::int64_t group = -1;
  int members = 1;
  int gpu = -1;            // this member's GPU
  std::string_view name;   // for errors that name the member
  // Steps fidelity: the phases, in order; empty: curve fidelity.
  std::span<const Phase> phases;
  // Phase transfers by this transport (sm_copy: `ctas` CTAs), or NCCL collective steps at
  // `link_efficiency` of the links, whose phase latency covers the wire's when `latency_covers_wire`.
  std::optional<Transport> transport;
  int ctas = 0;
  double link_efficiency = 1.0;
  bool latency_covers_wire = false;
  // Curve fidelity: the collective takes `duration_ps` on an idle fabric (steps fidelity: this time
  // passes after the last phase), `curve_latency_ps` of it moving no bytes; this member's bytes to
  // each peer, to and from members outside the graph, and from the switch (NVLS) load the links as
  // flows; `reduces`: receivers reduce what arrives.
  Ps duration_ps = 0;
  Ps curve_latency_ps = 0;
  std::span<const PeerBytes> sends, outside_sends, outside_recvs;
  Bytes from_switch = 0;
  bool reduces = false;
};

// What one finished move loaded: the caller's tokens (receiver: a matched phase transfer's
// receiving side, else -1), its ends, bytes, start and the backend's link ids (may be empty).
struct TransferReport {
  NetToken token = -1;
  NetToken receiver = -1;
  int src_gpu = -1, dst_gpu = -1;
  Bytes bytes = 0;
  Ps start_ps = 0;
  bool memory_stream = false;  // a MemoryStreamRequest: loads links, is no transfer between GPUs
  LinkList links;
};

// What the network side tells its caller.
class NetworkClient {
 public:
  virtual ~NetworkClient() = default;
  // A move finished at the current time; called before the request's network_done.
  virtual void moved(TransferReport&& report) = 0;
  // A request (transfer, memory stream, delay, collective member) is done.
  virtual void network_done(NetToken token) = 0;
};

class NetworkApi {
 public:
  virtual ~NetworkApi() = default;

  // ---- the verbs ----
  // Move bytes; ends with NetworkClient::moved, then network_done(done).
  virtual void transfer(const TransferRequest& request, NetToken done) = 0;
  virtual void stream_memory(const MemoryStreamRequest& request, NetToken done) = 0;
  // network_done(done) after `delay_ps`.
  virtual void after(Ps delay_ps, NetToken done) = 0;
  virtual Ps now() const = 0;

  // A member of a collective (its kernel holds its SMs) joins it; network_done(done) when its part is
  // over (curve fidelity: when the whole collective is), after NetworkClient::moved for each of its
  // transfers.
  virtual void collective(const CollectiveRequest& request, NetToken done) = 0;

  // An event this side scheduled (EventType::net_timer, flow_latency_end, flow_end) is due.
  virtual void on_event(const Event& e) = 0;

  // Diagnostics for a stalled run: a collective member still waiting for the others.
  virtual bool waiting_in_rendezvous(NetToken member) const = 0;
};

// What a backend is built with: the machine (its fabric is the network side's alone), the clock and
// queue it schedules on, and whom it answers.
struct NetworkEnv {
  const NodeConfig& node;
  EventQueue& queue;
  const Ps& now;
  NetworkClient& client;
  // The links and HBM that GEMMs' operand traffic (the GPU side's) also loads: a backend whose
  // transfers contend with it puts its flows here; one that models no bandwidth ignores it.
  SharedBandwidth& bandwidth;
};
using NetworkFactory = std::function<std::unique_ptr<NetworkApi>(const NetworkEnv&)>;

// The flow-level network side (network_side.cpp): every transfer crosses its route's links and the
// HBM it reads at the source and writes at the destination, shared max-min fairly.
std::unique_ptr<NetworkApi> make_flow_network_side(const NetworkEnv& env);

// run() (engine.hpp) with another network backend.
Timeline run_with_network(const TaskGraph& graph, const NodeConfig& node, const EngineOptions& options,
                          const NetworkFactory& network);

}  // namespace overlap::sim
