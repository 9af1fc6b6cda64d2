// `overlap-sim trace`: overlap measured in users' own profiles (tools/cmd_trace.hpp).
#include "tools/cmd_trace.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "calibrate/traces/attention_pricing.hpp"
#include "calibrate/traces/gemm_pricing.hpp"
#include "calibrate/traces/profile_fit.hpp"
#include "calibrate/traces/trace_analysis.hpp"
#include "cost_model/bounded_message.hpp"
#include "cost_model/collective_model.hpp"
#include "cost_model/collective_primitive.hpp"
#include "cost_model/gemm_model.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/prediction_error.hpp"
#include "cost_model/profile_loader.hpp"
#include "cost_model/statistics.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "cost_model/atomic_file.hpp"
#include "tools/command_errors.hpp"
#include "tools/input_paths.hpp"
#include "tools/trace_flags.hpp"
#include "tools/trace_replay_report.hpp"

namespace overlap::tools {

using traces::CommGroup;
using traces::GemmGroup;
using traces::OverlapFigures;
using traces::RankReport;

Command add_trace_command(CLI::App& app) {
  const auto options = std::make_shared<TraceOptions>();
  TraceOptions& o = *options;
  CLI::App* cmd = app.add_subcommand(
      "trace", "Measure compute, communication and unoverlapped communication in profiles of a real job (PyTorch "
               "profiler JSON, plain or .gz, or nsys SQLite exports; one file per rank)");
  cmd->add_option("files", o.files, "Trace files, one per rank")->required();
  cmd->add_option("--format", o.format, "Output format")->check(CLI::IsMember({"table", "json", "csv"}));
  cmd->add_option("-o,--output", o.output, "Write the report to FILE (atomically) instead of stdout");
  cmd->add_option("--step-prefix", o.step_prefix,
                  "CPU annotations (Kineto) or NVTX ranges (nsys) whose name starts with this mark steps");
  cmd->add_option("--hardware", o.hardware,
                  "Predict every GEMM and collective found with this profile (built-in name or YAML path) and "
                  "print measured vs predicted");
  cmd->add_flag("--kernels", o.kernels,
               "List every kernel group instead (name, class, shape or message, count, total/mean/min/max time)");
  cmd->add_option("--comm-kernel", o.comm_kernels,
                  "Kernels whose signature matches this regular expression are communication (repeatable; before "
                  "the built-in families)");
  cmd->add_option("--compute-kernel", o.compute_kernels,
                  "Kernels whose signature matches this regular expression are compute (repeatable; after "
                  "--comm-kernel, before the built-in families)");
  cmd->add_flag("--strict", o.strict,
               "Refuse a trace with an event that cannot be read as written (a missing, negative or non-numeric "
               "time, a row that ends before it starts) instead of skipping and counting it");
  cmd->add_flag("--replay", o.replay,
               "Replay the kernels' task graph (streams, launches, stream waits, collectives across ranks) and print "
               "measured vs replayed span per rank and busy time per stream");
  cmd->add_option("--what-if", o.what_ifs,
                  "With --replay: replay again with KEY=VALUE (kind.<kind>.speed=F for a kernel kind, comm.speed=F for "
                  "communication kernels, link.<class>.gbps=B for a link of the --hardware profile, comm.sms=N for the SMs each "
                  "communication kernel holds, swap.all_gather=SCHEME for an all-gather and the GEMM reading it; "
                  "repeatable)");
  cmd->add_option("--replay-trace", o.replay_trace,
                  "With --replay: write the replay beside the original as a Perfetto / Chrome trace to FILE (atomically)");
  cmd->footer("\nExamples:\n"
              "  overlap-sim trace rank0.pt.trace.json.gz rank1.pt.trace.json.gz\n"
              "  overlap-sim trace traces/*.json.gz --kernels --format csv -o kernels.csv\n"
              "  overlap-sim trace traces/*.json.gz --hardware h100-sxm-8x-nvswitch\n"
              "  overlap-sim trace report.sqlite --format json -o overlap.json\n"
              "  overlap-sim trace traces/*.json.gz --comm-kernel 'my_alltoall_kernel'\n"
              "  overlap-sim trace traces/*.json.gz --replay --what-if kind.gemm.speed=1.5 --replay-trace replay.json\n");
  return {cmd, [options, cmd](std::ostream& out, std::ostream& err) {
            check_output_flags({{"-o", &options->output, cmd->get_option("--output")}});
            cmd_trace(*options, out, err);
            return kExitOk;
          }};
}

namespace {

// The report as JSON text. File names and kernel or NVTX names are the trace's bytes, which need
// not be UTF-8 (a path, a name an nsys export stores as it got it): invalid bytes are written as
// U+FFFD rather than failing the dump (RFC 8259 section 8.1 asks for UTF-8).
std::string dump_json(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string us(std::int64_t ns) {
  const char* sign = ns < 0 ? "-" : "";
  const std::int64_t a = ns < 0 ? -ns : ns;
  return fmt::format("{}{}.{:03}", sign, a / 1000, a % 1000);
}

std::string pct(const OverlapFigures& f) {
  const auto o = f.overlap();
  return o ? fmt::format("{:.2f}", 100.0 * *o) : "-";
}

std::string clip(const std::string& s, std::size_t width) {
  return s.size() <= width ? s : s.substr(0, width - 3) + "...";
}

std::string shape_text(const GemmGroup& g) {
  if (!g.shape) return "shape unknown";
  const auto& s = *g.shape;
  return s.batch > 1 ? fmt::format("{}x({}x{}x{})", s.batch, s.m, s.n, s.k) : fmt::format("{}x{}x{}", s.m, s.n, s.k);
}

nlohmann::json figures_json(const OverlapFigures& f) {
  nlohmann::json j;
  j["kernels"] = f.kernels;
  j["compute_ns"] = f.compute_ns;
  j["communication_ns"] = f.comm_ns;
  j["unoverlapped_communication_ns"] = f.exposed_ns;
  // The key this figure had before it was named apart from run's exposed comm (the trace notebook
  // and older scripts read it): the same number.
  j["exposed_communication_ns"] = f.exposed_ns;
  j["memory_ns"] = f.memory_ns;
  j["span_ns"] = f.span_ns;
  const auto o = f.overlap();
  j["overlap"] = o ? nlohmann::json(*o) : nlohmann::json(nullptr);
  return j;
}

// One kernel group (same kernel, same shape or message) measured and, where the model can, predicted.
struct Prediction {
  int rank = 0;
  std::string cls;  // "gemm" or "collective"
  std::string kernel, what;
  std::int64_t count = 0;
  std::int64_t measured_ns = 0;          // mean
  std::optional<double> predicted_ns;    // nullopt: not predicted (see `why`)
  std::string why;
  // Collectives: "transfer" (matched across ranks: the wait for peers left out) or "whole kernel".
  std::string part;
  std::optional<double> error() const {  // (predicted - measured) / measured
    if (!predicted_ns || measured_ns <= 0) return std::nullopt;
    return relative_error(*predicted_ns, static_cast<double>(measured_ns));
  }
};

struct ClassSummary {
  std::string cls;
  std::int64_t groups = 0, predicted = 0;
  std::optional<double> median_abs_error, max_abs_error;
  std::int64_t unshaped_kernels = 0;  // attention / memory-bound / grouped GEMM kernels with no op shapes
};

struct Run {
  std::vector<RankReport> ranks;
  std::optional<int> world_size;
  traces::CollectiveSplit split;
  OverlapFigures overall;
  std::size_t files = 0;
  std::string hardware;  // profile name when predicting
  std::vector<Prediction> predictions;
  std::vector<ClassSummary> summaries;
};

// A group's row before the model speaks: what it is and its measured mean time per call.
template <class Group>
Prediction measured(int rank, const char* cls, const Group& g) {
  Prediction p;
  p.rank = rank;
  p.cls = cls;
  p.kernel = g.kernel;
  p.count = g.count;
  p.measured_ns = g.total_ns / g.count;
  return p;
}

// --hardware: a built-in profile's name or a YAML path.
HardwareProfile load_hardware(const std::string& name) {
  const bool path = std::filesystem::path(name).extension() == ".yaml" || name.find('/') != std::string::npos;
  return load_profile(path ? resolve_input_path(name) : name, default_hardware_dir());
}

void predict(const TraceOptions& o, Run& run) {
  const HardwareProfile hw = load_hardware(o.hardware);
  run.hardware = hw.name;
  for (const RankReport& r : run.ranks) {
    for (const GemmGroup& g : r.gemms) {
      Prediction p = measured(r.rank, "gemm", g);
      p.what = shape_text(g);
      if (!g.shape) {
        p.why = "shape unknown";
      } else {
        // One launch as the library ran it: TF32 where the kernel says, batch x tiles, split-K.
        const traces::GemmPrice price = traces::price_gemm(hw, *g.shape, g.kernel);
        p.predicted_ns = price.ns;
        p.why = price.why;
        if (price.math == traces::GemmMath::tf32) p.what += " tf32";
        if (price.ns && price.launch.split_k > 1) p.what += fmt::format(" split-K {}", price.launch.split_k);
      }
      run.predictions.push_back(p);
    }
    for (const CommGroup& g : r.comms) {
      Prediction p = measured(r.rank, "collective", g);
      // Only the transfer is the model's to predict (calibrate/traces/collective_wait.hpp).
      const bool split = g.matched == g.count && g.count > 0;
      p.part = split ? "transfer" : "whole kernel";
      if (split) p.measured_ns = g.transfer_ns / g.matched;
      p.what = fmt::format("{} {} B x{}", g.collective, g.bytes ? std::to_string(*g.bytes) : "?",
                           g.group_size ? std::to_string(*g.group_size) : "?");
      const auto prim = parse_collective_primitive(g.collective);
      if (!prim) {
        p.why = "collective '" + g.collective + "' not modelled";
      } else if (!g.bytes || !g.group_size) {
        p.why = "size or group unknown";
      } else if (*g.group_size < 2 || *g.group_size > hw.fabric.num_gpus) {
        p.why = fmt::format("group of {} outside the profile's 2..{} GPUs", *g.group_size, hw.fabric.num_gpus);
      } else {
        const int n = static_cast<int>(*g.group_size);
        const Ps ps = collective_time_ps(hw, *prim, *g.bytes, n, sim::collective_link_class(hw, n));
        p.predicted_ns = static_cast<double>(ps) / 1000.0;
      }
      run.predictions.push_back(p);
    }
    for (const traces::ShapedGroup& g : r.shaped) {
      Prediction p = measured(r.rank, g.kind.c_str(), g);
      p.what = traces::describe(g);
      if (g.shape.batch > 0) {
        const traces::AttentionShape a{g.shape.batch,  g.shape.heads,  g.shape.seq_q,
                                       g.shape.seq_kv, g.shape.head_dim, g.shape.causal,
                                       g.shape.backward ? traces::AttentionPass::backward : traces::AttentionPass::forward,
                                       g.dtype};
        if (const auto ps = traces::attention_time_ps(hw, a, g.kernel)) p.predicted_ns = static_cast<double>(*ps) / 1000.0;
        else p.why = "dtype '" + g.dtype + "' has no tensor rate in the profile";
      } else if (hw.gpu.hbm_bandwidth_gbps > 0) {
        p.predicted_ns = static_cast<double>(streaming_kernel_ps(hw, g.shape.bytes)) / 1000.0;
      } else {
        p.why = "the profile has no HBM bandwidth";
      }
      run.predictions.push_back(p);
    }
  }
  for (const char* cls : {"gemm", "collective", "attention", "memory_bound", "grouped_gemm"}) {
    ClassSummary s;
    s.cls = cls;
    std::vector<double> errors;
    for (const Prediction& p : run.predictions) {
      if (p.cls != cls) continue;
      ++s.groups;
      if (const auto e = p.error()) errors.push_back(std::abs(*e));
    }
    s.predicted = static_cast<std::int64_t>(errors.size());
    if (s.groups == 0 && s.cls != "gemm" && s.cls != "collective") {
      bool any = false;  // a kind the trace ran: listed even when none of its kernels had shapes
      for (const RankReport& r : run.ranks)
        for (const traces::KernelGroup& k : r.kernels) any = any || k.kind == s.cls;
      if (!any) continue;
    }
    if (!errors.empty()) {
      const AbsErrorFigures f = abs_error_figures(errors);
      s.median_abs_error = f.median;
      s.max_abs_error = f.max;
    }
    run.summaries.push_back(s);
  }
  // Kernels of these kinds without their op's shapes (older layouts, ops recorded without
  // record_shapes, grouped GEMMs whose ops name no problem sizes): counted beside the summary.
  for (ClassSummary& s : run.summaries) {
    std::int64_t all = 0, shaped = 0;
    for (const RankReport& r : run.ranks) {
      for (const traces::KernelGroup& k : r.kernels)
        if (k.kind == s.cls && s.cls != "gemm" && s.cls != "collective") all += k.count;
      for (const traces::ShapedGroup& g : r.shaped)
        if (g.kind == s.cls) shaped += g.count;
    }
    s.unshaped_kernels = all - shaped;
  }
}

// Named apart from `run`'s exposed comm (latency - compute-only latency, a counterfactual the
// simulator can rerun): a trace has no compute-only run, so this is HolisticTraceAnalysis' interval
// measure. A measured NCCL kernel starts when its rank launches it and ends when every peer has
// joined, so its time includes waiting for the slowest peer (nccl-tests times a collective once every
// member joined for the same reason).
constexpr const char* kDefinition =
    "unoverlapped communication = communication-kernel time during which no compute kernel runs on the same "
    "GPU (union of communication intervals minus its intersection with the union of compute intervals, per "
    "GPU; HolisticTraceAnalysis' comm/comp overlap); overlap = 1 - unoverlapped / communication. A measured "
    "NCCL kernel includes waiting for its peers to arrive. Not run's exposed comm (latency - compute-only "
    "latency)";

}  // namespace

TraceReports load_trace_reports(const std::vector<std::string>& files, const std::string& step_prefix, std::ostream& err,
                                const traces::KernelClassifier& kernels, bool strict, bool keep_traces) {
  TraceReports run;
  std::vector<traces::RankTrace> loaded;
  for (const std::string& f : files) {
    note_input_file(f, "trace");  // the trace readers open their files themselves (gzip, SQLite)
    for (traces::RankTrace& t : traces::read_traces(f, step_prefix, kernels, strict)) {
      RankReport r = traces::analyze(t);
      r.rank_from_trace = t.rank.has_value();
      r.rank = t.rank.value_or(0);
      r.part = t.part;
      // The trace's activities are not needed after analyze() unless replayed: drop them before the next file.
      if (!keep_traces) {
        t.activities = {};
        t.launches = {};
        t.launch_threads = {};
        t.syncs = {};
      }
      loaded.push_back(std::move(t));
      run.ranks.push_back(std::move(r));
    }
  }
  // One run's files: every file names its rank or none does; one world_size; each rank once.
  const traces::RankTrace* with = nullptr;
  const traces::RankTrace* without = nullptr;
  for (const auto& t : loaded) (t.rank ? with : without) = &t;
  if (with && without)
    throw InputError(without->file, 0, "distributedInfo.rank",
                     fmt::format("missing, while {} names its rank: give the traces of one run", with->file));
  const traces::RankTrace* ws_file = nullptr;
  for (const auto& t : loaded) {
    if (!t.world_size) continue;
    if (!ws_file) {
      ws_file = &t;
      run.world_size = t.world_size;
    } else if (*t.world_size != *run.world_size) {
      throw InputError(t.file, 0, "distributedInfo.world_size",
                       fmt::format("{} differs from {}'s {}: the files come from different runs", *t.world_size,
                                   ws_file->file, *run.world_size));
    }
  }
  if (!with) {
    for (std::size_t i = 0; i < run.ranks.size(); ++i) run.ranks[i].rank = static_cast<int>(i);
  } else {
    std::map<int, std::string> seen;
    for (const auto& t : loaded) {
      if (run.world_size && *t.rank >= *run.world_size)
        throw InputError(t.file, 0, "distributedInfo.rank",
                         fmt::format("rank {} is outside 0..{} (world_size {})", *t.rank, *run.world_size - 1, *run.world_size));
      const auto [it, fresh] = seen.emplace(*t.rank, t.file);
      if (!fresh)
        throw InputError(t.file, 0, "distributedInfo.rank",
                         fmt::format("rank {} is also {}'s: one file per rank", *t.rank, it->second));
    }
    if (run.world_size && static_cast<int>(seen.size()) < *run.world_size) {
      // The missing ranks as ranges ("1-7, 9"), at most kListedItems of them: a world_size of millions
      // with one file given is one range, not millions of numbers (cost_model/bounded_message.hpp).
      std::vector<std::string> missing;
      const auto gap = [&](int lo, int hi) {
        if (lo < hi) missing.push_back(fmt::format("{}-{}", lo, hi));
        else if (lo == hi) missing.push_back(std::to_string(lo));
      };
      int next = 0;
      for (const auto& [r, file] : seen) {
        gap(next, r - 1);
        next = r + 1;
      }
      gap(next, *run.world_size - 1);
      err << fmt::format("overlap-sim: warning: no trace of rank(s) {} (world_size {}): the overall figures cover the "
                         "{} rank(s) given\n",
                         bounded_list(missing), *run.world_size, seen.size());
    }
    std::vector<std::size_t> order(run.ranks.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return run.ranks[a].rank < run.ranks[b].rank; });
    std::vector<RankReport> ranks;
    std::vector<traces::RankTrace> sorted;
    for (std::size_t i : order) {
      ranks.push_back(std::move(run.ranks[i]));
      sorted.push_back(std::move(loaded[i]));
    }
    run.ranks = std::move(ranks);
    loaded = std::move(sorted);
  }
  std::int64_t skipped = 0;
  std::size_t files_skipping = 0;
  for (const RankReport& r : run.ranks) {
    std::int64_t n = 0;
    for (const auto& [why, count] : r.skipped) n += count;
    skipped += n;
    files_skipping += n > 0;
  }
  if (skipped > 0)
    err << fmt::format("overlap-sim: warning: {} event(s) in {} trace(s) could not be read as written and were left out "
                       "(listed under \"Skipped events\"); --strict refuses such a trace\n",
                       skipped, files_skipping);
  run.split = traces::split_collective_waits(run.ranks);
  if (keep_traces) run.traces = std::move(loaded);
  return run;
}

namespace {

// --comm-kernel / --compute-kernel, each checked with its flag's name.
traces::KernelClassifier checked_classifier(const TraceOptions& o) {
  for (const auto& [flag, patterns] : {std::pair{"--comm-kernel", &o.comm_kernels}, std::pair{"--compute-kernel", &o.compute_kernels}}) {
    try {
      kernel_classifier(*patterns, {});
    } catch (const std::invalid_argument& e) {
      throw UsageError(fmt::format("trace: {}: {}", flag, e.what()));
    }
  }
  return kernel_classifier(o.comm_kernels, o.compute_kernels);
}

Run load(const TraceOptions& o, std::ostream& err) {
  const traces::KernelClassifier kernels = checked_classifier(o);
  TraceReports loaded = load_trace_reports(o.files, o.step_prefix, err, kernels, o.strict);
  Run run;
  run.ranks = std::move(loaded.ranks);
  run.world_size = loaded.world_size;
  run.split = std::move(loaded.split);
  run.files = o.files.size();
  for (const RankReport& r : run.ranks) run.overall += r.figures;
  return run;
}

// Collective kernels across ranks: wait for the last peer vs transfer (calibrate/traces/collective_wait.hpp);
// with one rank, or kernels not matched, a line saying that their times include the wait.
void write_waits(const Run& run, std::ostream& out) {
  std::int64_t unmatched = 0;
  for (const RankReport& r : run.ranks)
    for (const CommGroup& g : r.comms)
      if (g.matched < g.count && g.library != "peer_copy") unmatched += g.count - g.matched;
  if (run.split.matched > 0) {
    std::string offsets;
    for (const RankReport& r : run.ranks)
      if (r.clock_offset_ns) offsets += fmt::format("{}rank {} {}", offsets.empty() ? "" : ", ", r.rank, us(*r.clock_offset_ns));
    const bool one_file = std::all_of(run.ranks.begin(), run.ranks.end(),
                                      [&](const RankReport& r) { return r.file == run.ranks.front().file; });
    out << fmt::format("\nCollectives across ranks ({} matched; wait = from the kernel's start to the last rank's start, "
                       "transfer = after it; {})\n",
                       run.split.matched,
                       one_file ? "one export, one clock"
                                : fmt::format("clock offsets from rank {}, by the collectives' ends: {}", run.ranks.front().rank, offsets));
    out << fmt::format("{:>5}  {:<48}  {:<14}  {:>14}  {:>7}  {:>14}  {:>14}  {:>14}\n", "rank", "kernel", "collective", "bytes",
                       "matched", "wait_us", "transfer_us", "mean_xfer_us");
    for (const RankReport& r : run.ranks)
      for (const CommGroup& g : r.comms)
        if (g.matched > 0)
          out << fmt::format("{:>5}  {:<48}  {:<14}  {:>14}  {:>7}  {:>14}  {:>14}  {:>14}\n", r.rank, clip(g.kernel, 48),
                             g.collective.empty() ? "?" : clip(g.collective, 14),
                             g.bytes ? std::to_string(*g.bytes) : "size unknown", g.matched, us(g.wait_ns),
                             us(g.transfer_ns), us(g.transfer_ns / g.matched));
  }
  for (const std::string& note : run.split.notes) out << "note: " << note << "\n";
  if (unmatched > 0)
    out << fmt::format("{}Collective kernel times include waiting for the other ranks to arrive: {}\n",
                       run.split.matched > 0 ? "" : "\n",
                       run.ranks.size() < 2 ? "one rank's trace cannot tell the wait from the transfer (give every rank's trace)"
                                            : fmt::format("{} kernel(s) not matched across ranks", unmatched));
}

// Kernels of no known family, longest total first: what --comm-kernel / --compute-kernel can name.
void write_unknown(const Run& run, std::ostream& out) {
  std::vector<std::pair<int, const traces::KernelGroup*>> unknown;
  for (const RankReport& r : run.ranks)
    for (const traces::KernelGroup& k : r.kernels)
      if (k.kind == "unknown") unknown.emplace_back(r.rank, &k);
  if (unknown.empty()) return;
  std::stable_sort(unknown.begin(), unknown.end(), [](const auto& a, const auto& b) { return a.second->total_ns > b.second->total_ns; });
  out << "\nUnknown kernels (no family by name; counted as compute; --comm-kernel / --compute-kernel REGEX name them)\n";
  out << fmt::format("{:>5}  {:<72}  {:>6}  {:>14}  {:>12}\n", "rank", "kernel", "count", "total_us", "mean_us");
  for (const auto& [rank, k] : unknown)
    out << fmt::format("{:>5}  {:<72}  {:>6}  {:>14}  {:>12}\n", rank, clip(k->kernel, 72), k->count, us(k->total_ns),
                       us(k->total_ns / k->count));
}

// Events the readers left out, by rank and reason (none: no section).
void write_skipped(const Run& run, std::ostream& out) {
  const bool any = std::any_of(run.ranks.begin(), run.ranks.end(), [](const RankReport& r) { return !r.skipped.empty(); });
  if (!any) return;
  out << "\nSkipped events (not readable as written, left out of every figure; --strict refuses the file)\n";
  out << fmt::format("{:>5}  {:<56}  {:>10}\n", "rank", "event: reason", "count");
  for (const RankReport& r : run.ranks)
    for (const auto& [why, n] : r.skipped) out << fmt::format("{:>5}  {:<56}  {:>10}\n", r.rank, why, n);
}

void write_figures_header(std::ostream& out, const char* what) {
  out << fmt::format("{:>5}  {:<40}  {:>8}  {:>14}  {:>14}  {:>15}  {:>9}  {:>12}  {:>14}\n", "rank", what, "kernels",
                     "compute_us", "comm_us", "unoverlapped_us", "overlap_%", "memory_us", "span_us");
}

void write_figures_row(std::ostream& out, const std::string& rank, const std::string& name, const OverlapFigures& f) {
  out << fmt::format("{:>5}  {:<40}  {:>8}  {:>14}  {:>14}  {:>15}  {:>9}  {:>12}  {:>14}\n", rank, clip(name, 40),
                     f.kernels, us(f.compute_ns), us(f.comm_ns), us(f.exposed_ns), pct(f), us(f.memory_ns), us(f.span_ns));
}

// The heading, then the overlap figures per file and overall, then per step where steps were found.
void write_overlap(const Run& run, std::ostream& out) {
  out << fmt::format("# overlap-sim trace: {} rank(s) from {} file(s){}; ranks {}\n", run.ranks.size(), run.files,
                     run.world_size ? fmt::format(", world_size {}", *run.world_size) : "",
                     run.ranks.empty() || run.ranks.front().rank_from_trace ? "from distributedInfo"
                     : std::any_of(run.ranks.begin(), run.ranks.end(), [](const RankReport& r) { return !r.part.empty(); })
                         ? "by the order of the files, an export's processes by the GPU each used first"
                         : "by the order of the files");
  out << "# " << kDefinition << "\n";
  out << "# times in microseconds\n\n";
  write_figures_header(out, "file");
  for (const RankReport& r : run.ranks)
    write_figures_row(out, std::to_string(r.rank),
                      r.file.substr(r.file.find_last_of('/') + 1) + (r.part.empty() ? "" : " [" + r.part + "]"), r.figures);
  write_figures_row(out, "all", "", run.overall);

  bool any_steps = false;
  for (const RankReport& r : run.ranks) any_steps = any_steps || !r.steps.empty();
  if (any_steps) {
    out << "\nSteps (kernels by the step that launched them)\n";
    write_figures_header(out, "step");
    for (const RankReport& r : run.ranks)
      for (const auto& s : r.steps) write_figures_row(out, std::to_string(r.rank), s.name, s.figures);
  }
}

void write_gemm_kernels(const Run& run, std::ostream& out) {
  out << "\nGEMM kernels (shape MxNxK from the launching op's Input Dims)\n";
  out << fmt::format("{:>5}  {:<48}  {:<16}  {:<20}  {:<13}  {:>6}  {:>14}  {:>12}\n", "rank", "kernel", "op", "shape",
                     "dtype", "count", "total_us", "mean_us");
  for (const RankReport& r : run.ranks)
    for (const GemmGroup& g : r.gemms)
      out << fmt::format("{:>5}  {:<48}  {:<16}  {:<20}  {:<13}  {:>6}  {:>14}  {:>12}\n", r.rank, clip(g.kernel, 48),
                         g.op.empty() ? "-" : clip(g.op, 16), shape_text(g), g.shape && !g.shape->dtype.empty() ? g.shape->dtype : "-",
                         g.count, us(g.total_ns), us(g.total_ns / g.count));
}

void write_comm_kernels(const Run& run, std::ostream& out) {
  const bool only_nccl = std::all_of(run.ranks.begin(), run.ranks.end(), [](const RankReport& r) {
    return std::all_of(r.comms.begin(), r.comms.end(), [](const CommGroup& g) { return g.library == "nccl"; });
  });
  out << (only_nccl ? "\nNCCL kernels (message size = max(in, out) elements x dtype, from the collective's args)\n"
                    : "\nCommunication kernels (NCCL's and other libraries'; message size = max(in, out) elements x dtype, "
                      "from the collective's args)\n");
  out << fmt::format("{:>5}  {:<48}  {:<14}  {:>14}  {:>5}  {:<9}  {:>6}  {:>14}  {:>12}\n", "rank", "kernel",
                     "collective", "bytes", "group", "dtype", "count", "total_us", "mean_us");
  for (const RankReport& r : run.ranks)
    for (const CommGroup& g : r.comms)
      out << fmt::format("{:>5}  {:<48}  {:<14}  {:>14}  {:>5}  {:<9}  {:>6}  {:>14}  {:>12}\n", r.rank, clip(g.kernel, 48),
                         g.collective.empty() ? "?" : clip(g.collective, 14), g.bytes ? std::to_string(*g.bytes) : "size unknown",
                         g.group_size ? std::to_string(*g.group_size) : "-", g.dtype.empty() ? "-" : g.dtype, g.count,
                         us(g.total_ns), us(g.total_ns / g.count));
}

// GEMM and NCCL kernels counted, with those whose shape or size the trace does not give.
void write_kernel_counts(const Run& run, std::ostream& out) {
  std::int64_t gemm = 0, gemm_unknown = 0, comm = 0, comm_unknown = 0;
  std::map<std::string, std::int64_t> other_libraries;
  for (const RankReport& r : run.ranks) {
    gemm += r.gemm_kernels;
    gemm_unknown += r.gemm_shape_unknown;
    for (const CommGroup& g : r.comms) {
      if (g.library != "nccl") {
        other_libraries[g.library] += g.count;
        continue;
      }
      comm += g.count;
      if (!g.bytes) comm_unknown += g.count;
    }
  }
  std::string others;
  for (const auto& [library, n] : other_libraries) others += fmt::format("{}{} {}", others.empty() ? "" : ", ", library, n);
  out << fmt::format("\nGEMM kernels: {} ({} shape unknown); NCCL kernels: {} ({} size unknown){}\n", gemm, gemm_unknown,
                     comm, comm_unknown, others.empty() ? "" : "; other communication kernels: " + others);
}

// With --hardware: each kernel group's measured time beside the model's, then a summary per class.
void write_predictions(const Run& run, std::ostream& out) {
  out << fmt::format("\nMeasured vs predicted on {} (measured: mean kernel time in the trace, beside other kernels; "
                     "predicted: the cost model, idle GPU; error = (predicted - measured) / measured)\n",
                     run.hardware);
  out << fmt::format("{:>5}  {:<12}  {:<48}  {:<44}  {:>6}  {:>12}  {:>12}  {:>8}\n", "rank", "class", "kernel", "what",
                     "count", "measured_us", "predicted_us", "error_%");
  for (const Prediction& p : run.predictions) {
    const auto e = p.error();
    out << fmt::format("{:>5}  {:<12}  {:<48}  {:<44}  {:>6}  {:>12}  {:>12}  {:>8}\n", p.rank, p.cls, clip(p.kernel, 48),
                       clip(p.what, 44), p.count, us(p.measured_ns),
                       p.predicted_ns ? fmt::format("{:.3f}", *p.predicted_ns / 1000.0) : "-",
                       e ? fmt::format("{:+.1f}", 100.0 * *e) : p.why);
  }
  for (const ClassSummary& s : run.summaries)
    out << fmt::format("{}: {} of {} kernel groups predicted; median |error| {}, max |error| {}{}\n", s.cls, s.predicted,
                       s.groups, s.median_abs_error ? fmt::format("{:.1f} %", 100.0 * *s.median_abs_error) : "-",
                       s.max_abs_error ? fmt::format("{:.1f} %", 100.0 * *s.max_abs_error) : "-",
                       s.unshaped_kernels > 0
                           ? fmt::format("; {} kernel(s) not priced: their op recorded no shapes the model reads",
                                         s.unshaped_kernels)
                           : "");
  std::int64_t transfer = 0, whole = 0;
  for (const Prediction& p : run.predictions) (p.part == "transfer" ? transfer : whole) += p.cls == "collective";
  if (transfer + whole > 0)
    out << fmt::format("collective: measured = {}\n",
                       whole == 0 ? "the transfer after the last rank arrived (matched across ranks)"
                       : transfer == 0
                           ? "the whole kernel, which includes waiting for the other ranks to arrive (" +
                                 std::string(run.ranks.size() < 2 ? "one rank's trace" : "not matched across ranks") + ")"
                           : fmt::format("the transfer for {} group(s) matched across ranks; the whole kernel, "
                                         "including waiting for peers, for the {} others",
                                         transfer, whole));
}

void write_table(const Run& run, std::ostream& out) {
  write_overlap(run, out);
  write_gemm_kernels(run, out);
  write_comm_kernels(run, out);
  write_waits(run, out);
  write_unknown(run, out);
  write_skipped(run, out);
  write_kernel_counts(run, out);
  if (!run.hardware.empty()) write_predictions(run, out);
}

void write_json(const Run& run, std::ostream& out) {
  nlohmann::json j;
  j["tool"] = "overlap-sim trace";
  j["definition"] = kDefinition;
  j["world_size"] = run.world_size ? nlohmann::json(*run.world_size) : nlohmann::json(nullptr);
  j["ranks"] = nlohmann::json::array();
  for (const RankReport& r : run.ranks) {
    nlohmann::json jr;
    jr["rank"] = r.rank;
    jr["rank_from_trace"] = r.rank_from_trace;
    jr["file"] = r.file;
    jr["format"] = r.format;
    jr["part"] = r.part;
    jr["figures"] = figures_json(r.figures);
    jr["steps"] = nlohmann::json::array();
    for (const auto& s : r.steps) jr["steps"].push_back({{"name", s.name}, {"figures", figures_json(s.figures)}});
    jr["clock_offset_ns"] = r.clock_offset_ns ? nlohmann::json(*r.clock_offset_ns) : nlohmann::json(nullptr);
    jr["gemm_kernels"] = r.gemm_kernels;
    jr["gemm_shape_unknown"] = r.gemm_shape_unknown;
    jr["comm_kernels"] = r.comm_kernels;
    jr["comm_size_unknown"] = r.comm_size_unknown;
    jr["skipped_events"] = nlohmann::json::object();
    for (const auto& [why, n] : r.skipped) jr["skipped_events"][why] = n;
    jr["gemms"] = nlohmann::json::array();
    for (const GemmGroup& g : r.gemms) {
      nlohmann::json jg{{"kernel", g.kernel}, {"op", g.op}, {"count", g.count}, {"total_ns", g.total_ns}};
      if (g.shape) {
        jg["shape"] = {{"batch", g.shape->batch}, {"m", g.shape->m}, {"n", g.shape->n}, {"k", g.shape->k},
                       {"dtype", g.shape->dtype}};
      } else {
        jg["shape"] = nullptr;
      }
      jr["gemms"].push_back(jg);
    }
    jr["comms"] = nlohmann::json::array();
    for (const CommGroup& g : r.comms) {
      const auto opt = [](const std::optional<std::int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
      nlohmann::json jc{{"kernel", g.kernel}, {"collective", g.collective}, {"library", g.library},
                        {"nelems", opt(g.nelems)}, {"bytes", opt(g.bytes)}, {"group_size", opt(g.group_size)},
                        {"dtype", g.dtype}, {"process_group", g.process_group}, {"count", g.count},
                        {"total_ns", g.total_ns}, {"matched", g.matched}};
      jc["wait_ns"] = g.matched > 0 ? nlohmann::json(g.wait_ns) : nlohmann::json(nullptr);
      jc["transfer_ns"] = g.matched > 0 ? nlohmann::json(g.transfer_ns) : nlohmann::json(nullptr);
      jr["comms"].push_back(jc);
    }
    j["ranks"].push_back(jr);
  }
  j["overall"] = figures_json(run.overall);
  j["collectives_matched"] = run.split.matched;
  j["collective_notes"] = run.split.notes;
  if (!run.hardware.empty()) {
    nlohmann::json jp;
    jp["hardware"] = run.hardware;
    jp["rows"] = nlohmann::json::array();
    for (const Prediction& p : run.predictions) {
      const auto e = p.error();
      jp["rows"].push_back({{"rank", p.rank}, {"class", p.cls}, {"kernel", p.kernel}, {"what", p.what}, {"count", p.count},
                            {"measured_ns", p.measured_ns},
                            {"predicted_ns", p.predicted_ns ? nlohmann::json(*p.predicted_ns) : nlohmann::json(nullptr)},
                            {"error", e ? nlohmann::json(*e) : nlohmann::json(nullptr)}, {"not_predicted", p.why},
                            {"measured_part", p.part}});
    }
    jp["summary"] = nlohmann::json::array();
    for (const ClassSummary& s : run.summaries) {
      const auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
      jp["summary"].push_back({{"class", s.cls}, {"groups", s.groups}, {"predicted", s.predicted},
                               {"median_abs_error", opt(s.median_abs_error)}, {"max_abs_error", opt(s.max_abs_error)},
                               {"kernels_without_shapes", s.unshaped_kernels}});
    }
    j["predictions"] = jp;
  }
  out << dump_json(j);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

void write_csv(const Run& run, std::ostream& out) {
  out << "scope,rank,file,step,kernels,compute_us,comm_us,unoverlapped_us,overlap_pct,memory_us,span_us\n";
  const auto row = [&](const char* scope, const std::string& rank, const std::string& file, const std::string& step,
                       const OverlapFigures& f) {
    const auto o = f.overlap();
    out << fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", scope, rank, csv_field(file), csv_field(step), f.kernels,
                       us(f.compute_ns), us(f.comm_ns), us(f.exposed_ns), o ? fmt::format("{:.4f}", 100.0 * *o) : "",
                       us(f.memory_ns), us(f.span_ns));
  };
  for (const RankReport& r : run.ranks) row("rank", std::to_string(r.rank), r.file, "", r.figures);
  for (const RankReport& r : run.ranks)
    for (const auto& s : r.steps) row("step", std::to_string(r.rank), r.file, s.name, s.figures);
  row("overall", "", "", "", run.overall);
}

// `--kernels`: every kernel group of every rank.

void write_kernels_table(const Run& run, std::ostream& out) {
  out << fmt::format("# overlap-sim trace --kernels: {} rank(s) from {} file(s); every kernel group (GEMMs by shape, collectives by "
                     "message, other kernels and copies by name); times in microseconds\n",
                     run.ranks.size(), run.files);
  out << fmt::format("{:>5}  {:<13}  {:<12}  {:<56}  {:<36}  {:>8}  {:>14}  {:>12}  {:>12}  {:>12}\n", "rank", "class", "kind",
                     "kernel", "what", "count", "total_us", "mean_us", "min_us", "max_us");
  for (const RankReport& r : run.ranks)
    for (const traces::KernelGroup& k : r.kernels)
      out << fmt::format("{:>5}  {:<13}  {:<12}  {:<56}  {:<36}  {:>8}  {:>14}  {:>12}  {:>12}  {:>12}\n", std::to_string(r.rank),
                         traces::class_name(k.cls), k.kind, clip(k.kernel, 56), k.what.empty() ? "-" : clip(k.what, 36),
                         k.count, us(k.total_ns), us(k.total_ns / k.count), us(k.min_ns), us(k.max_ns));
  std::int64_t groups = 0, kernels = 0, gemm_unknown = 0, comm_unknown = 0;
  for (const RankReport& r : run.ranks) {
    groups += static_cast<std::int64_t>(r.kernels.size());
    for (const auto& k : r.kernels) kernels += k.count;
    gemm_unknown += r.gemm_shape_unknown;
    for (const CommGroup& g : r.comms)
      if (g.library == "nccl" && !g.bytes) comm_unknown += g.count;
  }
  out << fmt::format("\n{} group(s) of {} kernel(s) and copies; GEMM kernels with shape unknown: {}; NCCL kernels with "
                     "size unknown: {}\n",
                     groups, kernels, gemm_unknown, comm_unknown);
}

void write_kernels_json(const Run& run, std::ostream& out) {
  nlohmann::json j;
  j["tool"] = "overlap-sim trace --kernels";
  j["world_size"] = run.world_size ? nlohmann::json(*run.world_size) : nlohmann::json(nullptr);
  j["ranks"] = nlohmann::json::array();
  for (const RankReport& r : run.ranks) {
    nlohmann::json jr{{"rank", r.rank}, {"file", r.file}, {"format", r.format}, {"part", r.part},
                      {"gemm_shape_unknown", r.gemm_shape_unknown}, {"comm_size_unknown", r.comm_size_unknown}};
    jr["skipped_events"] = nlohmann::json::object();
    for (const auto& [why, n] : r.skipped) jr["skipped_events"][why] = n;
    jr["kernels"] = nlohmann::json::array();
    for (const traces::KernelGroup& k : r.kernels)
      jr["kernels"].push_back({{"kernel", k.kernel}, {"class", traces::class_name(k.cls)}, {"kind", k.kind}, {"library", k.library},
                               {"what", k.what}, {"count", k.count}, {"total_ns", k.total_ns},
                               {"mean_ns", k.total_ns / k.count}, {"min_ns", k.min_ns}, {"max_ns", k.max_ns}});
    j["ranks"].push_back(jr);
  }
  out << dump_json(j);
}

void write_kernels_csv(const Run& run, std::ostream& out) {
  out << "rank,file,class,kind,kernel,what,count,total_us,mean_us,min_us,max_us\n";
  for (const RankReport& r : run.ranks)
    for (const traces::KernelGroup& k : r.kernels)
      out << fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", r.rank, csv_field(r.file), traces::class_name(k.cls), k.kind,
                         csv_field(k.kernel), csv_field(k.what), k.count, us(k.total_ns), us(k.total_ns / k.count),
                         us(k.min_ns), us(k.max_ns));
}

}  // namespace

namespace {

// `trace --replay`: every flag checked before a file is read, both outputs worked out before either is written.
void cmd_trace_replay(const TraceOptions& o, std::ostream& out, std::ostream& err) {
  if (o.kernels) throw UsageError("trace: --replay prints the replay; --kernels goes without it");
  std::vector<traces::WhatIf> what_ifs;
  for (const std::string& w : o.what_ifs) {
    try {
      what_ifs.push_back(traces::parse_what_if(w));
    } catch (const std::invalid_argument& e) {
      throw UsageError(fmt::format("trace: --what-if: {}", e.what()));
    }
  }
  if (!o.output.empty() && o.output == o.replay_trace) throw UsageError("trace: -o and --replay-trace name the same file");
  const traces::KernelClassifier kernels = checked_classifier(o);
  const TraceReports loaded = load_trace_reports(o.files, o.step_prefix, err, kernels, o.strict, true);
  for (const traces::WhatIf& w : what_ifs)
    if (!w.link.empty() && o.hardware.empty())
      throw UsageError(fmt::format("trace: --what-if {}: a link's bandwidth is changed from the profile's: give --hardware "
                                   "PROFILE (the trace's machine)",
                                   w.text));
  std::optional<HardwareProfile> hw;
  if (!o.hardware.empty()) hw = load_hardware(o.hardware);
  for (const traces::WhatIf& w : what_ifs)
    if (!w.link.empty() && (!hw->fabric.links.count(w.link) || hw->fabric.links.at(w.link).bandwidth_gbps <= 0)) {
      std::string names;
      for (const auto& [name, link] : hw->fabric.links) names += (names.empty() ? "" : ", ") + name;
      throw UsageError(fmt::format("trace: --what-if {}: {} has no link class '{}' (its classes: {}; nic for network)", w.text,
                                   hw->name, w.link, names));
    }
  for (const traces::WhatIf& w : what_ifs)
    if (!w.swap_all_gather.empty() && !hw)
      throw UsageError(fmt::format("trace: --what-if {}: the scheme's time comes from the simulator on a profile: give "
                                   "--hardware PROFILE (the trace's machine)",
                                   w.text));
  for (const traces::WhatIf& w : what_ifs) {
    if (w.comm_sms <= 0) continue;
    if (!hw)
      throw UsageError(fmt::format("trace: --what-if {}: the SMs left to compute are the profile's SM count less the "
                                   "communication kernels': give --hardware PROFILE (the trace's machine)",
                                   w.text));
    if (w.comm_sms >= hw->gpu.sm_count)
      throw UsageError(fmt::format("trace: --what-if {}: {} has {} SMs; communication can hold 1..{}", w.text, hw->name,
                                   hw->gpu.sm_count, hw->gpu.sm_count - 1));
  }
  check_outputs_not_inputs({{"-o", o.output}, {"--replay-trace", o.replay_trace}});
  const ReplayReport report = replay_report(loaded, what_ifs, o.format, !o.replay_trace.empty(), hw ? &*hw : nullptr);
  if (!o.replay_trace.empty()) {
    write_file_atomically(o.replay_trace, report.chrome_trace);
    err << "wrote " << o.replay_trace << "\n";
  }
  if (o.output.empty()) {
    out << report.text;
    return;
  }
  write_file_atomically(o.output, report.text);
  err << "wrote " << o.output << "\n";
}

}  // namespace

void cmd_trace(const TraceOptions& o, std::ostream& out, std::ostream& err) {
  if (o.kernels && !o.hardware.empty()) throw UsageError("trace: --kernels lists the kernels; --hardware goes without it");
  if (!o.replay && !o.what_ifs.empty()) throw UsageError("trace: --what-if changes a replay: give --replay with it");
  if (!o.replay && !o.replay_trace.empty()) throw UsageError("trace: --replay-trace writes a replay: give --replay with it");
  if (o.replay) return cmd_trace_replay(o, out, err);
  Run run = load(o, err);
  if (!o.hardware.empty()) predict(o, run);
  check_outputs_not_inputs({{"-o", o.output}});
  std::ostringstream text;
  if (o.kernels) {
    if (o.format == "json") write_kernels_json(run, text);
    else if (o.format == "csv") write_kernels_csv(run, text);
    else write_kernels_table(run, text);
  } else if (o.format == "json") write_json(run, text);
  else if (o.format == "csv") write_csv(run, text);
  else write_table(run, text);
  if (o.output.empty()) {
    out << text.str();
    return;
  }
  write_file_atomically(o.output, text.str());
  err << "wrote " << o.output << "\n";
}

}  // namespace overlap::tools
