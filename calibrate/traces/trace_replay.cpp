// The replay of a trace's task graph (calibrate/traces/trace_replay.hpp).
#include "calibrate/traces/trace_replay.hpp"

#include <algorithm>
#include <queue>
#include <tuple>

namespace overlap::traces {

namespace {

enum class What : std::uint8_t { start, end };

struct Event {
  std::int64_t time_ns;
  std::int64_t sequence;
  std::int32_t node;
  What what;
  bool operator>(const Event& o) const { return std::tie(time_ns, sequence) > std::tie(o.time_ns, o.sequence); }
};

// t + d (d >= 0), saturating: a what-if's slow-down cannot wrap a time around.
std::int64_t later(std::int64_t t, std::int64_t d) { return d > 0 && t > INT64_MAX - d ? INT64_MAX : t + d; }

}  // namespace

ReplayResult replay(const ReplayGraph& g, const std::vector<std::int64_t>& duration_ns) {
  const std::size_t kernels = g.nodes.size(), n = kernels + g.cpu.size();
  ReplayResult out;
  out.start_ns.assign(n, kNeverRan);
  out.end_ns.assign(n, kNeverRan);
  // Successors in compressed rows (with each edge's lag); each node waits for its in-edges and its release.
  std::vector<std::int32_t> pending(n, 0), first(n + 1, 0), next(g.edges.size());
  std::vector<std::int64_t> lag(g.edges.size());
  for (const ReplayEdge& e : g.edges) {
    ++pending[static_cast<std::size_t>(e.to)];
    ++first[static_cast<std::size_t>(e.from) + 1];
  }
  for (std::size_t i = 0; i < n; ++i) first[i + 1] += first[i];
  {
    std::vector<std::int32_t> fill(first.begin(), first.end() - 1);
    for (const ReplayEdge& e : g.edges) {
      const auto k = static_cast<std::size_t>(fill[static_cast<std::size_t>(e.from)]++);
      next[k] = e.to;
      lag[k] = e.lag_ns;
    }
  }
  std::vector<std::int64_t> ready(n, kNoRelease);
  for (std::size_t i = 0; i < n; ++i) ready[i] = i < kernels ? g.nodes[i].release_ns : g.cpu[i - kernels].release_ns;
  std::vector<std::int32_t> arrived(g.collectives.size(), 0);
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue;
  std::int64_t sequence = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (pending[i] == 0) queue.push({ready[i], sequence++, static_cast<std::int32_t>(i), What::start});
  while (!queue.empty()) {
    const Event ev = queue.top();
    queue.pop();
    ++out.events;
    const auto i = static_cast<std::size_t>(ev.node);
    if (ev.what == What::start) {
      out.start_ns[i] = ev.time_ns;
      if (i >= kernels || g.nodes[i].collective < 0) {
        const std::int64_t d = i < kernels ? duration_ns[i] : g.cpu[i - kernels].duration_ns;
        queue.push({later(ev.time_ns, d), sequence++, ev.node, What::end});
        continue;
      }
      // A collective's members transfer once the last has arrived.
      const ReplayNode& node = g.nodes[i];
      const auto& members = g.collectives[static_cast<std::size_t>(node.collective)];
      if (++arrived[static_cast<std::size_t>(node.collective)] < static_cast<std::int32_t>(members.size())) continue;
      std::int64_t last = INT64_MIN;
      for (std::int32_t m : members) last = std::max(last, out.start_ns[static_cast<std::size_t>(m)]);
      for (std::int32_t m : members)
        queue.push({later(std::max(last, out.start_ns[static_cast<std::size_t>(m)]), duration_ns[static_cast<std::size_t>(m)]),
                    sequence++, m, What::end});
      continue;
    }
    out.end_ns[i] = ev.time_ns;
    for (std::int32_t k = first[i]; k < first[i + 1]; ++k) {
      const auto s = static_cast<std::size_t>(next[static_cast<std::size_t>(k)]);
      ready[s] = std::max(ready[s], later(ev.time_ns, lag[static_cast<std::size_t>(k)]));
      if (--pending[s] == 0) queue.push({ready[s], sequence++, static_cast<std::int32_t>(s), What::start});
    }
  }
  out.stuck = static_cast<std::int64_t>(std::count(out.end_ns.begin(), out.end_ns.begin() + static_cast<std::ptrdiff_t>(kernels), kNeverRan));
  return out;
}

namespace {

template <class Start, class End>
std::int64_t span(const ReplayGraph& g, std::int32_t rank, Start start, End end) {
  std::int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (rank >= 0 && g.nodes[i].rank != rank) continue;
    if (start(i) == kNeverRan || end(i) == kNeverRan) continue;
    lo = std::min(lo, start(i));
    hi = std::max(hi, end(i));
  }
  return hi >= lo ? hi - lo : 0;
}

}  // namespace

std::int64_t measured_span_ns(const ReplayGraph& g, std::int32_t rank) {
  return span(g, rank, [&](std::size_t i) { return g.nodes[i].start_ns; }, [&](std::size_t i) { return g.nodes[i].end_ns; });
}

std::int64_t replayed_span_ns(const ReplayGraph& g, const ReplayResult& r, std::int32_t rank) {
  return span(g, rank, [&](std::size_t i) { return r.start_ns[i]; }, [&](std::size_t i) { return r.end_ns[i]; });
}

}  // namespace overlap::traces
