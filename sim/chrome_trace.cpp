#include "sim/chrome_trace.hpp"

#include <fmt/format.h>

#include <map>

namespace overlap::sim {
namespace {

using nlohmann::json;

// Track ids inside a rank's process: streams first, then copy engines, then SMs.
constexpr int kCopyEngineTid = 100000;
constexpr int kSmTid = 200000;

json meta(const char* what, int pid, int tid, const std::string& name) {
  json e = {{"name", what}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}};
  if (tid >= 0) e["tid"] = tid;
  return e;
}

json slice(const std::string& name, const char* cat, Ps start, Ps end, int pid, int tid, json args = json::object()) {
  return json{{"name", name}, {"cat", cat}, {"ph", "X"}, {"ts", us_from_ps(start)}, {"dur", us_from_ps(end - start)},
              {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

json counter(const std::string& name, Ps t, int pid, const char* key, double value) {
  return json{{"name", name}, {"ph", "C"}, {"ts", us_from_ps(t)}, {"pid", pid}, {"tid", 0}, {"args", {{key, value}}}};
}

// Step function of how many intervals are open, as counter samples.
void emit_counter(json& events, const std::string& name, int pid, const char* key,
                  std::vector<std::pair<Ps, int>> deltas) {
  std::sort(deltas.begin(), deltas.end());
  int level = 0;
  for (std::size_t i = 0; i < deltas.size(); ++i) {
    level += deltas[i].second;
    if (i + 1 < deltas.size() && deltas[i + 1].first == deltas[i].first) continue;
    events.push_back(counter(name, deltas[i].first, pid, key, level));
  }
}

}  // namespace

json chrome_trace(const TaskGraph& graph, const Timeline& tl, const NodeConfig& node) {
  json events = json::array();
  const int fabric_pid = graph.num_ranks();
  for (int r = 0; r < graph.num_ranks(); ++r) {
    events.push_back(meta("process_name", r, -1, fmt::format("rank {}", r)));
    events.push_back(meta("process_sort_index", r, -1, std::to_string(r)));
  }
  for (StreamId s = 0; s < static_cast<StreamId>(graph.streams().size()); ++s) {
    const Stream& st = graph.streams()[static_cast<std::size_t>(s)];
    events.push_back(meta("thread_name", st.rank, s, fmt::format("stream {} (prio {})", st.name, st.priority)));
  }

  std::map<int, std::vector<std::pair<Ps, int>>> sm_deltas;  // rank -> occupancy steps
  std::map<std::pair<int, int>, bool> sm_named;               // (rank, SM) tracks in use
  for (OpId id = 0; id < static_cast<OpId>(graph.ops().size()); ++id) {
    const Op& op = graph.op(id);
    const OpRecord& rec = tl.ops[static_cast<std::size_t>(id)];
    const int rank = graph.rank_of(id);
    json args = {{"kind", op_kind_name(op.kind)}, {"ready_us", us_from_ps(rec.ready_ps)}, {"op", id}};
    if (rec.sms_held > 0) args["sms_held"] = rec.sms_held;
    if (op.bytes > 0) args["bytes"] = op.bytes;
    events.push_back(slice(op.name, op.comm ? "comm" : "compute", rec.start_ps, rec.end_ps, rank, op.stream, args));
    if (rec.copy_engine >= 0)
      events.push_back(slice(op.name, "copy_engine", rec.start_ps, rec.end_ps, rank, kCopyEngineTid + rec.copy_engine,
                             {{"bytes", op.bytes}, {"src", op.src_gpu}, {"dst", op.dst_gpu}}));
    for (int sm : rec.sms) {
      events.push_back(slice(op.name, "sm", rec.start_ps, rec.end_ps, rank, kSmTid + sm));
      sm_named[{rank, sm}] = true;
      sm_deltas[rank].push_back({rec.start_ps, +1});
      sm_deltas[rank].push_back({rec.end_ps, -1});
    }
  }
  for (const CtaRecord& c : tl.ctas) {
    const int rank = graph.rank_of(c.op);
    events.push_back(slice(graph.op(c.op).name, "cta", c.start_ps, c.end_ps, rank, kSmTid + c.sm, {{"tile", c.tile}}));
    sm_deltas[rank].push_back({c.start_ps, +1});
    sm_deltas[rank].push_back({c.end_ps, -1});
    sm_named[{rank, c.sm}] = true;
  }
  for (int r = 0; r < graph.num_ranks(); ++r) {
    const int engines = node.gpus[static_cast<std::size_t>(r)].copy_engines;
    for (int e = 0; e < engines; ++e) events.push_back(meta("thread_name", r, kCopyEngineTid + e, fmt::format("copy engine {}", e)));
  }
  for (const auto& [key, unused] : sm_named) {
    (void)unused;
    events.push_back(meta("thread_name", key.first, kSmTid + key.second, fmt::format("SM {}", key.second)));
  }
  for (auto& [rank, deltas] : sm_deltas) emit_counter(events, "SMs busy", rank, "sms", std::move(deltas));

  // Links: concurrent transfers overlap without nesting, so a link is a counter track of active
  // transfers plus its transfers as async slices (one row each in Perfetto).
  events.push_back(meta("process_name", fabric_pid, -1, "fabric"));
  std::map<int, std::vector<std::pair<Ps, int>>> link_deltas;
  int flow_id = 0;
  for (const TransferRecord& t : tl.transfers) {
    const std::string name = fmt::format("{}->{} {} B", t.src_gpu, t.dst_gpu, t.bytes);
    for (int l : t.links) {
      link_deltas[l].push_back({t.start_ps, +1});
      link_deltas[l].push_back({t.end_ps, -1});
      const std::string& link = node.fabric.links()[static_cast<std::size_t>(l)].name;
      json b = {{"name", name}, {"cat", link}, {"ph", "b"}, {"id", flow_id}, {"ts", us_from_ps(t.start_ps)},
                {"pid", fabric_pid}, {"tid", l}, {"args", {{"op", t.op}, {"bytes", t.bytes}}}};
      json e = {{"name", name}, {"cat", link}, {"ph", "e"}, {"id", flow_id}, {"ts", us_from_ps(t.end_ps)},
                {"pid", fabric_pid}, {"tid", l}};
      events.push_back(std::move(b));
      events.push_back(std::move(e));
      ++flow_id;
    }
  }
  for (auto& [l, deltas] : link_deltas)
    emit_counter(events, "link " + node.fabric.links()[static_cast<std::size_t>(l)].name, fabric_pid, "transfers",
                 std::move(deltas));
  return json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"},
              {"otherData", {{"generator", "overlap-sim"}, {"makespan_us", us_from_ps(tl.makespan_ps)}}}};
}

}  // namespace overlap::sim
