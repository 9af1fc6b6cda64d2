// A replay as a Chrome / Perfetto trace (calibrate/traces/replay_chrome_trace.hpp).
#include "calibrate/traces/replay_chrome_trace.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace overlap::traces {

namespace {

// Nanoseconds as microseconds with three decimals, exactly (as Kineto writes them).
std::string us(std::int64_t ns) {
  const char* sign = ns < 0 ? "-" : "";
  const unsigned long long a = ns < 0 ? 0ull - static_cast<unsigned long long>(ns) : static_cast<unsigned long long>(ns);
  return fmt::format("{}{}.{:03}", sign, a / 1000, a % 1000);
}

// A JSON string of bytes that need not be UTF-8 (invalid bytes replaced).
std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string replay_chrome_trace(const ReplayGraph& g, const ReplayResult& r, const std::vector<const RankTrace*>& ranks) {
  std::string out = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  bool first = true;
  const auto add = [&](const std::string& event) {
    out += first ? "  " : ",\n  ";
    out += event;
    first = false;
  };
  for (std::size_t rank = 0; rank < ranks.size(); ++rank)
    for (int replayed = 0; replayed < 2; ++replayed)
      add(fmt::format(R"({{"ph": "M", "name": "process_name", "pid": {}, "args": {{"name": {}}}}})", 2 * rank + replayed,
                      quoted(fmt::format("rank {} {} ({})", rank, replayed ? "replayed" : "measured", ranks[rank]->file))));
  for (const ReplayStream& s : g.streams)
    for (int replayed = 0; replayed < 2; ++replayed)
      add(fmt::format(R"({{"ph": "M", "name": "thread_name", "pid": {}, "tid": {}, "args": {{"name": "stream {}"}}}})",
                      2 * s.rank + replayed, s.stream, s.stream));
  std::vector<std::vector<std::string>> names(ranks.size());
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const ReplayNode& n = g.nodes[i];
    const RankTrace& t = *ranks[static_cast<std::size_t>(n.rank)];
    const GpuActivity& a = t.activities[static_cast<std::size_t>(n.activity)];
    auto& cache = names[static_cast<std::size_t>(n.rank)];
    if (cache.size() <= a.name) cache.resize(t.names.size());
    if (cache[a.name].empty()) cache[a.name] = quoted(t.names[a.name]);
    const std::int32_t stream = g.streams[static_cast<std::size_t>(n.stream)].stream;
    add(fmt::format(R"({{"ph": "X", "name": {}, "cat": "{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}}})", cache[a.name],
                    kind_name(a.kind), 2 * n.rank, stream, us(n.start_ns), us(n.end_ns - n.start_ns)));
    if (r.start_ns[i] != kNeverRan && r.end_ns[i] != kNeverRan)
      add(fmt::format(R"({{"ph": "X", "name": {}, "cat": "{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}}})", cache[a.name],
                      kind_name(a.kind), 2 * n.rank + 1, stream, us(r.start_ns[i]), us(r.end_ns[i] - r.start_ns[i])));
  }
  // The synchronisations, per (rank, thread) track in order of first appearance.
  std::map<std::pair<std::int32_t, std::int64_t>, std::int64_t> track;
  for (std::size_t j = 0; j < g.cpu.size(); ++j) {
    const CpuNode& c = g.cpu[j];
    if (c.call != CpuCall::sync) continue;
    const auto [it, fresh] = track.try_emplace({c.rank, c.thread}, kCpuTrackTid + static_cast<std::int64_t>(track.size()));
    if (fresh)
      for (int replayed = 0; replayed < 2; ++replayed)
        add(fmt::format(R"({{"ph": "M", "name": "thread_name", "pid": {}, "tid": {}, "args": {{"name": "CPU thread {}"}}}})",
                        2 * c.rank + replayed, it->second, it->second - kCpuTrackTid));
    const char* name = c.sync == SyncKind::stream_sync ? "cudaStreamSynchronize"
                       : c.sync == SyncKind::event_sync ? "cudaEventSynchronize"
                                                        : "cudaDeviceSynchronize";
    add(fmt::format(R"({{"ph": "X", "name": "{}", "cat": "cpu_sync", "pid": {}, "tid": {}, "ts": {}, "dur": {}}})", name,
                    2 * c.rank, it->second, us(c.start_ns), us(c.end_ns - c.start_ns)));
    // Replayed from its call (the thread's previous call's replayed end plus the measured gap, as
    // the graph's cpu_order edge has it) to its return.
    const auto id = static_cast<std::size_t>(g.cpu_id(j));
    if (r.end_ns[id] == kNeverRan) continue;
    std::int64_t call = c.start_ns;
    if (j > 0 && g.cpu[j - 1].rank == c.rank && g.cpu[j - 1].thread == c.thread) {
      const std::int64_t prev_end = r.end_ns[static_cast<std::size_t>(g.cpu_id(j - 1))];
      if (prev_end == kNeverRan) continue;
      call = prev_end + std::max<std::int64_t>(c.start_ns - g.cpu[j - 1].end_ns, 0);
    }
    add(fmt::format(R"({{"ph": "X", "name": "{}", "cat": "cpu_sync", "pid": {}, "tid": {}, "ts": {}, "dur": {}}})", name,
                    2 * c.rank + 1, it->second, us(call), us(r.end_ns[id] - call)));
  }
  out += "\n]}\n";
  return out;
}

}  // namespace overlap::traces
