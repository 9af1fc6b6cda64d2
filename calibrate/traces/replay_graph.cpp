// A trace's kernels as a replayable task graph (calibrate/traces/replay_graph.hpp).
#include "calibrate/traces/replay_graph.hpp"

#include <algorithm>
#include <limits>
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
      else ++g.without_launch;
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
  // What each node's start is explained by so far; a later start is a wait to infer or keep.
  std::vector<std::int64_t> bound(g.nodes.size(), 0);
  for (std::size_t n = 0; n < g.nodes.size(); ++n) bound[n] = g.nodes[n].release_ns;
  for (const ReplayEdge& e : g.edges)
    bound[static_cast<std::size_t>(e.to)] = std::max(bound[static_cast<std::size_t>(e.to)], g.nodes[static_cast<std::size_t>(e.from)].end_ns);
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
      node.release_ns = node.start_ns;
      ++g.unexplained;
    }
  }
  return g;
}

}  // namespace overlap::traces
