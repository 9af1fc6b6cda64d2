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
#include "calibrate/traces/sm_share.hpp"
#include "calibrate/traces/trace_analysis.hpp"
#include "calibrate/traces/trace_replay.hpp"
#include "cost_model/collective_model.hpp"
#include "cost_model/collective_primitive.hpp"
#include "cost_model/gemm_model.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "tools/command_errors.hpp"
#include "tools/trace_swap.hpp"

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

// The replays a report describes: at the measured durations (the identity) and, with `hw` or
// what-ifs, again with the changed durations.
struct ReplayRuns {
  const TraceReports& loaded;
  const std::vector<traces::WhatIf>& what_ifs;
  const HardwareProfile* hw;
  std::vector<const traces::RankTrace*> traces;
  traces::ReplayGraph g;
  traces::ReplayResult identity;
  std::optional<traces::ReplayResult> changed;
  std::int64_t priced = 0, unscaled_comm = 0;
  traces::SmShareCounts sm_share;
  std::optional<SwapResult> swap;  // swap.all_gather

  // The second run's column: the what-ifs', or the model's on `hw`.
  std::string label() const { return hw ? "predicted" : "what-if"; }
  std::string key() const { return hw ? "predicted" : "what_if"; }
  const traces::ReplayResult& last() const { return changed ? *changed : identity; }
  int rank_of(std::size_t i) const { return loaded.ranks[i].rank; }
  std::int64_t stream_edges() const {
    std::int64_t n = 0;
    for (const traces::ReplayEdge& e : g.edges) n += e.source == traces::EdgeSource::stream_order ? 1 : 0;
    return n;
  }
};

std::vector<const traces::RankTrace*> trace_pointers(const TraceReports& loaded) {
  std::vector<const traces::RankTrace*> out;
  for (const traces::RankTrace& t : loaded.traces) out.push_back(&t);
  return out;
}

traces::ReplayGraph replay_graph_of(const TraceReports& loaded) {
  std::vector<traces::ReplayRank> in;
  for (std::size_t i = 0; i < loaded.traces.size(); ++i)
    in.push_back({&loaded.traces[i], loaded.ranks[i].clock_offset_ns.value_or(0)});
  return traces::build_replay_graph(in, loaded.split.members);
}

// The durations of the second run: the model's on `hw` where it prices a kernel, then the what-ifs.
std::vector<std::int64_t> changed_durations(ReplayRuns& r, std::vector<std::int64_t> d) {
  if (r.hw) {
    std::vector<bool> priced(r.g.nodes.size(), false);
    for (std::size_t i = 0; i < r.g.nodes.size(); ++i) {
      const traces::ReplayNode& n = r.g.nodes[i];
      const traces::RankTrace& t = *r.traces[static_cast<std::size_t>(n.rank)];
      if (const auto p = priced_ns(*r.hw, t, t.activities[static_cast<std::size_t>(n.activity)])) {
        d[i] = *p;
        priced[i] = true;
        ++r.priced;
      }
    }
    // The model prices a kernel on the whole GPU; beside communication kernels it had the SMs they
    // left (calibrate/traces/sm_share.hpp), and comm.sms changes what they hold.
    int comm_sms = 0;
    for (const traces::WhatIf& w : r.what_ifs) comm_sms = w.comm_sms > 0 ? w.comm_sms : comm_sms;
    if (r.hw->gpu.sm_count > 0)
      d = traces::sm_share_durations(r.g, r.traces, d, priced, r.hw->gpu.sm_count, comm_sms, &r.sm_share);
    for (const traces::WhatIf& w : r.what_ifs) {
      if (w.swap_all_gather.empty()) continue;
      try {
        r.swap = swap_all_gathers(r.g, r.traces, *r.hw, w.swap_all_gather, d);
      } catch (const std::invalid_argument& e) {
        throw UsageError(fmt::format("trace: --what-if {}: {}", w.text, e.what()));
      }
    }
  }
  if (!r.what_ifs.empty()) {
    std::optional<traces::LinkContext> links;
    if (r.hw) links = link_context(*r.hw, r.g, r.traces);
    d = traces::what_if_durations(r.g, r.traces, r.what_ifs, d, links ? &*links : nullptr, &r.unscaled_comm);
  }
  return d;
}

ReplayRuns run_replays(const TraceReports& loaded, const std::vector<traces::WhatIf>& what_ifs, const HardwareProfile* hw) {
  ReplayRuns r{loaded, what_ifs, hw, trace_pointers(loaded), replay_graph_of(loaded), {}, std::nullopt, 0, 0, {}, std::nullopt};
  std::vector<std::int64_t> measured_durations;
  for (const traces::ReplayNode& n : r.g.nodes) measured_durations.push_back(n.duration_ns);
  r.identity = traces::replay(r.g, measured_durations);
  const std::vector<std::int64_t> d = changed_durations(r, measured_durations);
  if (hw || !what_ifs.empty()) r.changed = traces::replay(r.g, d);
  return r;
}

// One row per kernel, in the graph's order (rank, then stream, then stream order).
void write_csv(const ReplayRuns& r, std::ostream& s) {
  s << "rank,device,stream,kind,class,name,measured_start_us,measured_dur_us,replayed_start_us,replayed_dur_us";
  if (r.changed) s << fmt::format(",{0}_start_us,{0}_dur_us", r.key());
  s << "\n";
  const auto dur = [](const traces::ReplayResult& x, std::size_t i) {
    return x.end_ns[i] == traces::kNeverRan ? traces::kNeverRan : x.end_ns[i] - x.start_ns[i];
  };
  for (std::size_t i = 0; i < r.g.nodes.size(); ++i) {
    const traces::ReplayNode& n = r.g.nodes[i];
    const traces::RankTrace& t = *r.traces[static_cast<std::size_t>(n.rank)];
    const traces::GpuActivity& a = t.activities[static_cast<std::size_t>(n.activity)];
    const traces::ReplayStream& st = r.g.streams[static_cast<std::size_t>(n.stream)];
    s << fmt::format("{},{},{},{},{},{},{},{},{},{}", r.rank_of(static_cast<std::size_t>(n.rank)), st.device,
                     st.stream < 0 ? std::string() : std::to_string(st.stream), traces::kind_name(a.kind),
                     traces::class_name(a.cls), csv_text(t.names[a.name]), us_text(n.start_ns), us_text(n.end_ns - n.start_ns),
                     us_text(r.identity.start_ns[i]), us_text(dur(r.identity, i)));
    if (r.changed) s << "," << us_text(r.changed->start_ns[i]) << "," << us_text(dur(*r.changed, i));
    s << "\n";
  }
}

nlohmann::json json_graph(const ReplayRuns& r) {
  const traces::ReplayGraph& g = r.g;
  return {{"kernels", g.nodes.size()},
          {"stream_order_edges", r.stream_edges()},
          {"recorded_stream_waits", g.event_waits},
          {"inferred_cross_stream_waits", g.inferred},
          {"starts_kept_as_measured", g.unexplained},
          {"kernels_without_launch", g.without_launch},
          {"cpu_threads", g.cpu_threads},
          {"cpu_calls", g.cpu.size()},
          {"cpu_synchronisations_joined", g.cpu_syncs},
          {"launches_not_replayed", g.launches_not_replayed},
          {"collectives_joined", g.collectives.size()},
          {"kernels_never_ran", r.last().stuck}};
}

// Per rank and for all ranks together: the measured and replayed spans.
nlohmann::json json_ranks(const ReplayRuns& r) {
  const traces::ReplayGraph& g = r.g;
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i <= r.loaded.traces.size(); ++i) {
    const bool all = i == r.loaded.traces.size();
    const auto rank = all ? -1 : static_cast<std::int32_t>(i);
    nlohmann::json row = {{"rank", all ? nlohmann::json("all") : nlohmann::json(r.rank_of(i))},
                          {"measured_span_us", us(traces::measured_span_ns(g, rank))},
                          {"replayed_span_us", us(traces::replayed_span_ns(g, r.identity, rank))},
                          {"replay_error_pct", error_pct(traces::measured_span_ns(g, rank), traces::replayed_span_ns(g, r.identity, rank))}};
    if (!all) row["launch_latency_us"] = g.launch_latency_ns[i] >= 0 ? nlohmann::json(us(g.launch_latency_ns[i])) : nlohmann::json();
    if (r.changed) {
      row[r.key() + "_span_us"] = us(traces::replayed_span_ns(g, *r.changed, rank));
      if (r.hw) row["predicted_error_pct"] = error_pct(traces::measured_span_ns(g, rank), traces::replayed_span_ns(g, *r.changed, rank));
    }
    out.push_back(row);
  }
  return out;
}

void write_json(const ReplayRuns& r, std::ostream& s) {
  nlohmann::json j;
  j["graph"] = json_graph(r);
  if (r.hw)
    j["hardware"] = {{"name", r.hw->name},
                     {"kernels_priced", r.priced},
                     {"sm_share", {{"sm_count", r.hw->gpu.sm_count},
                                   {"kernels_rescaled", r.sm_share.rescaled},
                                   {"kernels_beside_unknown_grid", r.sm_share.unknown_grid},
                                   {"kernels_capped", r.sm_share.capped}}}};
  if (!r.what_ifs.empty()) j["what_if_comm_kernels_without_link"] = r.unscaled_comm;
  if (r.swap) {
    nlohmann::json pairs = nlohmann::json::array();
    for (const SwapPair& p : r.swap->pairs)
      pairs.push_back({{"rank", r.rank_of(static_cast<std::size_t>(p.rank))},
                       {"all_gather", r.traces[static_cast<std::size_t>(p.rank)]->names[r.traces[static_cast<std::size_t>(p.rank)]
                                          ->activities[static_cast<std::size_t>(r.g.nodes[p.all_gather].activity)].name]},
                       {"m", p.m}, {"n", p.n}, {"k", p.k}, {"dtype", p.dtype}, {"group", p.group},
                       {"measured_us", us(p.measured_ns)}, {"scheme_us", us(p.scheme_ns)}});
    j["swap"] = {{"scheme", r.swap->scheme}, {"all_gathers", r.swap->all_gathers}, {"pairs", pairs}};
  }
  j["what_if"] = nlohmann::json::array();
  for (const traces::WhatIf& w : r.what_ifs) j["what_if"].push_back(w.text);
  j["ranks"] = json_ranks(r);
  const std::vector<StreamBusy> measured_busy = busy(r.g, r.identity), last_busy = busy(r.g, r.last());
  j["streams"] = nlohmann::json::array();
  for (std::size_t i = 0; i < r.g.streams.size(); ++i) {
    nlohmann::json row = {{"rank", r.rank_of(static_cast<std::size_t>(r.g.streams[i].rank))},
                          {"device", r.g.streams[i].device},
                          {"stream", r.g.streams[i].stream},
                          {"kernels", measured_busy[i].kernels},
                          {"measured_busy_us", us(measured_busy[i].measured_ns)}};
    if (r.changed) row[r.key() + "_busy_us"] = us(last_busy[i].replayed_ns);
    j["streams"].push_back(row);
  }
  const std::map<std::string, KindBusy> last_kinds = busy_by_kind(r.g, r.last(), r.traces);
  j["kinds"] = nlohmann::json::array();
  for (const auto& [kind, b] : busy_by_kind(r.g, r.identity, r.traces)) {
    nlohmann::json row = {{"kind", kind}, {"kernels", b.kernels}, {"measured_busy_us", us(b.measured_ns)}};
    if (r.changed) row[r.key() + "_busy_us"] = us(last_kinds.at(kind).replayed_ns);
    j["kinds"].push_back(row);
  }
  s << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

// The table report's opening lines: what the graph holds and what the second run changed.
void write_text_summary(const ReplayRuns& r, std::ostream& s) {
  const traces::ReplayGraph& g = r.g;
  s << fmt::format("Replay: {} kernel(s) on {} rank(s); {} stream-order edge(s), {} recorded stream wait(s), {} inferred "
                   "cross-stream wait(s), {} collective(s) joined across ranks\n",
                   g.nodes.size(), r.loaded.traces.size(), r.stream_edges(), g.event_waits, g.inferred, g.collectives.size());
  s << fmt::format("  {} start(s) kept as measured, after their launch where it is replayed (no launch, stream or wait explains them; {} kernel(s) without a "
                   "recorded launch)\n",
                   g.unexplained, g.without_launch);
  s << fmt::format("  CPU: {} call(s) on {} launching thread(s) replayed with their measured gaps, {} synchronisation(s) "
                   "joined to the kernels they wait for; {} launch(es) from an unrecorded thread kept at their measured "
                   "times\n",
                   g.cpu.size(), g.cpu_threads, g.cpu_syncs, g.launches_not_replayed);
  if (r.last().stuck > 0)
    s << fmt::format("  warning: {} kernel(s) never ran: the graph has a cycle (collectives matched in an order the "
                     "streams contradict)\n",
                     r.last().stuck);
  for (const traces::WhatIf& w : r.what_ifs) s << "  what-if: " << w.text << (r.hw ? " (on the predicted durations)" : "") << "\n";
  if (r.hw && (r.sm_share.rescaled > 0 || r.sm_share.unknown_grid > 0))
    s << fmt::format("  SMs: {} compute kernel(s) beside communication re-timed on the {} SMs less those the communication "
                     "kernels hold (their grid){}; {} beside a communication kernel of unrecorded grid left as they were "
                     "there{}\n",
                     r.sm_share.rescaled, r.hw->gpu.sm_count,
                     [&] {
                       for (const traces::WhatIf& w : r.what_ifs)
                         if (w.comm_sms > 0) return fmt::format(", {} each by comm.sms", w.comm_sms);
                       return std::string();
                     }(),
                     r.sm_share.unknown_grid,
                     r.sm_share.capped > 0 ? fmt::format("; {} left 1 SM", r.sm_share.capped) : std::string());
  if (r.swap) {
    s << fmt::format("  swap.all_gather={}: {} of {} all-gather(s) matched to the next GEMM on their GPU (exact: its M x K "
                     "= the gathered elements), each pair replaced by {}'s time on {}\n",
                     r.swap->scheme, r.swap->pairs.size(), r.swap->all_gathers, r.swap->scheme, r.hw->name);
    for (const SwapPair& p : r.swap->pairs)
      s << fmt::format("    rank {}: all-gather over {} + GEMM {}x{}x{} {}: {:.3f} us as measured / priced -> {:.3f} us\n",
                       r.rank_of(static_cast<std::size_t>(p.rank)), p.group, p.m, p.n, p.k, p.dtype, us(p.measured_ns),
                       us(p.scheme_ns));
  }
  if (r.unscaled_comm > 0)
    s << fmt::format("  {} communication kernel(s) whose group the trace does not give left as they were by the link "
                     "what-if(s)\n",
                     r.unscaled_comm);
  if (r.hw)
    s << fmt::format("  predicted: {} GEMM and collective kernel(s) priced by the cost model on {}, the rest at their "
                     "measured durations; \"change\" is the predicted span's error against the measured one\n",
                     r.priced, r.hw->name);
  s << "\n";
}

void write_text_spans(const ReplayRuns& r, std::ostream& s) {
  const traces::ReplayGraph& g = r.g;
  s << fmt::format("{:<6} {:>12} {:>18} {:>16} {:>10}{}\n", "rank", "launch (us)", "measured span (us)",
                   "replayed (us)", "error", r.changed ? fmt::format(" {:>15} {:>9}", r.label() + " (us)", "change") : "");
  for (std::size_t i = 0; i <= r.loaded.traces.size(); ++i) {
    const bool all = i == r.loaded.traces.size();
    if (all && r.loaded.traces.size() < 2) break;
    const auto rank = all ? -1 : static_cast<std::int32_t>(i);
    const std::int64_t m = traces::measured_span_ns(g, rank), rep = traces::replayed_span_ns(g, r.identity, rank);
    s << fmt::format("{:<6} {:>12} {:>18.3f} {:>16.3f} {:>9.2f}%", all ? std::string("all") : std::to_string(r.rank_of(i)),
                     all || g.launch_latency_ns[i] < 0 ? std::string("-") : fmt::format("{:.3f}", us(g.launch_latency_ns[i])),
                     us(m), us(rep), error_pct(m, rep));
    if (r.changed) {
      const std::int64_t w = traces::replayed_span_ns(g, *r.changed, rank);
      s << fmt::format(" {:>15.3f} {:>8.2f}%", us(w), error_pct(r.hw ? m : rep, w));
    }
    s << "\n";
  }
}

void write_text_kinds(const ReplayRuns& r, std::ostream& s) {
  s << "\nKernel time per kind (all ranks)\n";
  s << fmt::format("{:<14} {:>8} {:>14}{}\n", "kind", "kernels", "measured (us)",
                   r.changed ? fmt::format(" {:>13} {:>9}", r.label() + " (us)", "change") : "");
  const std::map<std::string, KindBusy> last_kinds = busy_by_kind(r.g, r.last(), r.traces);
  for (const auto& [kind, b] : busy_by_kind(r.g, r.identity, r.traces)) {
    s << fmt::format("{:<14} {:>8} {:>14.3f}", kind, b.kernels, us(b.measured_ns));
    if (r.changed) {
      const std::int64_t w = last_kinds.at(kind).replayed_ns;
      s << fmt::format(" {:>13.3f} {:>8.2f}%", us(w), error_pct(b.measured_ns, w));
    }
    s << "\n";
  }
}

void write_text_streams(const ReplayRuns& r, std::ostream& s) {
  const traces::ReplayGraph& g = r.g;
  s << "\nBusy time per stream\n";
  s << fmt::format("{:<6} {:>6} {:>8} {:>8} {:>14}{}\n", "rank", "device", "stream", "kernels", "measured (us)",
                   r.changed ? fmt::format(" {:>13}", r.label() + " (us)") : "");
  const std::vector<StreamBusy> measured_busy = busy(g, r.identity), last_busy = busy(g, r.last());
  for (std::size_t i = 0; i < g.streams.size(); ++i) {
    s << fmt::format("{:<6} {:>6} {:>8} {:>8} {:>14.3f}", r.rank_of(static_cast<std::size_t>(g.streams[i].rank)),
                     g.streams[i].device, g.streams[i].stream < 0 ? std::string("-") : std::to_string(g.streams[i].stream),
                     measured_busy[i].kernels, us(measured_busy[i].measured_ns));
    if (r.changed) s << fmt::format(" {:>13.3f}", us(last_busy[i].replayed_ns));
    s << "\n";
  }
}

}  // namespace

ReplayReport replay_report(const TraceReports& loaded, const std::vector<traces::WhatIf>& what_ifs, const std::string& format,
                           bool want_trace, const HardwareProfile* hw) {
  const ReplayRuns r = run_replays(loaded, what_ifs, hw);
  std::ostringstream s;
  if (format == "csv") {
    write_csv(r, s);
  } else if (format == "json") {
    write_json(r, s);
  } else {
    write_text_summary(r, s);
    write_text_spans(r, s);
    write_text_kinds(r, s);
    write_text_streams(r, s);
  }
  ReplayReport out;
  out.text = s.str();
  if (want_trace) out.chrome_trace = traces::replay_chrome_trace(r.g, r.last(), r.traces);
  return out;
}

}  // namespace overlap::tools
