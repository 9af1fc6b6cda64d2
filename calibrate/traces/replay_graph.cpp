// A trace's kernels as a replayable task graph (calibrate/traces/replay_graph.hpp).
#include "calibrate/traces/replay_graph.hpp"

#include <algorithm>
#include <limits>
#include <iterator>
#include <map>
#include <tuple>

namespace overlap::traces {

namespace {

// One rank's nodes, streams and edges appended to `g`.
void add_rank(ReplayGraph& g, std::int32_t rank, const ReplayRank& in, std::vector<std::vector<std::int32_t>>& node_of) {
  const RankTrace& t = *in.trace;
  const std::size_t first_stream = g.streams.size();
  std::map<std::pair<std::int32_t, std::int32_t>, std::int32_t> stream_index;  // (device, stream) -> index
  std::vector<std::vector<std::int32_t>> on_stream;  // activities per stream, in stream order
  for (std::size_t ai = 0; ai < t.activities.size(); ++ai) {
    const GpuActivity& a = t.activities[ai];
    const auto [it, fresh] = stream_index.try_emplace({a.device, a.stream}, static_cast<std::int32_t>(g.streams.size()));
    if (fresh) {
      g.streams.push_back({rank, a.device, a.stream});
      on_stream.emplace_back();
    }
    on_stream[static_cast<std::size_t>(it->second) - first_stream].push_back(static_cast<std::int32_t>(ai));
  }
  auto launches = t.launches;
  std::sort(launches.begin(), launches.end());
  const auto launch_of = [&](std::int64_t correlation) -> std::int64_t {
    if (correlation < 0) return -1;
    const auto it = std::lower_bound(launches.begin(), launches.end(), std::make_pair(correlation, std::int64_t{INT64_MIN}));
    return it != launches.end() && it->first == correlation ? it->second : -1;
  };
  std::int64_t latency = std::numeric_limits<std::int64_t>::max();
  for (const GpuActivity& a : t.activities)
    if (const std::int64_t l = launch_of(a.correlation); l >= 0) latency = std::min(latency, std::max<std::int64_t>(a.start_ns - l, 0));
  if (latency == std::numeric_limits<std::int64_t>::max()) latency = -1;
  g.launch_latency_ns.push_back(latency);

  node_of[static_cast<std::size_t>(rank)].assign(t.activities.size(), -1);
  // Per stream, (correlation, node) in stream order: how a recorded stream wait finds its ends.
  std::vector<std::vector<std::pair<std::int64_t, std::int32_t>>> by_correlation(on_stream.size());
  for (std::size_t s = 0; s < on_stream.size(); ++s) {
    auto& list = on_stream[s];
    std::sort(list.begin(), list.end(), [&](std::int32_t x, std::int32_t y) {
      const GpuActivity& a = t.activities[static_cast<std::size_t>(x)];
      const GpuActivity& b = t.activities[static_cast<std::size_t>(y)];
      return std::tie(a.start_ns, a.end_ns, x) < std::tie(b.start_ns, b.end_ns, y);
    });
    for (std::size_t i = 0; i < list.size(); ++i) {
      const GpuActivity& a = t.activities[static_cast<std::size_t>(list[i])];
      const auto n = static_cast<std::int32_t>(g.nodes.size());
      ReplayNode node;
      node.start_ns = a.start_ns - in.clock_offset_ns;
      node.end_ns = a.end_ns - in.clock_offset_ns;
      node.duration_ns = a.end_ns - a.start_ns;
      node.rank = rank;
      node.stream = static_cast<std::int32_t>(first_stream + s);
      node.activity = list[i];
      if (const std::int64_t l = launch_of(a.correlation); l >= 0) node.release_ns = l - in.clock_offset_ns + latency;
      else ++g.without_launch;  // the CPU phase (add_cpu) replaces a replayed launch's fixed release by an edge
      g.nodes.push_back(node);
      node_of[static_cast<std::size_t>(rank)][static_cast<std::size_t>(list[i])] = n;
      if (i > 0) g.edges.push_back({n - 1, n, EdgeSource::stream_order});
      if (a.correlation >= 0) by_correlation[s].emplace_back(a.correlation, n);
    }
    std::sort(by_correlation[s].begin(), by_correlation[s].end());
  }
  // Recorded stream waits: correlation ids number a process's runtime calls in call order, so the
  // event holds the waited stream's last launch before its cudaEventRecord, and the wait holds back
  // the waiting stream's first launch after it.
  for (const SyncCall& c : t.syncs) {
    if (c.kind != SyncKind::stream_wait_event || c.stream < 0 || c.wait_on_stream < 0 || c.correlation < 0 ||
        c.event_record_correlation < 0)
      continue;
    std::int32_t from_s = -1, to_s = -1;
    for (std::size_t s = 0; s < on_stream.size(); ++s) {
      if (g.streams[first_stream + s].stream == c.wait_on_stream && from_s < 0) from_s = static_cast<std::int32_t>(s);
      if (g.streams[first_stream + s].stream == c.stream && to_s < 0) to_s = static_cast<std::int32_t>(s);
    }
    if (from_s < 0 || to_s < 0 || from_s == to_s) continue;
    const auto& from_list = by_correlation[static_cast<std::size_t>(from_s)];
    const auto& to_list = by_correlation[static_cast<std::size_t>(to_s)];
    auto f = std::lower_bound(from_list.begin(), from_list.end(), std::make_pair(c.event_record_correlation, std::int32_t{INT32_MIN}));
    auto to = std::upper_bound(to_list.begin(), to_list.end(), std::make_pair(c.correlation, std::int32_t{INT32_MAX}));
    if (f == from_list.begin() || to == to_list.end()) continue;
    --f;
    g.edges.push_back({f->second, to->second, EdgeSource::event_wait});
    ++g.event_waits;
  }
}

// The time an edge's source lets its target start, measured: the source's end plus the lag.
std::int64_t measured_from(const ReplayGraph& g, const ReplayEdge& e) {
  const std::int64_t end = g.is_cpu(e.from) ? g.cpu[static_cast<std::size_t>(e.from) - g.nodes.size()].end_ns
                                            : g.nodes[static_cast<std::size_t>(e.from)].end_ns;
  return end + e.lag_ns;
}

// One rank's launching threads as CPU nodes (see the header): call order, launches to their
// kernels, blocking synchronisations to the kernels they wait for. `launch_edge[n]`: the edge that
// launches kernel n, for the unexplained-gap rule.
class CpuPhase {
 public:
  CpuPhase(ReplayGraph& g, std::int32_t rank, const ReplayRank& in, std::vector<std::int32_t>& launch_edge)
      : g_(g), rank_(rank), in_(in), t_(*in.trace), launch_edge_(launch_edge) {
    index_kernels();
    // What the CUPTI records (no thread) add to the runtime call of the same correlation: the stream
    // synchronised, the event's stream and record.
    for (const SyncCall& c : t_.syncs)
      if (c.thread == -1 && c.correlation >= 0 && (c.stream >= 0 || c.wait_on_stream >= 0)) record_of_.try_emplace(c.correlation, &c);
  }

  void add() {
    std::int64_t prev_thread = 0;
    bool have_prev = false;
    for (const Item& item : calls_in_order()) {
      const std::size_t j = g_.cpu.size();
      CpuNode c;
      c.rank = rank_;
      c.thread = item.thread;
      c.start_ns = item.time_ns;
      c.end_ns = item.sync ? std::max(item.time_ns, item.sync->end_ns - in_.clock_offset_ns) : item.time_ns;
      const bool first_on_thread = !have_prev || prev_thread != item.thread;
      if (first_on_thread) {
        c.release_ns = c.start_ns;
        ++g_.cpu_threads;
      } else {
        const CpuNode& p = g_.cpu.back();
        // Built before the kernels' ids are final: CPU ids are offset in build_replay_graph.
        g_.edges.push_back({-static_cast<std::int32_t>(j), -static_cast<std::int32_t>(j) - 1, EdgeSource::cpu_order,
                            std::max<std::int64_t>(c.start_ns - p.end_ns, 0)});
      }
      have_prev = true;
      prev_thread = item.thread;
      if (item.sync) add_sync(c, *item.sync, j);
      else add_launch(c, item.correlation, j);
      g_.cpu.push_back(c);
    }
  }

 private:
  using Correlated = std::pair<std::int64_t, std::int32_t>;  // (correlation, node)
  struct Item {
    std::int64_t time_ns, correlation;
    std::int64_t thread;
    const SyncCall* sync;  // nullptr: a launch
  };

  // The rank's kernels by correlation (a CUDA graph launch runs several under one), and per stream
  // (correlation, node) in correlation order: what a synchronisation launched before it waits for.
  void index_kernels() {
    for (std::size_t n = 0; n < g_.nodes.size(); ++n) {
      const ReplayNode& node = g_.nodes[n];
      if (node.rank != rank_) continue;
      const std::int64_t c = t_.activities[static_cast<std::size_t>(node.activity)].correlation;
      if (c < 0) continue;
      by_correlation_.emplace_back(c, static_cast<std::int32_t>(n));
      on_stream_[node.stream].emplace_back(c, static_cast<std::int32_t>(n));
    }
    std::sort(by_correlation_.begin(), by_correlation_.end());
    for (auto& [s, list] : on_stream_) std::sort(list.begin(), list.end());
  }

  std::pair<std::vector<Correlated>::const_iterator, std::vector<Correlated>::const_iterator> launched(std::int64_t correlation) const {
    const auto lo = std::lower_bound(by_correlation_.begin(), by_correlation_.end(), std::make_pair(correlation, std::int32_t{INT32_MIN}));
    const auto hi = std::upper_bound(by_correlation_.begin(), by_correlation_.end(), std::make_pair(correlation, std::int32_t{INT32_MAX}));
    return {lo, hi};
  }

  // The last node on `stream` (an index into g.streams) launched before `correlation`, -1 if none.
  std::int32_t last_before(std::int32_t stream, std::int64_t correlation) const {
    const auto it = on_stream_.find(stream);
    if (it == on_stream_.end()) return -1;
    const auto pos = std::lower_bound(it->second.begin(), it->second.end(), std::make_pair(correlation, std::int32_t{INT32_MIN}));
    return pos == it->second.begin() ? -1 : std::prev(pos)->second;
  }

  // The launches (one per correlation id, the earliest: launch_of's; a kernel has one launch) and
  // blocking synchronisations, per thread in call order: by time, then correlation (the runtime's
  // call order).
  std::vector<Item> calls_in_order() {
    std::vector<Item> items;
    std::vector<std::size_t> order(t_.launches.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return t_.launches[a] < t_.launches[b]; });
    for (std::size_t k = 0; k < order.size(); ++k) {
      const std::size_t i = order[k];
      if (k > 0 && t_.launches[order[k - 1]].first == t_.launches[i].first) continue;
      const std::int64_t thread = i < t_.launch_threads.size() ? t_.launch_threads[i] : -1;
      const auto [lo, hi] = launched(t_.launches[i].first);
      if (lo == hi) continue;  // a runtime call that launched no activity of this trace
      if (thread == -1) {
        g_.launches_not_replayed += hi - lo;
        continue;
      }
      items.push_back({t_.launches[i].second - in_.clock_offset_ns, t_.launches[i].first, thread, nullptr});
    }
    for (const SyncCall& c : t_.syncs)
      if (c.thread != -1 && (c.kind == SyncKind::stream_sync || c.kind == SyncKind::device_sync || c.kind == SyncKind::event_sync))
        items.push_back({c.start_ns - in_.clock_offset_ns, c.correlation, c.thread, &c});
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      return std::tie(a.thread, a.time_ns, a.correlation) < std::tie(b.thread, b.time_ns, b.correlation);
    });
    return items;
  }

  // A launch (CPU node j) releases its kernels: an edge each, in place of their fixed release.
  void add_launch(CpuNode& c, std::int64_t correlation, std::size_t j) {
    c.call = CpuCall::launch;
    const auto [lo, hi] = launched(correlation);
    for (auto it = lo; it != hi; ++it) {
      ReplayNode& node = g_.nodes[static_cast<std::size_t>(it->second)];
      launch_edge_[static_cast<std::size_t>(it->second)] = static_cast<std::int32_t>(g_.edges.size());
      g_.edges.push_back({-static_cast<std::int32_t>(j) - 1, it->second, EdgeSource::launch, node.release_ns - c.start_ns});
      node.release_ns = kNoRelease;
    }
  }

  // A synchronisation (CPU node j) waits for the last kernel launched before it on each stream it
  // covers that had ended by the time it returned.
  void add_sync(CpuNode& c, const SyncCall& sc, std::size_t j) {
    c.call = CpuCall::sync;
    c.sync = sc.kind;
    std::int32_t stream = sc.stream, wait_on = sc.wait_on_stream;
    std::int64_t before = sc.correlation;
    if (const auto r = record_of_.find(sc.correlation); r != record_of_.end()) {
      if (stream < 0) stream = r->second->stream;
      if (wait_on < 0) wait_on = r->second->wait_on_stream;
      if (sc.kind == SyncKind::event_sync && r->second->event_record_correlation >= 0) before = r->second->event_record_correlation;
    }
    if (sc.kind == SyncKind::event_sync) {
      stream = wait_on;
      if (stream < 0) before = sc.correlation;  // the event's stream unknown: every stream, before the call
    }
    if (sc.kind == SyncKind::device_sync) stream = -1;
    std::int64_t awaited_end = INT64_MIN;
    if (sc.correlation >= 0) {
      for (const auto& [s, list] : on_stream_) {
        if (stream >= 0 && g_.streams[static_cast<std::size_t>(s)].stream != stream) continue;
        const std::int32_t n = last_before(s, before);
        if (n < 0) continue;
        const ReplayNode& node = g_.nodes[static_cast<std::size_t>(n)];
        if (node.end_ns > c.end_ns + kGapToleranceNs) continue;  // still running when it returned: not waited for
        g_.edges.push_back({n, -static_cast<std::int32_t>(j) - 1, EdgeSource::sync, 0});
        awaited_end = std::max(awaited_end, node.end_ns);
        ++c.awaited;
      }
    }
    if (c.awaited > 0) ++g_.cpu_syncs;
    c.duration_ns = std::max<std::int64_t>(c.end_ns - std::max(c.start_ns, awaited_end), 0);
  }

  ReplayGraph& g_;
  const std::int32_t rank_;
  const ReplayRank& in_;
  const RankTrace& t_;
  std::vector<std::int32_t>& launch_edge_;
  std::vector<Correlated> by_correlation_;
  std::map<std::int32_t, std::vector<Correlated>> on_stream_;  // stream index -> list
  std::map<std::int64_t, const SyncCall*> record_of_;
};

void add_cpu(ReplayGraph& g, std::int32_t rank, const ReplayRank& in, std::vector<std::int32_t>& launch_edge) {
  CpuPhase(g, rank, in, launch_edge).add();
}

}  // namespace

ReplayGraph build_replay_graph(const std::vector<ReplayRank>& ranks,
                               const std::vector<std::vector<std::pair<std::size_t, std::int32_t>>>& collectives) {
  ReplayGraph g;
  std::vector<std::vector<std::int32_t>> node_of(ranks.size());
  for (std::size_t r = 0; r < ranks.size(); ++r) add_rank(g, static_cast<std::int32_t>(r), ranks[r], node_of);
  // Collectives: each member runs its transfer after the last member's (aligned) start.
  for (const auto& members : collectives) {
    std::vector<std::int32_t> nodes;
    for (const auto& [r, activity] : members)
      if (r < ranks.size() && activity >= 0 && static_cast<std::size_t>(activity) < node_of[r].size())
        nodes.push_back(node_of[r][static_cast<std::size_t>(activity)]);
    if (nodes.size() < 2) continue;
    std::int64_t last = INT64_MIN;
    for (std::int32_t n : nodes) last = std::max(last, g.nodes[static_cast<std::size_t>(n)].start_ns);
    for (std::int32_t n : nodes) {
      ReplayNode& node = g.nodes[static_cast<std::size_t>(n)];
      node.collective = static_cast<std::int32_t>(g.collectives.size());
      node.duration_ns = std::max<std::int64_t>(node.end_ns - std::max(last, node.start_ns), 0);
    }
    g.collectives.push_back(std::move(nodes));
  }
  // The CPU side: edges to and from CPU nodes are written with -(j + 1) for cpu[j] until every
  // kernel has its id.
  std::vector<std::int32_t> launch_edge(g.nodes.size(), -1);
  const std::size_t first_cpu_edge = g.edges.size();
  for (std::size_t r = 0; r < ranks.size(); ++r) add_cpu(g, static_cast<std::int32_t>(r), ranks[r], launch_edge);
  for (std::size_t k = first_cpu_edge; k < g.edges.size(); ++k) {
    ReplayEdge& e = g.edges[k];
    if (e.from < 0) e.from = g.cpu_id(static_cast<std::size_t>(-e.from - 1));
    if (e.to < 0) e.to = g.cpu_id(static_cast<std::size_t>(-e.to - 1));
  }
  // What each node's start is explained by so far; a later start is a wait to infer or keep.
  std::vector<std::int64_t> bound(g.nodes.size(), 0);
  for (std::size_t n = 0; n < g.nodes.size(); ++n) bound[n] = g.nodes[n].release_ns;
  for (const ReplayEdge& e : g.edges)
    if (!g.is_cpu(e.to)) bound[static_cast<std::size_t>(e.to)] = std::max(bound[static_cast<std::size_t>(e.to)], measured_from(g, e));
  // Per rank, (end, node) sorted: the closest end before a start.
  std::vector<std::vector<std::pair<std::int64_t, std::int32_t>>> ends(ranks.size());
  for (std::size_t n = 0; n < g.nodes.size(); ++n)
    ends[static_cast<std::size_t>(g.nodes[n].rank)].emplace_back(g.nodes[n].end_ns, static_cast<std::int32_t>(n));
  for (auto& e : ends) std::sort(e.begin(), e.end());
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    ReplayNode& node = g.nodes[n];
    if (node.start_ns <= bound[n] + kGapToleranceNs) continue;
    const auto& e = ends[static_cast<std::size_t>(node.rank)];
    auto it = std::upper_bound(e.begin(), e.end(), std::make_pair(node.start_ns, std::int32_t{INT32_MAX}));
    bool found = false;
    // The closest end at or before the start on another stream (ties: the later-listed node).
    while (it != e.begin()) {
      --it;
      if (it->first < node.start_ns - kGapToleranceNs || it->first <= bound[n]) break;
      if (g.nodes[static_cast<std::size_t>(it->second)].stream != node.stream) {
        g.edges.push_back({it->second, static_cast<std::int32_t>(n), EdgeSource::inferred});
        ++g.inferred;
        found = true;
        break;
      }
    }
    if (!found) {
      // Kept as measured: relative to its launch when the CPU is replayed, else in time.
      if (const std::int32_t le = launch_edge[n]; le >= 0) {
        ReplayEdge& e = g.edges[static_cast<std::size_t>(le)];
        e.lag_ns = node.start_ns - g.cpu[static_cast<std::size_t>(e.from) - g.nodes.size()].end_ns;
      } else {
        node.release_ns = node.start_ns;
      }
      ++g.unexplained;
    }
  }
  return g;
}

}  // namespace overlap::traces
