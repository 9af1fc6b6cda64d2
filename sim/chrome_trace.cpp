#include "sim/chrome_trace.hpp"

#include "sim/node_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

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

class Filter {
 public:
  Filter(const TraceOptions& o, int num_ranks) : o_(o), keep_(static_cast<std::size_t>(num_ranks), o.ranks.empty()) {
    for (int r : o.ranks)
      if (r >= 0 && r < num_ranks) keep_[static_cast<std::size_t>(r)] = true;
  }
  bool rank(int r) const { return r >= 0 && r < static_cast<int>(keep_.size()) && keep_[static_cast<std::size_t>(r)]; }
  // [start, end] overlaps the window (an instant on its edge counts).
  bool time(Ps start, Ps end) const {
    return end >= o_.window_start_ps && (o_.window_end_ps < 0 || start <= o_.window_end_ps);
  }
  bool in_window(Ps t) const { return time(t, t); }
  Ps window_start() const { return o_.window_start_ps; }

 private:
  const TraceOptions& o_;
  std::vector<bool> keep_;
};

// Step function of how many intervals are open, as counter samples; inside the window only, with
// the level at the window's start first when it began before.
void emit_counter(json& events, const Filter& keep, const std::string& name, int pid, const char* key,
                  std::vector<std::pair<Ps, int>> deltas) {
  std::sort(deltas.begin(), deltas.end());
  int level = 0;
  bool started = false;
  for (std::size_t i = 0; i < deltas.size();) {
    const Ps t = deltas[i].first;
    const int before = level;
    for (; i < deltas.size() && deltas[i].first == t; ++i) level += deltas[i].second;
    if (t < keep.window_start()) continue;
    if (!keep.in_window(t)) break;
    if (!started && t > keep.window_start() && keep.window_start() > 0)
      events.push_back(counter(name, keep.window_start(), pid, key, before));
    started = true;
    events.push_back(counter(name, t, pid, key, level));
  }
}

// The SM tracks of a cta-level trace: each rank's occupancy steps (for the "SMs busy" counter) and
// the (rank, SM) tracks that hold a slice (to be named).
struct SmTracks {
  std::map<int, std::vector<std::pair<Ps, int>>> deltas;
  std::map<std::pair<int, int>, bool> named;
};

// A process per kept rank and a named track per stream.
void add_process_names(json& events, const TaskGraph& graph, const Filter& keep) {
  for (int r = 0; r < graph.num_ranks(); ++r) {
    if (!keep.rank(r)) continue;
    events.push_back(meta("process_name", r, -1, fmt::format("rank {}", r)));
    events.push_back(meta("process_sort_index", r, -1, std::to_string(r)));
  }
  for (StreamId s = 0; s < static_cast<StreamId>(graph.streams().size()); ++s) {
    const Stream& st = graph.streams()[static_cast<std::size_t>(s)];
    if (keep.rank(st.rank))
      events.push_back(meta("thread_name", st.rank, s, fmt::format("stream {} (prio {})", st.name, st.priority)));
  }
}

// Is the graph (part of) a training step: a backward op, or the data-parallel communicator's?
bool is_training_graph(const TaskGraph& graph) {
  return std::any_of(graph.ops().begin(), graph.ops().end(), [](const Op& op) {
    return op.pass == StepPass::backward || op.communicator == Communicator::dp;
  });
}

// How a training step's op is shown: every backward op's name starts with "bwd." (the step driver
// names most of them so; the data-parallel ones it names by communicator first), as Perfetto colours a
// slice by its name and the timeline plot labels it by its name, so the two passes of a layer read apart.
std::string trace_name(const Op& op, bool training) {
  if (!training || op.pass != StepPass::backward || op.name.rfind("bwd.", 0) == 0) return op.name;
  return "bwd." + op.name;
}

// One slice per op on its stream: the kernel level. At cta level also the op on its copy engine and
// on each SM it held. In a training step's trace every slice's args also say its pass (forward |
// backward) and a communication op's communicator (tp | dp: the data-parallel gradient and parameter
// traffic, on streams dp_gather / dp_reduce).
void add_op_slices(json& events, const TaskGraph& graph, const Timeline& tl, const Filter& keep, bool cta,
                   SmTracks& sms) {
  const bool training = is_training_graph(graph);
  for (OpId id = 0; id < static_cast<OpId>(graph.ops().size()); ++id) {
    const Op& op = graph.op(id);
    const OpRecord& rec = tl.ops[static_cast<std::size_t>(id)];
    const int rank = graph.rank_of(id);
    if (!keep.rank(rank)) continue;
    if (cta && !rec.sms.empty()) {  // occupancy counts every gang kernel's SMs, whatever the window
      const int n = static_cast<int>(rec.sms.size());
      sms.deltas[rank].push_back({rec.start_ps, +n});
      sms.deltas[rank].push_back({rec.end_ps, -n});
    }
    if (!keep.time(rec.start_ps, rec.end_ps)) continue;
    json args = {{"kind", op_kind_name(op.kind)}, {"ready_us", us_from_ps(rec.ready_ps)}, {"op", id}};
    if (rec.sms_held > 0) args["sms_held"] = rec.sms_held;
    if (op.bytes > 0) args["bytes"] = op.bytes;
    if (training) {
      args["pass"] = op.pass == StepPass::backward ? "backward" : "forward";
      if (op.comm) args["communicator"] = op.communicator == Communicator::dp ? "dp" : "tp";
    }
    const std::string name = trace_name(op, training);
    events.push_back(slice(name, op.comm ? "comm" : "compute", rec.start_ps, rec.end_ps, rank, op.stream, args));
    if (!cta) continue;
    if (rec.copy_engine >= 0)
      events.push_back(slice(name, "copy_engine", rec.start_ps, rec.end_ps, rank, kCopyEngineTid + rec.copy_engine,
                             {{"bytes", op.bytes}, {"src", op.src_gpu}, {"dst", op.dst_gpu}}));
    for (int sm : rec.sms) {
      events.push_back(slice(name, "sm", rec.start_ps, rec.end_ps, rank, kSmTid + sm));
      sms.named[{rank, sm}] = true;
    }
  }
}

// Flow arrows from each send to its receive: "s" inside the sender's slice when the transfer is
// posted, "f" inside the receiver's slice when its last byte arrives. A phase transfer names its
// receiver (TransferRecord::receiver); a curve-fidelity leg goes to the member of the same
// collective on the destination rank. Copies and switch legs have no receiving op.
void add_flow_arrows(json& events, const TaskGraph& graph, const Timeline& tl, const Filter& keep) {
  std::map<std::pair<std::int64_t, int>, OpId> member;  // (collective, rank) -> op; kNoOp when not unique
  for (OpId id = 0; id < static_cast<OpId>(graph.ops().size()); ++id) {
    const Op& op = graph.op(id);
    if (op.kind != OpKind::comm_kernel || op.collective < 0) continue;
    auto [it, fresh] = member.emplace(std::pair{op.collective, graph.rank_of(id)}, id);
    if (!fresh) it->second = kNoOp;
  }
  std::int64_t flow_id = 0;
  for (const TransferRecord& t : tl.transfers) {
    if (t.src_gpu < 0 || t.dst_gpu < 0 || t.src_gpu == t.dst_gpu || t.op == kNoOp) continue;
    OpId receiver = t.receiver;
    const Op& sender = graph.op(t.op);
    if (receiver == kNoOp && sender.kind == OpKind::comm_kernel && sender.collective >= 0) {
      const auto it = member.find({sender.collective, t.dst_gpu});
      if (it != member.end()) receiver = it->second;
    }
    if (receiver == kNoOp || graph.rank_of(t.op) != t.src_gpu || graph.rank_of(receiver) != t.dst_gpu) continue;
    if (!keep.rank(t.src_gpu) || !keep.rank(t.dst_gpu) || !keep.time(t.start_ps, t.end_ps)) continue;
    const std::string name = fmt::format("{}->{} {} B", t.src_gpu, t.dst_gpu, t.bytes);
    events.push_back(json{{"name", name}, {"cat", "send"}, {"ph", "s"}, {"id", flow_id}, {"ts", us_from_ps(t.start_ps)},
                          {"pid", t.src_gpu}, {"tid", sender.stream}});
    events.push_back(json{{"name", name}, {"cat", "send"}, {"ph", "f"}, {"bp", "e"}, {"id", flow_id},
                          {"ts", us_from_ps(t.end_ps)}, {"pid", t.dst_gpu}, {"tid", graph.op(receiver).stream}});
    ++flow_id;
  }
}

// The cta level's own tracks: every CTA on its SM, the copy engines' and SMs' track names, and
// each rank's "SMs busy" counter.
void add_cta_tracks(json& events, const TaskGraph& graph, const Timeline& tl, const NodeConfig& node,
                    const Filter& keep, SmTracks& sms) {
  const bool training = is_training_graph(graph);
  for (const CtaRecord& c : tl.ctas) {
    const int rank = graph.rank_of(c.op);
    if (!keep.rank(rank)) continue;
    sms.deltas[rank].push_back({c.start_ps, +1});
    sms.deltas[rank].push_back({c.end_ps, -1});
    if (!keep.time(c.start_ps, c.end_ps)) continue;
    events.push_back(slice(trace_name(graph.op(c.op), training), "cta", c.start_ps, c.end_ps, rank, kSmTid + c.sm,
                           {{"tile", c.tile}}));
    sms.named[{rank, c.sm}] = true;
  }
  for (int r = 0; r < graph.num_ranks(); ++r) {
    if (!keep.rank(r)) continue;
    const int engines = node.gpus[static_cast<std::size_t>(r)].copy_engines;
    for (int e = 0; e < engines; ++e)
      events.push_back(meta("thread_name", r, kCopyEngineTid + e, fmt::format("copy engine {}", e)));
  }
  for (const auto& [key, unused] : sms.named) {
    (void)unused;
    events.push_back(meta("thread_name", key.first, kSmTid + key.second, fmt::format("SM {}", key.second)));
  }
  for (auto& [rank, deltas] : sms.deltas) emit_counter(events, keep, "SMs busy", rank, "sms", std::move(deltas));
}

// Links: a counter track of the transfers in flight on each link a kept rank's transfer crossed
// (a link's counter counts every transfer on it: the contention is the point). At cta level also
// the transfers themselves as async slices (one row each in Perfetto).
void add_fabric(json& events, const Timeline& tl, const NodeConfig& node, const Filter& keep, bool cta, int fabric_pid) {
  events.push_back(meta("process_name", fabric_pid, -1, "fabric"));
  std::map<int, std::vector<std::pair<Ps, int>>> link_deltas;
  std::map<int, bool> link_shown;
  std::int64_t async_id = 0;
  for (const TransferRecord& t : tl.transfers) {
    const bool mine = keep.rank(t.src_gpu) || keep.rank(t.dst_gpu);
    const bool shown = mine && keep.time(t.start_ps, t.end_ps);
    const std::string name = cta && shown ? fmt::format("{}->{} {} B", t.src_gpu, t.dst_gpu, t.bytes) : std::string();
    for (int l : t.links) {
      link_deltas[l].push_back({t.start_ps, +1});
      link_deltas[l].push_back({t.end_ps, -1});
      if (mine) link_shown[l] = true;
      if (!cta || !shown) continue;
      const std::string& link = node.fabric.links()[static_cast<std::size_t>(l)].name;
      events.push_back(json{{"name", name}, {"cat", link}, {"ph", "b"}, {"id", async_id}, {"ts", us_from_ps(t.start_ps)},
                            {"pid", fabric_pid}, {"tid", l}, {"args", {{"op", t.op}, {"bytes", t.bytes}}}});
      events.push_back(json{{"name", name}, {"cat", link}, {"ph", "e"}, {"id", async_id}, {"ts", us_from_ps(t.end_ps)},
                            {"pid", fabric_pid}, {"tid", l}});
      ++async_id;
    }
  }
  for (auto& [l, deltas] : link_deltas)
    if (link_shown.count(l))
      emit_counter(events, keep, "link " + node.fabric.links()[static_cast<std::size_t>(l)].name, fabric_pid,
                   "transfers", std::move(deltas));
}

}  // namespace

json chrome_trace(const TaskGraph& graph, const Timeline& tl, const NodeConfig& node, const TraceOptions& options) {
  const bool cta = options.level == TraceLevel::cta;
  const Filter keep(options, graph.num_ranks());
  json events = json::array();
  SmTracks sms;
  add_process_names(events, graph, keep);
  add_op_slices(events, graph, tl, keep, cta, sms);
  add_flow_arrows(events, graph, tl, keep);
  if (cta) add_cta_tracks(events, graph, tl, node, keep, sms);
  add_fabric(events, tl, node, keep, cta, graph.num_ranks());
  json other = {{"generator", "overlap-sim"}, {"makespan_us", us_from_ps(tl.makespan_ps)},
                {"trace_level", cta ? "cta" : "kernel"}};
  if (is_training_graph(graph)) {
    // Where the forward ends (the backward's ops are named "bwd ..." and carry args.pass = backward).
    Ps forward_end = 0;
    for (std::size_t i = 0; i < graph.ops().size() && i < tl.ops.size(); ++i)
      if (graph.ops()[i].pass == StepPass::forward) forward_end = std::max(forward_end, tl.ops[i].end_ps);
    other["training_step"] = true;
    other["forward_end_us"] = us_from_ps(forward_end);
  }
  return json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"}, {"otherData", std::move(other)}};
}

}  // namespace overlap::sim
