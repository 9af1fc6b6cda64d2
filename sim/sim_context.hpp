#pragma once
// What the engine's core and its GPU side share: the graph and node being run, the clock, the event
// queue, the timeline being written (engine.hpp) and the bandwidth both sides load. Internal to the
// engine: the network side is handed only the clock, the queue, the node and the bandwidth
// (network_api.hpp NetworkEnv).
#include <cstdint>
#include <vector>

#include "sim/engine.hpp"
#include "sim/event_queue.hpp"
#include "sim/node_config.hpp"
#include "sim/shared_bandwidth.hpp"

namespace overlap::sim {

struct SimContext {
  SimContext(const TaskGraph& g, const NodeConfig& n, const EngineOptions& o)
      : graph(g), node(n), options(o), ops(g.ops().data()), bandwidth(capacities(n.fabric), hbm_links(n.fabric)) {
    rank_of.reserve(g.ops().size());
    for (OpId id = 0; id < static_cast<OpId>(g.ops().size()); ++id) rank_of.push_back(g.rank_of(id));
    tl.num_ranks = g.num_ranks();
    tl.ops.resize(g.ops().size());
    for (OpId id = 0; id < static_cast<OpId>(g.ops().size()); ++id) tl.ops[static_cast<std::size_t>(id)].op = id;
    tl.rank_end_ps.assign(static_cast<std::size_t>(g.num_ranks()), 0);
    tl.sm_busy_ps.assign(static_cast<std::size_t>(g.num_ranks()), 0);
    tl.copy_engine_busy_ps.assign(static_cast<std::size_t>(g.num_ranks()), 0);
    tl.link_bytes.assign(n.fabric.links().size(), 0.0);
  }

  const Op& op(OpId id) const { return ops[id]; }
  int rank(OpId id) const { return rank_of[static_cast<std::size_t>(id)]; }
  OpRecord& rec(OpId id) { return tl.ops[static_cast<std::size_t>(id)]; }
  void mark_start(OpId id) {
    OpRecord& r = rec(id);
    if (r.start_ps < 0) r.start_ps = now;
  }
  // A communication op the compute-only re-run completes at once (EngineOptions::zero_comm).
  bool zeroed(const Op& o) const {
    return options.zero_comm && o.comm && (!options.zero_communicator || o.communicator == *options.zero_communicator);
  }
  // The physical GPU a rank runs on (virtual ranks share one).
  int physical(int rank) const {
    const int p = node.gpus[static_cast<std::size_t>(rank)].physical;
    return p < 0 ? rank : p;
  }

  static std::vector<double> capacities(const Fabric& f) {
    std::vector<double> c;
    c.reserve(f.links().size());
    for (const Link& l : f.links()) c.push_back(l.capacity_bytes_per_ps);
    return c;
  }
  static std::vector<int> hbm_links(const Fabric& f) {
    std::vector<int> h;
    for (int g = 0; g < f.num_gpus(); ++g) h.push_back(f.hbm_link(g));
    return h;
  }

  const TaskGraph& graph;
  const NodeConfig& node;
  const EngineOptions& options;
  const Op* ops;  // hot path: no bounds checks
  std::vector<int> rank_of;
  EventQueue queue;
  Ps now = 0;
  Timeline tl;
  // The fabric's links and the GPUs' HBM, which the network side's transfers and the GPU side's
  // kernels load together.
  SharedBandwidth bandwidth;
};

// What the GPU side tells the rest of the engine.
class GpuListener {
 public:
  virtual ~GpuListener() = default;
  // A gang kernel (comm_kernel, memory) holds all the SMs it asked for: its work may start.
  virtual void gang_started(OpId op) = 0;
  // A CTA finished a tile (counters move) / every tile of a kernel is done.
  virtual void tile_done(OpId op, std::int64_t tile) = 0;
  // `count` tiles of a kernel that signals one counter finished: adds them at once and returns true
  // when that releases no waiter (then per-tile calls would have changed nothing else); otherwise
  // does nothing and returns false (the caller signals tile by tile).
  virtual bool tiles_done_quietly(OpId op, std::int64_t count) = 0;
  virtual void kernel_done(OpId op) = 0;
};

}  // namespace overlap::sim
