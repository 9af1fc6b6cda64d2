#include "sim/task_graph.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <sstream>

namespace overlap::sim {

const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::tiled: return "tiled";
    case OpKind::persistent: return "persistent";
    case OpKind::comm_kernel: return "comm_kernel";
    case OpKind::memory: return "memory";
    case OpKind::copy: return "copy";
    case OpKind::wait: return "wait";
    case OpKind::signal: return "signal";
    case OpKind::delay: return "delay";
  }
  return "?";
}

StreamId TaskGraph::add_stream(int rank, std::string name, int priority) {
  if (rank < 0 || rank >= num_ranks_)
    throw GraphError(fmt::format("stream '{}': rank {} outside [0, {})", name, rank, num_ranks_));
  streams_.push_back(Stream{std::move(name), rank, priority});
  last_on_stream_.push_back(kNoOp);
  return static_cast<StreamId>(streams_.size() - 1);
}

CounterId TaskGraph::add_counter(std::string name) {
  counters_.push_back(Counter{std::move(name)});
  return static_cast<CounterId>(counters_.size() - 1);
}

namespace {

void require(bool ok, const Op& op, const char* what) {
  if (!ok) throw GraphError(fmt::format("op '{}' ({}): {}", op.name, op_kind_name(op.kind), what));
}

}  // namespace

OpId TaskGraph::add(Op op) {
  require(op.stream >= 0 && op.stream < static_cast<StreamId>(streams_.size()), op, "unknown stream");
  for (OpId d : op.deps)
    require(d >= 0 && d < static_cast<OpId>(ops_.size()), op, "dependency on an op not yet added");
  const int counters = static_cast<int>(counters_.size());
  switch (op.kind) {
    case OpKind::tiled:
    case OpKind::persistent:
      require(op.ctas > 0, op, "needs ctas > 0");
      require(op.ctas_per_sm > 0, op, "needs ctas_per_sm > 0");
      require(op.cta_ps >= 0, op, "needs cta_ps >= 0");
      require(op.max_ctas >= 0, op, "needs max_ctas >= 0");
      require(op.hbm_bytes_per_cta >= 0, op, "needs hbm_bytes_per_cta >= 0");
      require(op.tile_counters.empty() || op.tile_counters.size() == 1 ||
                  static_cast<std::int64_t>(op.tile_counters.size()) == op.ctas,
              op, "tile_counters must be empty, one counter, or one per tile");
      for (CounterId c : op.tile_counters) require(c >= 0 && c < counters, op, "unknown tile counter");
      break;
    case OpKind::comm_kernel:
      require(op.channels >= 0, op, "needs channels >= 0");
      require(op.duration_ps >= 0, op, "needs duration_ps >= 0");
      require(op.members >= 1, op, "needs members >= 1");
      for (const Phase& ph : op.phases) {
        require(ph.compute_ps >= 0 && ph.latency_ps >= 0, op, "phase times must be >= 0");
        for (const PeerBytes& pb : ph.sends)
          require((pb.peer == kSwitchPeer || (pb.peer >= 0 && pb.peer < num_ranks_)) && pb.bytes > 0, op,
                  "phase send needs a peer rank (or the switch) and bytes > 0");
        for (const PeerBytes& pb : ph.recvs)
          require((pb.peer == kSwitchPeer || (pb.peer >= 0 && pb.peer < num_ranks_)) && pb.bytes > 0, op,
                  "phase recv needs a peer rank (or the switch) and bytes > 0");
      }
      for (const PeerBytes& pb : op.curve_sends)
        require((pb.peer == kSwitchPeer || (pb.peer >= 0 && pb.peer < num_ranks_)) && pb.bytes > 0, op,
                "curve send needs a peer rank (or the switch) and bytes > 0");
      for (const std::vector<PeerBytes>* legs : {&op.outside_sends, &op.outside_recvs})
        for (const PeerBytes& pb : *legs)
          require(pb.peer >= num_ranks_ && pb.bytes > 0, op, "an outside member is a GPU beyond the graph's ranks, with bytes > 0");
      require((op.outside_sends.empty() && op.outside_recvs.empty()) || (op.members == 1 && op.collective >= 0), op,
              "outside members belong to a collective of one simulated member");
      require(op.curve_latency_ps >= 0 && op.curve_latency_ps <= op.duration_ps, op,
              "curve_latency_ps must be in [0, duration_ps]");
      require((op.curve_sends.empty() && op.outside_sends.empty() && op.outside_recvs.empty()) || op.phases.empty(), op,
              "a collective is either curve (curve_sends) or steps (phases)");
      require(op.phases.empty() || op.collective >= 0, op, "phases need a collective id to match peers");
      require(op.link_efficiency > 0 && op.link_efficiency <= 1, op, "link_efficiency must be in (0, 1]");
      require(!op.transport || *op.transport != Transport::copy_engine, op,
              "a comm kernel cannot move bytes by copy engine (use a copy op)");
      break;
    case OpKind::memory:
      require(op.bytes >= 0, op, "needs bytes >= 0");
      require(op.channels >= 0, op, "needs channels >= 0");
      break;
    case OpKind::copy:
      require(op.bytes > 0, op, "needs bytes > 0");
      require(op.src_gpu >= 0 && op.src_gpu < num_ranks_ && op.dst_gpu >= 0 && op.dst_gpu < num_ranks_, op,
              "needs src_gpu and dst_gpu inside the graph's ranks");
      break;
    case OpKind::wait:
      require(op.counter >= 0 && op.counter < counters, op, "unknown counter");
      break;
    case OpKind::signal:
      require(op.counter >= 0 && op.counter < counters, op, "unknown counter");
      break;
    case OpKind::delay:
      require(op.delay_ps >= 0, op, "needs delay_ps >= 0");
      break;
  }
  op.pass = pass_;
  const OpId id = static_cast<OpId>(ops_.size());
  last_on_stream_[static_cast<std::size_t>(op.stream)] = id;
  ops_.push_back(std::move(op));
  return id;
}

OpId TaskGraph::last_on_stream(StreamId stream) const {
  return last_on_stream_.at(static_cast<std::size_t>(stream));
}

void TaskGraph::depend(OpId after, OpId before) {
  if (after < 0 || after >= static_cast<OpId>(ops_.size()) || before < 0 ||
      before >= static_cast<OpId>(ops_.size()))
    throw GraphError(fmt::format("depend({}, {}): unknown op", after, before));
  ops_[static_cast<std::size_t>(after)].deps.push_back(before);
}

namespace {

using Dag = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;

// Edges: every dependency, and stream order (each op after the previous op of its stream).
Dag build_dag(const TaskGraph& g, std::vector<std::pair<OpId, OpId>>* stream_edges) {
  Dag dag(g.ops().size());
  std::vector<OpId> last(g.streams().size(), kNoOp);
  for (OpId id = 0; id < static_cast<OpId>(g.ops().size()); ++id) {
    const Op& op = g.op(id);
    for (OpId d : op.deps) boost::add_edge(static_cast<std::size_t>(d), static_cast<std::size_t>(id), dag);
    OpId& prev = last[static_cast<std::size_t>(op.stream)];
    if (prev != kNoOp) {
      boost::add_edge(static_cast<std::size_t>(prev), static_cast<std::size_t>(id), dag);
      if (stream_edges) stream_edges->emplace_back(prev, id);
    }
    prev = id;
  }
  return dag;
}

}  // namespace

// A depth-first search over the edges in CSR form (each op's successors in the order build_dag adds
// them, so the cycle found and named is the one Boost's depth_first_search would find: same vertex
// order, same edge order). Runs once per graph on every main run, so it avoids Boost's per-vertex
// edge lists (an allocation per op).
void TaskGraph::check_acyclic() const {
  const std::size_t n = ops_.size();
  std::vector<std::uint32_t> start(n + 1, 0);
  std::vector<OpId> last(streams_.size(), kNoOp);
  for (OpId id = 0; id < static_cast<OpId>(n); ++id) {
    const Op& op = ops_[static_cast<std::size_t>(id)];
    for (OpId d : op.deps) ++start[static_cast<std::size_t>(d) + 1];
    OpId& prev = last[static_cast<std::size_t>(op.stream)];
    if (prev != kNoOp) ++start[static_cast<std::size_t>(prev) + 1];
    prev = id;
  }
  for (std::size_t i = 0; i < n; ++i) start[i + 1] += start[i];
  std::vector<std::uint32_t> succ(start[n]);
  std::vector<std::uint32_t> fill(start.begin(), start.end() - 1);
  std::fill(last.begin(), last.end(), kNoOp);
  for (OpId id = 0; id < static_cast<OpId>(n); ++id) {
    const Op& op = ops_[static_cast<std::size_t>(id)];
    for (OpId d : op.deps) succ[fill[static_cast<std::size_t>(d)]++] = static_cast<std::uint32_t>(id);
    OpId& prev = last[static_cast<std::size_t>(op.stream)];
    if (prev != kNoOp) succ[fill[static_cast<std::size_t>(prev)]++] = static_cast<std::uint32_t>(id);
    prev = id;
  }
  enum : std::uint8_t { white, gray, black };
  std::vector<std::uint8_t> color(n, white);
  std::vector<std::size_t> parent(n, 0);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> stack;  // (vertex, next edge index)
  for (std::size_t root = 0; root < n; ++root) {
    if (color[root] != white) continue;
    color[root] = gray;
    stack.emplace_back(static_cast<std::uint32_t>(root), start[root]);
    while (!stack.empty()) {
      auto& [u, e] = stack.back();
      if (e == start[u + 1]) {
        color[u] = black;
        stack.pop_back();
        continue;
      }
      const std::uint32_t v = succ[e++];
      if (color[v] == white) {
        parent[v] = u;
        color[v] = gray;
        stack.emplace_back(v, start[v]);
      } else if (color[v] == gray) {
        // Back edge u -> v: the cycle is v, ..., u along the tree path.
        std::vector<std::size_t> cycle;
        for (std::size_t w = u; w != v; w = parent[w]) cycle.push_back(w);
        cycle.push_back(v);
        std::reverse(cycle.begin(), cycle.end());
        std::string names;
        for (std::size_t w : cycle) names += fmt::format("'{}' -> ", ops_[w].name);
        names += fmt::format("'{}'", ops_[cycle.front()].name);
        throw GraphError("task graph has a cycle (dependencies and stream order): " + names);
      }
    }
  }
}

std::string TaskGraph::to_graphviz() const {
  std::vector<std::pair<OpId, OpId>> stream_edges;
  build_dag(*this, &stream_edges);
  std::ostringstream out;
  out << "digraph tasks {\n  rankdir=LR;\n  node [shape=box, fontsize=10];\n";
  for (int r = 0; r < num_ranks_; ++r) {
    out << fmt::format("  subgraph cluster_rank{} {{\n    label=\"rank {}\";\n", r, r);
    for (OpId id = 0; id < static_cast<OpId>(ops_.size()); ++id) {
      if (rank_of(id) != r) continue;
      const Op& op = ops_[static_cast<std::size_t>(id)];
      out << fmt::format("    op{} [label=\"{}\\n{} @ {}\"];\n", id, op.name, op_kind_name(op.kind),
                         streams_[static_cast<std::size_t>(op.stream)].name);
    }
    out << "  }\n";
  }
  for (OpId id = 0; id < static_cast<OpId>(ops_.size()); ++id)
    for (OpId d : ops_[static_cast<std::size_t>(id)].deps) out << fmt::format("  op{} -> op{};\n", d, id);
  for (auto [a, b] : stream_edges) out << fmt::format("  op{} -> op{} [style=dashed];\n", a, b);
  out << "}\n";
  return out.str();
}

std::uint64_t TaskGraph::fingerprint() const {
  // FNV-1a over the words that shape a run: the op's kind, stream, dependencies and sizes.
  std::uint64_t h = 14695981039346656037ull;
  auto mix = [&h](std::uint64_t v) {
    h ^= v;
    h *= 1099511628211ull;
  };
  mix(static_cast<std::uint64_t>(num_ranks_));
  mix(streams_.size());
  mix(counters_.size());
  mix(ops_.size());
  for (const Op& op : ops_) {
    mix(static_cast<std::uint64_t>(op.kind));
    mix(static_cast<std::uint64_t>(op.stream));
    mix(static_cast<std::uint64_t>(op.ctas));
    mix(static_cast<std::uint64_t>(op.cta_ps));
    mix(static_cast<std::uint64_t>(op.duration_ps));
    mix(static_cast<std::uint64_t>(op.bytes));
    mix(static_cast<std::uint64_t>(op.channels));
    mix(static_cast<std::uint64_t>(op.delay_ps));
    mix(op.phases.size());
    for (OpId d : op.deps) mix(static_cast<std::uint64_t>(d));
  }
  return h;
}

}  // namespace overlap::sim
