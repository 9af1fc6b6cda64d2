#include "sim/metrics.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "cost_model/collective_primitive.hpp"
#include "cost_model/input_error.hpp"
#include "sim/backward_shapes.hpp"
#include "sim/engine.hpp"
#include "sim/layer_composition.hpp"
#include "sim/node_builder.hpp"
#include "sim/scenario.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

namespace {

// Bytes a run moved between each pair of the graph's ranks (what check_bytes compares), and the first
// transfer between ranks outside the graph, if any (a bug check_bytes reports).
struct RankPairBytes {
  std::vector<std::vector<Bytes>> moved;
  std::optional<std::pair<int, int>> outside;
};

RankPairBytes pair_bytes(const TaskGraph& g, const Timeline& tl) {
  const int n = g.num_ranks();
  RankPairBytes out;
  out.moved.assign(static_cast<std::size_t>(n), std::vector<Bytes>(static_cast<std::size_t>(n), 0));
  for (const TransferRecord& t : tl.transfers) {
    // Local HBM traffic and legs to or from a switch (NVLS) are not traffic between two ranks. The
    // data-parallel collectives' legs run to GPUs outside the graph (their counterparts in the TP
    // groups not simulated): no rank of the graph receives them.
    if (t.src_gpu == t.dst_gpu || t.src_gpu == kSwitchPeer || t.dst_gpu == kSwitchPeer) continue;
    if (t.op != kNoOp && g.op(t.op).communicator == Communicator::dp) continue;
    if (t.src_gpu < 0 || t.dst_gpu < 0 || t.src_gpu >= n || t.dst_gpu >= n) {
      out.outside = std::pair{t.src_gpu, t.dst_gpu};
      break;
    }
    out.moved[static_cast<std::size_t>(t.src_gpu)][static_cast<std::size_t>(t.dst_gpu)] += t.bytes;
  }
  return out;
}

// Byte accounting (design.md "Scheme library"): what crossed the fabric between every pair of ranks
// must equal what the workload's collectives need. A mismatch is a bug in a scheme or the engine.
void check_bytes(const BuiltScheme& built, const RankPairBytes& seen, const std::string& what) {
  const int n = built.graph.num_ranks();
  const auto& req = built.required_bytes;
  if (static_cast<int>(req.size()) != n)
    throw InternalError(fmt::format("{}: required_bytes has {} rows for {} ranks", what, req.size(), n));
  if (seen.outside)
    throw InternalError(fmt::format("{}: bytes moved between ranks {} and {} outside the graph", what,
                                    seen.outside->first, seen.outside->second));
  for (int s = 0; s < n; ++s) {
    if (static_cast<int>(req[static_cast<std::size_t>(s)].size()) != n)
      throw InternalError(fmt::format("{}: required_bytes row {} has {} entries for {} ranks", what, s,
                                      req[static_cast<std::size_t>(s)].size(), n));
    for (int d = 0; d < n; ++d) {
      const Bytes want = s == d ? 0 : req[static_cast<std::size_t>(s)][static_cast<std::size_t>(d)];
      const Bytes got = seen.moved[static_cast<std::size_t>(s)][static_cast<std::size_t>(d)];
      if (want != got)
        throw InternalError(fmt::format("{}: byte accounting mismatch, rank {} -> rank {}: moved {} bytes, the "
                                        "collectives need {}",
                                        what, s, d, got, want));
    }
  }
}

// Peak SMs held by communication ops at once on any rank (design.md "GPU": comm kernels hold
// `channels` SMs for their whole duration).
int peak_comm_sms(const TaskGraph& g, const Timeline& tl) {
  // Per rank: (time, +sms / -sms); releases sort before takes at the same time.
  std::vector<std::vector<std::pair<Ps, int>>> events(static_cast<std::size_t>(g.num_ranks()));
  for (OpId id = 0; id < static_cast<OpId>(g.ops().size()); ++id) {
    const Op& op = g.op(id);
    if (!op.comm) continue;
    const OpRecord& rec = tl.ops.at(static_cast<std::size_t>(id));
    if (rec.sms_held <= 0 || rec.end_ps <= rec.start_ps) continue;
    auto& ev = events[static_cast<std::size_t>(g.rank_of(id))];
    ev.emplace_back(rec.start_ps, rec.sms_held);
    ev.emplace_back(rec.end_ps, -rec.sms_held);
  }
  int peak = 0;
  for (auto& ev : events) {
    std::sort(ev.begin(), ev.end());
    int held = 0;
    for (const auto& [t, d] : ev) {
      held += d;
      peak = std::max(peak, held);
    }
  }
  return peak;
}

}  // namespace

// The parameters a scheme ran with: the given ones plus every declared default not given (a
// hardware-dependent default as its formula, the way `overlap-sim schemes` shows it).
// A knob that means nothing for the workload (a training-only knob in a forward pass), and one that
// inherits another knob's value and was not given, is left out.
nlohmann::json params_with_defaults(const SchemeInfo& scheme, const nlohmann::json& given, const Workload& workload) {
  nlohmann::json out = given.is_object() ? given : nlohmann::json::object();
  for (const SchemeParam& p : scheme.params)
    if (!out.contains(p.name) && !p.inherits && param_applies(p, workload)) out[p.name] = default_for(p, nullptr);
  return out;
}

namespace {

double safe_ratio(double num, double den) { return den > 0 ? num / den : 0.0; }

// When the forward's last op ends (0: no forward op).
Ps forward_end_ps(const TaskGraph& g, const Timeline& tl) {
  Ps end = 0;
  for (std::size_t i = 0; i < g.ops().size() && i < tl.ops.size(); ++i)
    if (g.ops()[i].pass == StepPass::forward) end = std::max(end, tl.ops[i].end_ps);
  return end;
}

// The step's latency with one communicator's ops taking zero time.
Ps latency_without(const TaskGraph& g, const NodeConfig& node, Communicator c) {
  EngineOptions o;
  o.zero_comm = true;
  o.zero_communicator = c;
  o.graph_checked = true;
  o.fold_like_ranks = true;  // makespan only (folds when the other communicator moves no bytes)
  return run(g, node, o).makespan_ps;
}

// Per collective id: (latest start, latest end) over its member ops in a run.
using CollectiveSpans = std::map<std::int64_t, std::pair<Ps, Ps>>;

// What a scheme's figures read of the engine's runs: the main run (its ops' times per collective, its
// transfers summed per pair of ranks), the compute-only re-run's makespan and forward end, the communication-alone re-run's
// makespan (unless latency_only) and, for a step with data parallelism, the per-communicator re-runs.
struct SchemeRuns {
  Timeline main;  // empty, unless the result keeps the timeline (then no memo keeps these runs)
  // The main run as the figures read it.
  Ps latency_ps = 0;
  std::uint64_t events = 0;
  Ps forward_ps = 0;  // when its forward's last op ends
  std::vector<Ps> sm_busy_ps, copy_engine_busy_ps;
  int peak_comm_sms = 0;
  CollectiveSpans collective_spans;
  RankPairBytes pairs;
  Ps compute_only_ps = 0, compute_only_forward_ps = 0;
  Ps comm_alone_ps = 0;
  Ps without_tp_ps = -1, without_dp_ps = -1;
  bool latency_only = false;
};

// The runs of the graphs evaluate_all has simulated. The engine is a deterministic function of the
// graph, the node and its options, and evaluate_all runs every scheme on one node with one set of
// options: a scheme whose graph equals one already simulated (te_userbuffers' ring_exchange builds
// async_tp's) takes that graph's runs, and its figures are computed from them as from its own. The
// graphs themselves are not kept (a step's is about 50 MB): each is known by its digest, a hash of
// every field (TaskGraph::digest).
class RunMemo {
 public:
  const SchemeRuns* find(const TaskGraph::Digest& key, bool latency_only) const {
    for (const Entry& e : entries_)
      if (e.digest == key && (latency_only || !e.runs->latency_only)) return e.runs.get();
    return nullptr;
  }
  void add(const TaskGraph::Digest& key, std::unique_ptr<SchemeRuns> runs) {
    entries_.push_back(Entry{key, std::move(runs)});
  }

 private:
  struct Entry {
    TaskGraph::Digest digest;
    std::unique_ptr<SchemeRuns> runs;
  };
  std::vector<Entry> entries_;
};

StepFigures step_figures(const BuildContext& ctx, const NodeConfig& node, const SchemeRuns& runs,
                         const WorkloadComm& comm_split) {
  const Workload& w = ctx.workload;
  StepFigures s;
  s.present = true;
  s.pass = pass_name(w.training.pass);
  const Ps fwd = runs.forward_ps, fwd_compute = runs.compute_only_forward_ps;
  s.forward = PassFigures{fwd, fwd_compute, fwd - fwd_compute};
  const Ps bwd = runs.latency_ps - fwd, bwd_compute = runs.compute_only_ps - fwd_compute;
  s.backward = PassFigures{bwd, bwd_compute, bwd - bwd_compute};
  // Each pass's communication to hide: the workload's collectives alone (what comm_ps times), split
  // where the forward's last one ends (run once per scenario by evaluate_all).
  const bool given = comm_split.forward_ps >= 0 && comm_split.total_ps >= 0;
  const WorkloadComm comm = given ? comm_split : workload_comm(w, ctx.hardware, ctx.fidelity, &node);
  s.forward.comm_ps = comm.forward_ps;
  s.backward.comm_ps = comm.total_ps - comm.forward_ps;
  for (PassFigures* p : {&s.forward, &s.backward})
    p->overlap_efficiency =
        p->comm_ps > 0 ? std::clamp(1.0 - safe_ratio(static_cast<double>(p->exposed_comm_ps), static_cast<double>(p->comm_ps)), 0.0, 1.0)
                       : 0.0;
  const bool dp = w.training.parallel.dp > 1;
  s.exposed_tp_ps = dp ? runs.latency_ps - runs.without_tp_ps : runs.latency_ps - runs.compute_only_ps;
  s.exposed_dp_ps = dp ? runs.latency_ps - runs.without_dp_ps : 0;
  // Model FLOPs: forward 1x, backward 2x (dgrad and wgrad), summed over the layers' blocks (a MoE
  // block's: the active experts', sim/backward_shapes.hpp workload_forward_flops).
  const double forward = workload_forward_flops(w);
  const double passes = (w.training.pass != Pass::backward ? 1.0 : 0.0) + (has_backward(w) ? 2.0 : 0.0);
  s.model_flops = forward * passes;
  const auto peak = ctx.hardware.gpu.peak_tflops.find(dtype_name(workload_dtype(w)));
  const double seconds = static_cast<double>(runs.latency_ps) * 1e-12;
  if (peak != ctx.hardware.gpu.peak_tflops.end() && seconds > 0)
    s.mfu = s.model_flops / (seconds * peak->second * 1e12);
  if (seconds > 0)
    s.tokens_per_s = static_cast<double>(step_tokens(w)) * std::max(1, w.training.parallel.dp) / seconds;
  return s;
}

}  // namespace

namespace {

CollectiveSpans collective_spans(const TaskGraph& g, const Timeline& tl) {
  CollectiveSpans span;
  const auto& ops = g.ops();
  for (std::size_t i = 0; i < ops.size() && i < tl.ops.size(); ++i) {
    const Op& op = ops[i];
    // A data-parallel op stands for a collective of the TP groups not simulated (members = 1).
    if (op.kind != OpKind::comm_kernel || op.collective < 0 || (op.members <= 1 && op.communicator != Communicator::dp))
      continue;
    const OpRecord& rec = tl.ops[i];
    if (rec.start_ps < 0 || rec.end_ps < 0) continue;
    auto [it, fresh] = span.try_emplace(op.collective, rec.start_ps, rec.end_ps);
    if (!fresh) {
      it->second.first = std::max(it->second.first, rec.start_ps);
      it->second.second = std::max(it->second.second, rec.end_ps);
    }
  }
  return span;
}

std::vector<CollectiveFigure> collective_figures(const BuiltScheme& built, const CollectiveSpans& span) {
  std::vector<CollectiveFigure> out;
  for (const CollectiveCall& c : built.collectives) {
    const auto it = span.find(c.id);
    if (it == span.end() || c.bytes <= 0 || c.ranks <= 1) continue;
    CollectiveFigure f;
    f.name = c.name;
    f.primitive = primitive_name(c.primitive);
    f.bytes = c.bytes;
    f.ranks = c.ranks;
    f.start_ps = it->second.first;
    f.end_ps = it->second.second;
    f.time_ps = f.end_ps - f.start_ps;
    // GB/s = bytes per ns = bytes * 1000 / ps.
    f.algbw_gbps = f.time_ps > 0 ? static_cast<double>(c.bytes) * 1000.0 / static_cast<double>(f.time_ps) : 0.0;
    f.busbw_gbps = busbw_from_algbw(to_collective_primitive(c.primitive), c.ranks, f.algbw_gbps);
    f.algorithm = c.algorithm;
    f.protocol = c.protocol;
    f.channels = c.channels;
    f.communicator = c.communicator == Communicator::dp ? "dp" : "tp";
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

std::vector<CollectiveFigure> collective_figures(const BuiltScheme& built, const Timeline& tl) {
  return collective_figures(built, collective_spans(built.graph, tl));
}

WorkloadComm workload_comm(const Workload& workload, const HardwareProfile& hardware, Fidelity fidelity,
                           const NodeConfig* node) {
  const nlohmann::json no_params = nlohmann::json::object();
  const BuildContext ctx{workload, hardware, no_params, fidelity, node};
  const BuiltScheme built = build_workload_collectives(ctx);
  const Timeline tl = node ? run(built.graph, *node) : run(built.graph, make_node(hardware, built.graph.num_ranks()));
  return WorkloadComm{tl.makespan_ps, forward_end_ps(built.graph, tl)};
}

Ps workload_comm_ps(const Workload& workload, const HardwareProfile& hardware, Fidelity fidelity,
                    const NodeConfig* node) {
  return workload_comm(workload, hardware, fidelity, node).total_ps;
}

namespace {

// The engine runs one scheme's figures need: the main run (latency, events, busy times, spans and
// pair bytes for the byte check) and, unless latency only, the compute-only and communication-alone
// runs.
std::unique_ptr<SchemeRuns> simulate_runs(const TaskGraph& graph, const NodeConfig& node, const EvaluateOptions& options) {
  auto fresh = std::make_unique<SchemeRuns>();
  EngineOptions main_opts;
  main_opts.record_ctas = options.record_ctas;
  Timeline tl = run(graph, node, main_opts);
  fresh->latency_ps = tl.makespan_ps;
  fresh->events = tl.events;
  fresh->forward_ps = forward_end_ps(graph, tl);
  fresh->sm_busy_ps = tl.sm_busy_ps;
  fresh->copy_engine_busy_ps = tl.copy_engine_busy_ps;
  fresh->peak_comm_sms = peak_comm_sms(graph, tl);
  fresh->collective_spans = collective_spans(graph, tl);
  fresh->pairs = pair_bytes(graph, tl);
  if (options.keep_timeline) fresh->main = std::move(tl);
  fresh->latency_only = options.latency_only;
  if (options.latency_only) return fresh;
  EngineOptions zero_opts;
  zero_opts.zero_comm = true;
  zero_opts.graph_checked = true;
  // Read for its makespan and op ends only: the TP ranks' identical compute runs once.
  zero_opts.fold_like_ranks = true;
  const Timeline compute_only = run(graph, node, zero_opts);
  fresh->compute_only_ps = compute_only.makespan_ps;
  fresh->compute_only_forward_ps = forward_end_ps(graph, compute_only);
  // The scheme's own communication alone: every compute op taking zero time (launch overheads
  // stay, as they do in the real run, so this is a lower bound of it).
  EngineOptions comm_opts;
  comm_opts.zero_compute = true;
  comm_opts.graph_checked = true;
  fresh->comm_alone_ps = run(graph, node, comm_opts).makespan_ps;
  return fresh;
}

// The figures that follow from the runs alone: exposed communication, overlap efficiency (raw and
// clamped), the bound and the share of it reached.
void overlap_figures(SchemeResult& r, const BuiltScheme& built, const BuildContext& ctx) {
  // The one definition of exposed communication (design.md "Metrics").
  r.exposed_comm_ps = r.latency_ps - r.compute_only_ps;
  r.overlap_efficiency_raw = r.comm_ps > 0 ? 1.0 - safe_ratio(static_cast<double>(r.exposed_comm_ps),
                                                               static_cast<double>(r.comm_ps))
                                           : 0.0;
  // Clamped for the report: below 0 the scheme exposes more than the collectives cost alone (extra
  // per-chunk latency, SM contention) and hides nothing; above 1 it ran faster than compute-only,
  // which only an engine anomaly could cause. The raw value is reported beside it.
  r.overlap_efficiency = std::clamp(r.overlap_efficiency_raw, 0.0, 1.0);
  // Bound: perfect overlap (flashoverlap-paper Sec. 6.4). Nothing beats the compute-only run; with
  // no scheme-specific bound, the scheme's own communication cannot finish faster than it does alone
  // either. (Its own, not the workload's collectives: a decomposition into P2P steps may skip NCCL's
  // per-collective latency and beat comm_ps.)
  if (built.bound_ps >= 0) {
    r.bound_ps = std::max(built.bound_ps, r.compute_only_ps);
    // A training step's data-parallel traffic is outside the scheme's decomposition bound (which
    // counts the TP collectives it decomposes): its own communication alone bounds it too.
    if (is_training_step(ctx.workload)) r.bound_ps = std::max(r.bound_ps, r.scheme_comm_ps);
  } else {
    r.bound_ps = std::max(r.compute_only_ps, r.scheme_comm_ps);
  }
  r.pct_of_bound = r.latency_ps > 0 ? 100.0 * safe_ratio(static_cast<double>(r.bound_ps),
                                                         static_cast<double>(r.latency_ps))
                                    : 100.0;
}

// evaluate, with the runs of a graph already simulated taken from `memo` (nullptr: none kept).
SchemeResult evaluate_with(const SchemeInfo& scheme, const BuildContext& ctx, const EvaluateOptions& options,
                           RunMemo* memo) {
  validate_workload(ctx.workload);
  if (scheme.applies && !scheme.applies(ctx.workload))
    throw std::invalid_argument(
        fmt::format("scheme '{}' does not apply to a {} workload", scheme.name, workload_kind_name(ctx.workload.kind)));
  if (const auto refused = check_params_apply(scheme.params, ctx.params, ctx.workload))
    throw InputError("", 0, "params." + refused->name, refused->why);
  BuiltScheme built = scheme.build(ctx);
  std::unique_ptr<NodeConfig> own;
  if (!ctx.node) own = std::make_unique<NodeConfig>(make_node(ctx.hardware, built.graph.num_ranks()));
  const NodeConfig& node = ctx.node ? *ctx.node : *own;

  const TaskGraph::Digest digest = memo ? built.graph.digest() : TaskGraph::Digest{};
  const SchemeRuns* found = memo ? memo->find(digest, options.latency_only) : nullptr;
  std::unique_ptr<SchemeRuns> fresh = found ? nullptr : simulate_runs(built.graph, node, options);
  const SchemeRuns& runs = found ? *found : *fresh;
  // Kept for a later scheme with the same graph once this one's figures are done.
  auto remember = [&] {
    if (memo && fresh) memo->add(digest, std::move(fresh));
  };
  if (options.latency_only) {
    SchemeResult r;
    r.scheme = scheme.name;
    r.params = params_with_defaults(scheme, ctx.params, ctx.workload);
    r.latency_ps = runs.latency_ps;
    r.reason = built.reason;
    r.events = runs.events;
    remember();
    return r;
  }

  // Curve-fidelity collectives move their algorithm's bytes as flows too, so one check on the main
  // run covers both fidelities.
  if (options.verify_bytes) check_bytes(built, runs.pairs, scheme.name);
  if (fresh && is_training_step(ctx.workload) && ctx.workload.training.parallel.dp > 1) {
    fresh->without_tp_ps = latency_without(built.graph, node, Communicator::tp);
    fresh->without_dp_ps = latency_without(built.graph, node, Communicator::dp);
  }

  SchemeResult r;
  r.scheme = scheme.name;
  r.params = params_with_defaults(scheme, ctx.params, ctx.workload);
  r.latency_ps = runs.latency_ps;
  r.compute_only_ps = runs.compute_only_ps;
  r.comm_ps = options.comm_ps >= 0 ? options.comm_ps : workload_comm_ps(ctx.workload, ctx.hardware, ctx.fidelity);
  r.scheme_comm_ps = runs.comm_alone_ps;
  overlap_figures(r, built, ctx);
  r.sms_lost_to_comm = runs.peak_comm_sms;
  r.collectives = collective_figures(built, runs.collective_spans);
  r.reason = built.reason;
  r.events = runs.events;
  for (int rank = 0; rank < built.graph.num_ranks(); ++rank) {
    ResourceUtilization u;
    u.rank = rank;
    const auto ri = static_cast<std::size_t>(rank);
    const double span = static_cast<double>(r.latency_ps);
    if (ri < runs.sm_busy_ps.size())
      u.sm = safe_ratio(static_cast<double>(runs.sm_busy_ps[ri]), ctx.hardware.gpu.sm_count * span);
    if (ri < runs.copy_engine_busy_ps.size())
      u.copy_engine = safe_ratio(static_cast<double>(runs.copy_engine_busy_ps[ri]), ctx.hardware.gpu.copy_engines * span);
    r.utilization.push_back(u);
  }
  if (is_training_step(ctx.workload))
    r.step = step_figures(ctx, node, runs, WorkloadComm{options.comm_ps, options.forward_comm_ps});
  // A memo is never kept with keep_timeline (evaluate_all): the runs are this scheme's own.
  if (options.keep_timeline) r.timeline = std::move(fresh->main);
  remember();
  return r;
}

}  // namespace

SchemeResult evaluate(const SchemeInfo& scheme, const BuildContext& ctx, const EvaluateOptions& options) {
  return evaluate_with(scheme, ctx, options, nullptr);
}


std::string baseline_scheme_for(const Workload& workload) {
  return workload.kind == WorkloadKind::decode_stack ? "tp_baseline" : "no_overlap";
}

std::vector<SchemeResult> evaluate_all(const std::vector<SchemeRequest>& schemes, const Workload& workload,
                                       const HardwareProfile& hardware, Fidelity fidelity,
                                       const EvaluateOptions& options) {
  std::vector<const SchemeInfo*> infos;
  for (const SchemeRequest& req : schemes) {
    const SchemeInfo* info = find_scheme(req.name);
    if (!info) throw std::invalid_argument(fmt::format("schemes: unknown scheme '{}'", req.name));
    infos.push_back(info);
  }
  // A pipeline or context-parallel job is its stages' steps composed by a schedule (sim/pipeline_step.hpp),
  // never one graph: run through evaluate_pipeline, which evaluates each stage's workload here.
  if (workload.training.job.active())
    throw std::invalid_argument("workload.parallel: a pipeline or context-parallel job (pp, cp, micro_batches) runs "
                                "with `overlap-sim run`, which composes its stages; this command simulates one graph");
  // A transformer too deep to simulate whole: its identical layers once, the rest composed.
  if (composition_base_layers(workload) && gemm_tiles_per_rank(workload) > kMaxGemmTilesPerRank)
    return evaluate_all_composed(schemes, workload, hardware, fidelity, options);
  const std::string base_name = baseline_scheme_for(workload);
  std::vector<SchemeResult> out;
  std::optional<Ps> baseline_ps;
  // What every scheme shares is run once per scenario: the workload's collectives alone, and the
  // baseline (its latency only, when it was not asked for itself).
  validate_workload(workload);
  const NodeConfig node = make_node(hardware, std::max(1, workload.tp));
  EvaluateOptions shared = options;
  if (shared.comm_ps < 0 || (is_training_step(workload) && shared.forward_comm_ps < 0)) {
    const WorkloadComm comm = workload_comm(workload, hardware, fidelity, &node);
    shared.comm_ps = comm.total_ps;
    shared.forward_comm_ps = comm.forward_ps;
  }
  // Graphs already simulated, for a scheme that builds one of them again; not when a result keeps its
  // whole timeline (traces: a CTA-level one is too large to keep twice).
  RunMemo memo;
  RunMemo* const reuse = options.record_ctas || options.keep_timeline ? nullptr : &memo;
  for (std::size_t i = 0; i < schemes.size(); ++i) {
    if (infos[i]->applies && !infos[i]->applies(workload)) continue;
    const BuildContext ctx{workload, hardware, schemes[i].params, fidelity, &node};
    if (!shared.keep_going) {
      out.push_back(evaluate_with(*infos[i], ctx, shared, reuse));
      out.back().request = static_cast<int>(i);
    } else {
      SchemeResult failed;
      failed.scheme = schemes[i].name;
      failed.params = schemes[i].params;
      failed.request = static_cast<int>(i);
      try {
        out.push_back(evaluate_with(*infos[i], ctx, shared, reuse));
        out.back().request = static_cast<int>(i);
      } catch (const InputError& e) {
        failed.error = e.message();
        failed.error_key = e.key_path();
      } catch (const std::invalid_argument& e) {
        failed.error = e.what();
      } catch (const RangeError& e) {
        failed.error = e.what();
      } catch (const SimError& e) {
        failed.error = e.what();
      }
      if (failed.failed()) {
        out.push_back(std::move(failed));
        continue;
      }
    }
    if (!baseline_ps && schemes[i].name == base_name && schemes[i].params.empty()) baseline_ps = out.back().latency_ps;
  }
  if (!baseline_ps) {
    const SchemeInfo* base = find_scheme(base_name);
    if (!base) throw std::logic_error("baseline scheme '" + base_name + "' is not registered");
    const nlohmann::json defaults = nlohmann::json::object();
    EvaluateOptions quiet = shared;
    quiet.keep_timeline = false;
    quiet.record_ctas = false;
    quiet.latency_only = true;
    baseline_ps = evaluate_with(*base, BuildContext{workload, hardware, defaults, fidelity, &node}, quiet, reuse).latency_ps;
  }
  for (SchemeResult& r : out)
    if (!r.failed()) r.speedup_vs_no_overlap = r.latency_ps > 0 ? safe_ratio(static_cast<double>(*baseline_ps),
                                                            static_cast<double>(r.latency_ps))
                                               : 0.0;
  return out;
}

nlohmann::json to_json(const CollectiveFigure& c) {
  return {{"name", c.name},
          {"primitive", c.primitive},
          {"bytes", c.bytes},
          {"ranks", c.ranks},
          {"start_us", us_from_ps(c.start_ps)},
          {"end_us", us_from_ps(c.end_ps)},
          {"time_us", us_from_ps(c.time_ps)},
          {"time_ps", c.time_ps},
          {"algbw_gbps", c.algbw_gbps},
          {"busbw_gbps", c.busbw_gbps},
          {"algorithm", c.algorithm},
          {"protocol", c.protocol},
          {"channels", c.channels},
          {"communicator", c.communicator}};
}

nlohmann::json to_json(const StepFigures& s) {
  auto pass = [](const PassFigures& p) {
    return nlohmann::json{{"latency_us", us_from_ps(p.latency_ps)},
                          {"latency_ps", p.latency_ps},
                          {"compute_only_us", us_from_ps(p.compute_only_ps)},
                          {"compute_only_ps", p.compute_only_ps},
                          {"exposed_comm_us", us_from_ps(p.exposed_comm_ps)},
                          {"exposed_comm_ps", p.exposed_comm_ps},
                          {"comm_us", us_from_ps(p.comm_ps)},
                          {"comm_ps", p.comm_ps},
                          {"overlap_efficiency", p.overlap_efficiency}};
  };
  return {{"pass", s.pass},
          {"forward", pass(s.forward)},
          {"backward", pass(s.backward)},
          {"exposed_tp_us", us_from_ps(s.exposed_tp_ps)},
          {"exposed_tp_ps", s.exposed_tp_ps},
          {"exposed_dp_us", us_from_ps(s.exposed_dp_ps)},
          {"exposed_dp_ps", s.exposed_dp_ps},
          {"model_flops", s.model_flops},
          {"mfu", s.mfu},
          {"tokens_per_s", s.tokens_per_s}};
}

nlohmann::json to_json(const SchemeResult& r) {
  nlohmann::json j;
  // Each time twice: `_us` for people, `_ps` exact for programs (the json object sorts its keys).
  auto put_time = [&j](const std::string& name, Ps t) {
    j[name + "_us"] = us_from_ps(t);
    j[name + "_ps"] = t;
  };
  j["scheme"] = r.scheme;
  j["params"] = r.params;
  put_time("latency", r.latency_ps);
  put_time("compute_only", r.compute_only_ps);
  put_time("comm", r.comm_ps);
  put_time("exposed_comm", r.exposed_comm_ps);
  put_time("bound", r.bound_ps);
  j["scheme_comm_us"] = us_from_ps(r.scheme_comm_ps);
  j["exposed_comm_definition"] = "latency - compute-only latency (communication ops taking zero time)";
  j["overlap_efficiency"] = r.overlap_efficiency;
  j["overlap_efficiency_raw"] = r.overlap_efficiency_raw;
  j["speedup_vs_no_overlap"] = r.speedup_vs_no_overlap;
  j["pct_of_bound"] = r.pct_of_bound;
  j["sms_lost_to_comm"] = r.sms_lost_to_comm;
  j["reason"] = r.reason;
  nlohmann::json util = nlohmann::json::array();
  for (const ResourceUtilization& u : r.utilization)
    util.push_back({{"rank", u.rank}, {"sm", u.sm}, {"copy_engine", u.copy_engine}});
  j["utilization"] = util;
  j["events"] = r.events;
  if (r.composed_from_layers > 0) j["composed_from_layers"] = r.composed_from_layers;
  nlohmann::json colls = nlohmann::json::array();
  for (const CollectiveFigure& c : r.collectives) colls.push_back(to_json(c));
  j["collectives"] = colls;
  if (r.step.present) j["step"] = to_json(r.step);
  return j;
}

}  // namespace overlap::sim
