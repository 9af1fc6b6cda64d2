#include "sim/task_graph.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <new>
#include <sstream>
#include <type_traits>

// Header-only use of xxHash (XXH3): the functions are compiled into this file, no library to link.
#define XXH_INLINE_ALL
#include <xxhash.h>

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

namespace {

// The spare op storage of this thread (TaskGraph's constructor and destructor): empty, with capacity.
// spare_gone: a graph destroyed after the thread's spare was (a static's destructor at exit) leaves
// its storage alone; a trivially destructible thread_local stays readable until the thread ends.
thread_local bool spare_gone = false;
struct SpareOps {
  std::vector<Op> ops;
  ~SpareOps() { spare_gone = true; }
};
std::vector<Op>* spare_ops() {
  if (spare_gone) return nullptr;
  thread_local SpareOps spare;
  return &spare.ops;
}

}  // namespace

TaskGraph::TaskGraph(int num_ranks) : num_ranks_(num_ranks) {
  if (std::vector<Op>* spare = spare_ops()) ops_.swap(*spare);
}

TaskGraph::~TaskGraph() {
  std::vector<Op>* spare = spare_ops();
  if (!spare || ops_.capacity() <= spare->capacity()) return;
  ops_.clear();
  spare->swap(ops_);
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

namespace {

// Feeds fields to XXH3-128 through a block buffer (one hash update per 64 KiB, not per field).
class DigestWriter {
 public:
  DigestWriter() : state_(XXH3_createState(), &XXH3_freeState) {
    if (!state_) throw std::bad_alloc();
    XXH3_128bits_reset(state_.get());
  }
  void bytes(const void* data, std::size_t n) {
    if (used_ + n > buffer_.size()) flush();
    if (n > buffer_.size()) {
      XXH3_128bits_update(state_.get(), data, n);
      return;
    }
    std::memcpy(buffer_.data() + used_, data, n);
    used_ += n;
  }
  template <class T>
    requires std::is_arithmetic_v<T>
  void put(T v) { bytes(&v, sizeof v); }
  template <class E>
    requires std::is_enum_v<E>
  void put(E v) { put(static_cast<std::underlying_type_t<E>>(v)); }
  void put(const std::string& s) {
    put(s.size());
    bytes(s.data(), s.size());
  }
  template <class T>
  void put(const std::vector<T>& v) {
    put(v.size());
    for (const T& x : v) put(x);
  }
  void put(const PeerBytes& pb) {
    const auto& [peer, bytes_] = pb;  // every field: a field added to PeerBytes stops this compiling
    put(peer);
    put(bytes_);
  }
  void put(const Phase& ph) {
    const auto& [sends, recvs, compute_ps, latency_ps, reduce] = ph;  // every field, as above
    put(sends);
    put(recvs);
    put(compute_ps);
    put(latency_ps);
    put(reduce);
  }
  template <class T>
  void put(const std::optional<T>& v) {
    put(v.has_value());
    if (v) put(*v);
  }
  TaskGraph::Digest finish() {
    flush();
    const XXH128_hash_t h = XXH3_128bits_digest(state_.get());
    return TaskGraph::Digest{h.low64, h.high64};
  }

 private:
  void flush() {
    if (used_ > 0) XXH3_128bits_update(state_.get(), buffer_.data(), used_);
    used_ = 0;
  }
  std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> state_;
  std::array<unsigned char, 64 * 1024> buffer_{};
  std::size_t used_ = 0;
};

void put_op(DigestWriter& w, const Op& op) {
  // Every field of Op, named: a field added to Op stops this compiling until it is hashed too, so a
  // digest never misses what operator== compares.
  const auto& [name, pass, communicator, kind, stream, comm, host_ps, deps, ctas, ctas_per_sm, cta_ps,
               hbm_bytes_per_cta, max_ctas, reference_sms, tile_counters, channels, duration_ps, collective,
               members, phases, curve_sends, curve_from_switch, curve_latency_ps, curve_reduces, outside_sends,
               outside_recvs, transport, link_efficiency, phase_latency_covers_wire, bytes, src_gpu, dst_gpu,
               counter, target, amount, delay_ps] = op;
  w.put(name);
  w.put(pass);
  w.put(communicator);
  w.put(kind);
  w.put(stream);
  w.put(comm);
  w.put(host_ps);
  w.put(deps);
  w.put(ctas);
  w.put(ctas_per_sm);
  w.put(cta_ps);
  w.put(hbm_bytes_per_cta);
  w.put(max_ctas);
  w.put(reference_sms);
  w.put(tile_counters);
  w.put(channels);
  w.put(duration_ps);
  w.put(collective);
  w.put(members);
  w.put(phases);
  w.put(curve_sends);
  w.put(curve_from_switch);
  w.put(curve_latency_ps);
  w.put(curve_reduces);
  w.put(outside_sends);
  w.put(outside_recvs);
  w.put(transport);
  w.put(link_efficiency);
  w.put(phase_latency_covers_wire);
  w.put(bytes);
  w.put(src_gpu);
  w.put(dst_gpu);
  w.put(counter);
  w.put(target);
  w.put(amount);
  w.put(delay_ps);
}

}  // namespace

TaskGraph::Digest TaskGraph::digest() const {
  // Every member operator== compares, in declaration order.
  DigestWriter w;
  w.put(num_ranks_);
  w.put(streams_.size());
  for (const Stream& st : streams_) {
    const auto& [name, rank, priority] = st;  // every field, as in put_op
    w.put(name);
    w.put(rank);
    w.put(priority);
  }
  w.put(counters_.size());
  for (const Counter& c : counters_) {
    const auto& [name] = c;
    w.put(name);
  }
  w.put(ops_.size());
  for (const Op& op : ops_) put_op(w, op);
  w.put(last_on_stream_);
  w.put(pass_);
  return w.finish();
}

}  // namespace overlap::sim
