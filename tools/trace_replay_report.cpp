// `trace --replay`'s report (tools/trace_replay_report.hpp).
#include "tools/trace_replay_report.hpp"

#include <cmath>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "calibrate/traces/gemm_pricing.hpp"
#include "calibrate/traces/profile_fit.hpp"
#include "calibrate/traces/replay_chrome_trace.hpp"
#include "calibrate/traces/trace_analysis.hpp"
#include "calibrate/traces/trace_replay.hpp"
#include "cost_model/collective_model.hpp"
#include "cost_model/collective_primitive.hpp"
#include "cost_model/gemm_model.hpp"
#include "sim/schemes/graph_builder.hpp"

namespace overlap::tools {

namespace {

double us(std::int64_t ns) { return static_cast<double>(ns) / 1000.0; }

// (replayed - measured) / measured in percent; 0 when nothing was measured.
double error_pct(std::int64_t measured, std::int64_t replayed) {
  return measured > 0 ? 100.0 * static_cast<double>(replayed - measured) / static_cast<double>(measured) : 0.0;
}

struct StreamBusy {
  std::int64_t kernels = 0, measured_ns = 0, replayed_ns = 0;
};

// Busy time per stream: the sum of its kernels' durations (a stream runs one at a time).
std::vector<StreamBusy> busy(const traces::ReplayGraph& g, const traces::ReplayResult& r) {
  std::vector<StreamBusy> out(g.streams.size());
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    StreamBusy& b = out[static_cast<std::size_t>(g.nodes[i].stream)];
    ++b.kernels;
    b.measured_ns += g.nodes[i].end_ns - g.nodes[i].start_ns;
    if (r.end_ns[i] != traces::kNeverRan) b.replayed_ns += r.end_ns[i] - r.start_ns[i];
  }
  return out;
}

// Kernel time per kind (kernel_kind.hpp's kind_name), in kind order: what a what-if moved where.
struct KindBusy {
  std::int64_t kernels = 0, measured_ns = 0, replayed_ns = 0;
};
std::map<std::string, KindBusy> busy_by_kind(const traces::ReplayGraph& g, const traces::ReplayResult& r,
                                             const std::vector<const traces::RankTrace*>& traces) {
  std::map<std::string, KindBusy> out;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const traces::ReplayNode& n = g.nodes[i];
    const traces::GpuActivity& a = traces[static_cast<std::size_t>(n.rank)]->activities[static_cast<std::size_t>(n.activity)];
    KindBusy& b = out[traces::kind_name(a.kind)];
    ++b.kernels;
    b.measured_ns += n.end_ns - n.start_ns;
    if (r.end_ns[i] != traces::kNeverRan) b.replayed_ns += r.end_ns[i] - r.start_ns[i];
  }
  return out;
}

// A CSV field (RFC 4180 section 2: a field holding a comma, quote or line break is quoted, its
// quotes doubled).
std::string csv_text(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Nanoseconds as microseconds with three decimals, exactly; "" for a kernel that never ran.
std::string us_text(std::int64_t ns) {
  if (ns == traces::kNeverRan) return "";
  const char* sign = ns < 0 ? "-" : "";
  const unsigned long long a = ns < 0 ? 0ull - static_cast<unsigned long long>(ns) : static_cast<unsigned long long>(ns);
  return fmt::format("{}{}.{:03}", sign, a / 1000, a % 1000);
}

// The model's time for a node's kernel on `hw`, nullopt when the trace does not give what it needs
// (shape, dtype, size, group) or the model has no such kernel: the same rules as `trace --hardware`.
std::optional<std::int64_t> priced_ns(const HardwareProfile& hw, const traces::RankTrace& t, const traces::GpuActivity& a) {
  try {
    if (a.link == traces::OpLink::gemm && (a.kind == traces::KernelKind::gemm || a.kind == traces::KernelKind::unknown)) {
      const traces::GemmOp& op = t.gemm_ops[static_cast<std::size_t>(a.op)];
      if (op.batch <= 0) return std::nullopt;
      // As `trace --hardware` prices it: TF32 where the kernel ran it, a batch as one launch, split-K
      // where the tiles leave SMs idle (calibrate/traces/gemm_pricing.hpp).
      const traces::GemmPrice price =
          traces::price_gemm(hw, traces::GemmShape{op.batch, op.m, op.n, op.k, t.names[op.dtype]}, t.names[a.name]);
      if (!price.ns) return std::nullopt;
      return static_cast<std::int64_t>(*price.ns);
    }
    if (a.link == traces::OpLink::comm && a.library != traces::CommLibrary::peer_copy) {
      const traces::CommOp& op = t.comm_ops[static_cast<std::size_t>(a.op)];
      std::string collective = traces::collective_from_kernel_name(t.names[a.name]);
      if (const std::string& named = t.names[op.collective]; !named.empty()) {
        const std::string c = traces::collective_from_kernel_name(named);
        collective = c.empty() ? named : c;
      }
      const auto prim = parse_collective_primitive(collective);
      const std::int64_t nelems = std::max(op.in_nelems, op.out_nelems);
      const int width = traces::dtype_bytes(t.names[op.dtype]);
      std::int64_t bytes = 0;
      if (!prim || nelems < 0 || width <= 0 || op.group_size < 2 || op.group_size > hw.fabric.num_gpus ||
          __builtin_mul_overflow(nelems, width, &bytes))
        return std::nullopt;
      const int n = static_cast<int>(op.group_size);
      return static_cast<std::int64_t>(collective_time_ps(hw, *prim, bytes, n, sim::collective_link_class(hw, n)) / 1000);
    }
  } catch (const std::invalid_argument&) {
    return std::nullopt;  // a dtype the profile has no peak for
  } catch (const RangeError&) {
    return std::nullopt;  // beyond what the model counts
  }
  return std::nullopt;
}

// Per node the link class its transfer runs over on `hw` (traces::LinkContext): a communication
// kernel's group as the model picks its class, a peer copy over nvlink; "" when the trace gives no group.
traces::LinkContext link_context(const HardwareProfile& hw, const traces::ReplayGraph& g,
                                 const std::vector<const traces::RankTrace*>& traces) {
  traces::LinkContext out;
  for (const auto& [name, link] : hw.fabric.links) out.profile_gbps[name] = link.bandwidth_gbps;
  out.node_link.resize(g.nodes.size());
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const traces::ReplayNode& n = g.nodes[i];
    const traces::RankTrace& t = *traces[static_cast<std::size_t>(n.rank)];
    const traces::GpuActivity& a = t.activities[static_cast<std::size_t>(n.activity)];
    if (a.cls != traces::ActivityClass::communication) continue;
    if (a.library == traces::CommLibrary::peer_copy) {
      if (hw.fabric.links.count("nvlink")) out.node_link[i] = "nvlink";
      continue;
    }
    if (a.link != traces::OpLink::comm) continue;
    const std::int64_t group = t.comm_ops[static_cast<std::size_t>(a.op)].group_size;
    if (group < 2 || group > INT32_MAX) continue;
    try {
      out.node_link[i] = sim::collective_link_class(hw, static_cast<int>(group));
    } catch (const std::invalid_argument&) {
      // a profile with no link class: the kernel stays unscaled
    }
  }
  return out;
}

}  // namespace

ReplayReport replay_report(const TraceReports& loaded, const std::vector<traces::WhatIf>& what_ifs, const std::string& format,
                           bool want_trace, const HardwareProfile* hw) {
  std::vector<traces::ReplayRank> in;
  std::vector<const traces::RankTrace*> traces;
  for (std::size_t i = 0; i < loaded.traces.size(); ++i) {
    in.push_back({&loaded.traces[i], loaded.ranks[i].clock_offset_ns.value_or(0)});
    traces.push_back(&loaded.traces[i]);
  }
  const traces::ReplayGraph g = traces::build_replay_graph(in, loaded.split.members);
  std::vector<std::int64_t> measured_durations;
  for (const traces::ReplayNode& n : g.nodes) measured_durations.push_back(n.duration_ns);
  const traces::ReplayResult identity = traces::replay(g, measured_durations);
  std::optional<traces::ReplayResult> changed;
  std::int64_t priced = 0, unscaled_comm = 0;
  std::vector<std::int64_t> d = measured_durations;
  if (hw) {
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
      const traces::ReplayNode& n = g.nodes[i];
      const traces::RankTrace& t = *traces[static_cast<std::size_t>(n.rank)];
      if (const auto p = priced_ns(*hw, t, t.activities[static_cast<std::size_t>(n.activity)])) {
        d[i] = *p;
        ++priced;
      }
    }
  }
  if (!what_ifs.empty()) {
    std::optional<traces::LinkContext> links;
    if (hw) links = link_context(*hw, g, traces);
    d = traces::what_if_durations(g, traces, what_ifs, d, links ? &*links : nullptr, &unscaled_comm);
  }
  if (hw || !what_ifs.empty()) changed = traces::replay(g, d);
  // The second run's column: the what-ifs', or the model's on `hw`.
  const std::string label = hw ? "predicted" : "what-if";
  const std::string key = hw ? "predicted" : "what_if";
  const traces::ReplayResult& last = changed ? *changed : identity;
  std::int64_t stream_edges = 0;
  for (const traces::ReplayEdge& e : g.edges) stream_edges += e.source == traces::EdgeSource::stream_order ? 1 : 0;

  ReplayReport out;
  const auto rank_of = [&](std::size_t i) { return loaded.ranks[i].rank; };
  const std::vector<StreamBusy> measured_busy = busy(g, identity);
  const std::vector<StreamBusy> last_busy = busy(g, last);
  std::ostringstream s;
  const std::map<std::string, KindBusy> measured_kinds = busy_by_kind(g, identity, traces);
  const std::map<std::string, KindBusy> last_kinds = busy_by_kind(g, last, traces);
  if (format == "csv") {
    // One row per kernel, in the graph's order (rank, then stream, then stream order).
    s << "rank,device,stream,kind,class,name,measured_start_us,measured_dur_us,replayed_start_us,replayed_dur_us";
    if (changed) s << fmt::format(",{0}_start_us,{0}_dur_us", key);
    s << "\n";
    const auto dur = [](const traces::ReplayResult& r, std::size_t i) {
      return r.end_ns[i] == traces::kNeverRan ? traces::kNeverRan : r.end_ns[i] - r.start_ns[i];
    };
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
      const traces::ReplayNode& n = g.nodes[i];
      const traces::RankTrace& t = *traces[static_cast<std::size_t>(n.rank)];
      const traces::GpuActivity& a = t.activities[static_cast<std::size_t>(n.activity)];
      const traces::ReplayStream& st = g.streams[static_cast<std::size_t>(n.stream)];
      s << fmt::format("{},{},{},{},{},{},{},{},{},{}", rank_of(static_cast<std::size_t>(n.rank)), st.device,
                       st.stream < 0 ? std::string() : std::to_string(st.stream), traces::kind_name(a.kind),
                       traces::class_name(a.cls), csv_text(t.names[a.name]), us_text(n.start_ns), us_text(n.end_ns - n.start_ns),
                       us_text(identity.start_ns[i]), us_text(dur(identity, i)));
      if (changed) s << "," << us_text(changed->start_ns[i]) << "," << us_text(dur(*changed, i));
      s << "\n";
    }
  } else if (format == "json") {
    nlohmann::json j;
    j["graph"] = {{"kernels", g.nodes.size()},
                  {"stream_order_edges", stream_edges},
                  {"recorded_stream_waits", g.event_waits},
                  {"inferred_cross_stream_waits", g.inferred},
                  {"starts_kept_as_measured", g.unexplained},
                  {"kernels_without_launch", g.without_launch},
                  {"cpu_threads", g.cpu_threads},
                  {"cpu_calls", g.cpu.size()},
                  {"cpu_synchronisations_joined", g.cpu_syncs},
                  {"launches_not_replayed", g.launches_not_replayed},
                  {"collectives_joined", g.collectives.size()},
                  {"kernels_never_ran", last.stuck}};
    if (hw) j["hardware"] = {{"name", hw->name}, {"kernels_priced", priced}};
    if (!what_ifs.empty()) j["what_if_comm_kernels_without_link"] = unscaled_comm;
    j["what_if"] = nlohmann::json::array();
    for (const traces::WhatIf& w : what_ifs) j["what_if"].push_back(w.text);
    j["ranks"] = nlohmann::json::array();
    for (std::size_t r = 0; r <= loaded.traces.size(); ++r) {
      const bool all = r == loaded.traces.size();
      const auto rank = all ? -1 : static_cast<std::int32_t>(r);
      nlohmann::json row = {{"rank", all ? nlohmann::json("all") : nlohmann::json(rank_of(r))},
                            {"measured_span_us", us(traces::measured_span_ns(g, rank))},
                            {"replayed_span_us", us(traces::replayed_span_ns(g, identity, rank))},
                            {"replay_error_pct", error_pct(traces::measured_span_ns(g, rank), traces::replayed_span_ns(g, identity, rank))}};
      if (!all) row["launch_latency_us"] = g.launch_latency_ns[r] >= 0 ? nlohmann::json(us(g.launch_latency_ns[r])) : nlohmann::json();
      if (changed) {
        row[key + "_span_us"] = us(traces::replayed_span_ns(g, *changed, rank));
        if (hw) row["predicted_error_pct"] = error_pct(traces::measured_span_ns(g, rank), traces::replayed_span_ns(g, *changed, rank));
      }
      j["ranks"].push_back(row);
    }
    j["streams"] = nlohmann::json::array();
    for (std::size_t i = 0; i < g.streams.size(); ++i) {
      nlohmann::json row = {{"rank", rank_of(static_cast<std::size_t>(g.streams[i].rank))},
                            {"device", g.streams[i].device},
                            {"stream", g.streams[i].stream},
                            {"kernels", measured_busy[i].kernels},
                            {"measured_busy_us", us(measured_busy[i].measured_ns)}};
      if (changed) row[key + "_busy_us"] = us(last_busy[i].replayed_ns);
      j["streams"].push_back(row);
    }
    j["kinds"] = nlohmann::json::array();
    for (const auto& [kind, b] : measured_kinds) {
      nlohmann::json row = {{"kind", kind}, {"kernels", b.kernels}, {"measured_busy_us", us(b.measured_ns)}};
      if (changed) row[key + "_busy_us"] = us(last_kinds.at(kind).replayed_ns);
      j["kinds"].push_back(row);
    }
    s << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    s << fmt::format("Replay: {} kernel(s) on {} rank(s); {} stream-order edge(s), {} recorded stream wait(s), {} inferred "
                     "cross-stream wait(s), {} collective(s) joined across ranks\n",
                     g.nodes.size(), loaded.traces.size(), stream_edges, g.event_waits, g.inferred, g.collectives.size());
    s << fmt::format("  {} start(s) kept as measured, after their launch where it is replayed (no launch, stream or wait explains them; {} kernel(s) without a "
                     "recorded launch)\n",
                     g.unexplained, g.without_launch);
    s << fmt::format("  CPU: {} call(s) on {} launching thread(s) replayed with their measured gaps, {} synchronisation(s) "
                     "joined to the kernels they wait for; {} launch(es) from an unrecorded thread kept at their measured "
                     "times\n",
                     g.cpu.size(), g.cpu_threads, g.cpu_syncs, g.launches_not_replayed);
    if (last.stuck > 0)
      s << fmt::format("  warning: {} kernel(s) never ran: the graph has a cycle (collectives matched in an order the "
                       "streams contradict)\n",
                       last.stuck);
    for (const traces::WhatIf& w : what_ifs) s << "  what-if: " << w.text << (hw ? " (on the predicted durations)" : "") << "\n";
    if (unscaled_comm > 0)
      s << fmt::format("  {} communication kernel(s) whose group the trace does not give left as they were by the link "
                       "what-if(s)\n",
                       unscaled_comm);
    if (hw)
      s << fmt::format("  predicted: {} GEMM and collective kernel(s) priced by the cost model on {}, the rest at their "
                       "measured durations; \"change\" is the predicted span's error against the measured one\n",
                       priced, hw->name);
    s << "\n";
    s << fmt::format("{:<6} {:>12} {:>18} {:>16} {:>10}{}\n", "rank", "launch (us)", "measured span (us)",
                     "replayed (us)", "error", changed ? fmt::format(" {:>15} {:>9}", label + " (us)", "change") : "");
    for (std::size_t r = 0; r <= loaded.traces.size(); ++r) {
      const bool all = r == loaded.traces.size();
      if (all && loaded.traces.size() < 2) break;
      const auto rank = all ? -1 : static_cast<std::int32_t>(r);
      const std::int64_t m = traces::measured_span_ns(g, rank), rep = traces::replayed_span_ns(g, identity, rank);
      s << fmt::format("{:<6} {:>12} {:>18.3f} {:>16.3f} {:>9.2f}%", all ? std::string("all") : std::to_string(rank_of(r)),
                       all || g.launch_latency_ns[r] < 0 ? std::string("-") : fmt::format("{:.3f}", us(g.launch_latency_ns[r])),
                       us(m), us(rep), error_pct(m, rep));
      if (changed) {
        const std::int64_t w = traces::replayed_span_ns(g, *changed, rank);
        s << fmt::format(" {:>15.3f} {:>8.2f}%", us(w), error_pct(hw ? m : rep, w));
      }
      s << "\n";
    }
    s << "\nKernel time per kind (all ranks)\n";
    s << fmt::format("{:<14} {:>8} {:>14}{}\n", "kind", "kernels", "measured (us)",
                     changed ? fmt::format(" {:>13} {:>9}", label + " (us)", "change") : "");
    for (const auto& [kind, b] : measured_kinds) {
      s << fmt::format("{:<14} {:>8} {:>14.3f}", kind, b.kernels, us(b.measured_ns));
      if (changed) {
        const std::int64_t w = last_kinds.at(kind).replayed_ns;
        s << fmt::format(" {:>13.3f} {:>8.2f}%", us(w), error_pct(b.measured_ns, w));
      }
      s << "\n";
    }
    s << "\nBusy time per stream\n";
    s << fmt::format("{:<6} {:>6} {:>8} {:>8} {:>14}{}\n", "rank", "device", "stream", "kernels", "measured (us)",
                     changed ? fmt::format(" {:>13}", label + " (us)") : "");
    for (std::size_t i = 0; i < g.streams.size(); ++i) {
      s << fmt::format("{:<6} {:>6} {:>8} {:>8} {:>14.3f}", rank_of(static_cast<std::size_t>(g.streams[i].rank)),
                       g.streams[i].device, g.streams[i].stream < 0 ? std::string("-") : std::to_string(g.streams[i].stream),
                       measured_busy[i].kernels, us(measured_busy[i].measured_ns));
      if (changed) s << fmt::format(" {:>13.3f}", us(last_busy[i].replayed_ns));
      s << "\n";
    }
  }
  out.text = s.str();
  if (want_trace) out.chrome_trace = traces::replay_chrome_trace(g, last, traces);
  return out;
}

}  // namespace overlap::tools
