#pragma once
// What the rest of the engine may ask of the network side (fabric routes, max-min shared flows, HBM
// and the collectives that run on them), in the shape of ASTRA-sim's AstraNetworkAPI (style.md):
// move bytes and say when they arrived, call back after a delay, tell the time. Requests are plain
// data (GPUs, bytes, transport); the answer is a token the caller chose, handed back through
// NetworkClient. The network side writes no timeline: it reports each move (TransferReport) and the
// caller records it. A backend is chosen by the NetworkFactory given to run_with_network, so a
// calibrated-table or packet-level backend needs no change to the GPU side or to any scheme.
#include <cstdint>
#include <functional>
#include <memory>

#include "sim/sim_context.hpp"

namespace overlap::sim {

// The caller's name for a request, handed back when it is done (the engine uses the op's id).
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
  // The HBM share of a demand flow (a running GEMM's operand traffic) changed.
  virtual void demand_changed(int demand) = 0;
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

  // A collective kernel (steps-fidelity phases, or curve fidelity once every member is resident)
  // holds its SMs: run it. Reads the op's description from the graph; network_done(op) per member.
  virtual void start_collective(OpId op) = 0;

  // A running kernel's HBM traffic at full speed (bytes/ps): an endless flow on its GPU's HBM whose
  // multiplier (0..1] says how much of that it gets (-1: no HBM modelled). Changes arrive as
  // NetworkClient::demand_changed.
  virtual int add_demand(int rank, double bytes_per_ps) = 0;
  virtual void set_demand(int demand, double bytes_per_ps) = 0;
  virtual void remove_demand(int demand) = 0;
  virtual double demand_multiplier(int demand) const = 0;

  // An event this side scheduled (EventType::net_timer, flow_latency_end, flow_end) is due.
  virtual void on_event(const Event& e) = 0;

  // Diagnostics for a stalled run: a collective member still waiting for the others.
  virtual bool waiting_in_rendezvous(OpId op) const = 0;
};

// What a backend is built with: the clock and queue it schedules on and whom it answers. `ctx` is
// there for start_collective, which still reads the op (a backend that runs no collectives ignores it).
struct NetworkEnv {
  SimContext& ctx;
  EventQueue& queue;
  const Ps& now;
  NetworkClient& client;
};
using NetworkFactory = std::function<std::unique_ptr<NetworkApi>(const NetworkEnv&)>;

// The flow-level network side (network_side.cpp): every transfer crosses its route's links and the
// HBM it reads at the source and writes at the destination, shared max-min fairly.
std::unique_ptr<NetworkApi> make_flow_network_side(const NetworkEnv& env);

// run() (engine.hpp) with another network backend.
Timeline run_with_network(const TaskGraph& graph, const NodeConfig& node, const EngineOptions& options,
                          const NetworkFactory& network);

}  // namespace overlap::sim
