#include "tools/cmd_tune.hpp"

#include "cost_model/atomic_file.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>
#include <stdexcept>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cost_model/input_error.hpp"
#include "cost_model/profile_loader.hpp"
#include "sim/report.hpp"
#include "sim/scenario.hpp"
#include "sim/sweep_parallel.hpp"
#include "sim/tune_schemes.hpp"
#include "sim/tune_wave_groups.hpp"
#include "sim/workload_shapes.hpp"
#include "tools/cmd_run.hpp"
#include "tools/command_errors.hpp"
#include "tools/export_production.hpp"
#include "tools/input_paths.hpp"

namespace overlap::tools {

namespace fs = std::filesystem;

namespace {

std::int64_t parse_dim(const std::string& s, const std::string& whole) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty() || v <= 0)
    throw UsageError(fmt::format("--gemm must be MxNxK with positive whole numbers, e.g. 8192x8192x4096 (got '{}')", whole));
  return v;
}

sim::Workload operator_workload(const TuneOptions& o) {
  if (o.gemm.empty() || o.primitive.empty() || o.ranks == 0 || o.hardware.empty())
    throw UsageError("tune needs either a SCENARIO, or --hardware, --gemm MxNxK, --primitive and --ranks "
                     "(see 'overlap-sim tune --help')");
  std::vector<std::string> dims;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= o.gemm.size(); ++i) {
    if (i == o.gemm.size() || o.gemm[i] == 'x' || o.gemm[i] == 'X') {
      dims.push_back(o.gemm.substr(start, i - start));
      start = i + 1;
    }
  }
  if (dims.size() != 3)
    throw UsageError(fmt::format("--gemm must be MxNxK, e.g. 8192x8192x4096 (got '{}')", o.gemm));
  sim::GemmCollective g;
  g.m = parse_dim(dims[0], o.gemm);
  g.n = parse_dim(dims[1], o.gemm);
  g.k = parse_dim(dims[2], o.gemm);
  const auto dt = parse_dtype(o.dtype);
  if (!dt) throw UsageError(fmt::format("--dtype must be fp8, fp16, bf16 or fp32 (got '{}')", o.dtype));
  g.dtype = *dt;
  if (o.primitive == "all_reduce") g.primitive = sim::Primitive::all_reduce;
  else if (o.primitive == "reduce_scatter") g.primitive = sim::Primitive::reduce_scatter;
  else if (o.primitive == "all_to_all") g.primitive = sim::Primitive::all_to_all;
  else throw UsageError(fmt::format("--primitive must be all_reduce, reduce_scatter or all_to_all (got '{}')", o.primitive));
  if (o.ranks < 2) throw UsageError(fmt::format("--ranks must be at least 2 (got {})", o.ranks));
  sim::Workload w;
  w.kind = overlap::sim::WorkloadKind::gemm_collective;
  w.tp = o.ranks;
  w.shape = g;
  try {
    sim::validate_workload(w);
  } catch (const std::invalid_argument& e) {
    std::string msg = e.what();
    if (msg.rfind("workload.m:", 0) == 0 || msg.rfind("workload.n:", 0) == 0 || msg.rfind("workload.k:", 0) == 0)
      msg = "--gemm " + msg.substr(9);
    throw UsageError(msg);
  }
  if (const auto over = sim::work_over_budget(w))
    throw UsageError(fmt::format("{} {}: {}", over->key == "tp" ? "--ranks" : "--gemm",
                                 over->key == "tp" ? std::to_string(o.ranks) : o.gemm, over->message));
  return w;
}

// --export flashoverlap FILE or DIR/, checked with -o before anything is tuned: the file
// flashoverlap_export_file names (tools/export_production.hpp), or "".
std::string flashoverlap_export_checked(const TuneOptions& o, const sim::GemmCollective& g, const HardwareProfile& hw) {
  if (o.export_flashoverlap.empty()) return {};
  const std::string file = flashoverlap_export_file(o.export_flashoverlap, g, hw.gpu.name);
  try {
    check_distinct_outputs({{"-o", o.output}, {o.export_flashoverlap_flag, file}});
  } catch (const OutputError& e) {
    throw UsageError(e.what());
  }
  return file;
}

// What the best setting of a production scheme means in its stack's own flags (only where they can be
// cited: tools/export_production.hpp).
std::string production_notes(const sim::SchemeTuneResult& r) {
  std::string out;
  for (const sim::SchemeTuneEntry& e : r.schemes) {
    if (e.candidates.empty()) continue;
    if (e.scheme == "te_userbuffers")
      out += fmt::format("te_userbuffers in Megatron-LM: --tp-comm-overlap --tp-comm-overlap-cfg FILE, FILE from "
                         "'tune ... --export te-userbuffers FILE' (best: {})\n",
                         e.candidates.front().params.dump());
    if (e.scheme == "async_tp") out += "async_tp in torchtitan: " + torchtitan_async_tp_flags() + "\n";
  }
  return out;
}

// Candidates the search could not tell from the chosen one, and why it kept the one it did.
std::string tie_note(const sim::WaveGroupTuneResult& r) {
  const bool engine = r.search == sim::WaveGroupSearch::simulate;
  std::vector<std::size_t> tied;
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const sim::WaveGroupTrial& c = r.candidates[i];
    if (c.groups_waves == r.groups_waves) continue;
    if (engine ? c.simulated_ps == r.simulated_ps : c.predicted_ps == r.predicted_ps) tied.push_back(i);
  }
  if (tied.empty()) return {};
  std::string list;
  bool same_tail = true;
  for (std::size_t i : tied) {
    const auto& g = r.candidates[i].groups_waves;
    list += (list.empty() ? "" : ", ") + nlohmann::json(g).dump();
    same_tail &= !g.empty() && g.back() == r.groups_waves.back();
  }
  std::string why = engine ? "the engine gives them the same latency to the picosecond" : "FlashOverlap's predictor gives them the same latency";
  if (same_tail)
    why += fmt::format("; they end with the same last group ({} wave{}): while the earlier groups' collectives finish "
                       "under the GEMM, the latency is the GEMM plus that group's collective, whatever the earlier split",
                       r.groups_waves.back(), r.groups_waves.back() == 1 ? "" : "s");
  return fmt::format("tie: {} candidate{} ({}) {} {:.2f} us: {}; the search keeps the one it evaluated first\n", tied.size(),
                     tied.size() == 1 ? "" : "s", list, engine ? "simulate to" : "predict", us_from_ps(engine ? r.simulated_ps : r.predicted_ps), why);
}

// What the operator form took as given, said with its result (the table's "assumed:" line, JSON's
// "assumed", the export's overlap_sim object): the dtype its GEMM timings are for, the hardware and
// its GPU, and that FlashOverlap's kernels, which run what it tunes, are fp16 only.
struct Assumed {
  std::string dtype, hardware, gpu, kernels;
};
Assumed assumed_of(const TuneOptions& o, const sim::GemmCollective& g, const HardwareProfile& hw) {
  Assumed a;
  a.dtype = dtype_name(g.dtype);
  a.hardware = hw.name.empty() ? o.hardware : hw.name;
  a.gpu = hw.gpu.name;
  a.kernels = g.dtype == DType::fp16
                  ? "FlashOverlap's kernels are fp16 only (cutlass::half_t GEMMs), as tuned here"
                  : fmt::format("FlashOverlap's kernels are fp16 only (cutlass::half_t GEMMs): these are {} GEMM "
                                "timings; tune with --dtype fp16 for what its kernels run",
                                a.dtype);
  return a;
}
std::string assumed_line(const Assumed& a) {
  return sim::wrap_text(fmt::format("assumed: dtype {} (--dtype, default bf16), hardware {} ({}); {}", a.dtype,
                                    a.hardware, a.gpu, a.kernels),
                        sim::kTableWidth, "  ");
}

void tune_operator(const TuneOptions& o, std::ostream& out, std::ostream& err) {
  const auto search = sim::parse_wave_group_search(o.search);
  if (!search)
    throw UsageError(fmt::format("--search must be flashoverlap, optimal, exhaustive or simulate (got '{}')", o.search));
  if (o.format != "table" && o.format != "json") throw UsageError("--format must be table or json (got '" + o.format + "')");
  if (o.swizzle != 1 && o.swizzle != 2 && o.swizzle != 4 && o.swizzle != 8)
    throw UsageError(fmt::format("--swizzle must be 1, 2, 4 or 8 (CUTLASS's identity swizzles; got {})", o.swizzle));
  if (o.budget < 2) throw UsageError(fmt::format("--budget must be at least 2 engine runs (got {})", o.budget));
  const sim::Workload w = operator_workload(o);
  const bool path = o.hardware.find('/') != std::string::npos || fs::path(o.hardware).extension() == ".yaml";
  const HardwareProfile hw = load_profile(path ? resolve_input_path(o.hardware) : o.hardware, hardware_dir(), o.sets);
  if (o.ranks > hw.fabric.num_gpus)
    throw UsageError(fmt::format("--ranks {}: the hardware '{}' has {} GPUs", o.ranks, o.hardware, hw.fabric.num_gpus));
  const std::string exported = flashoverlap_export_checked(o, sim::gemm_collective_shape(w), hw);
  // No output replaces the profile read (or any input): the export as flashoverlap_export_file names it.
  check_outputs_not_inputs({{"-o", o.output}, {o.export_flashoverlap_flag, exported}});

  sim::WaveGroupTuneOptions opts;
  opts.search = *search;
  opts.simulate_budget = o.budget;
  opts.top = o.top;
  opts.jobs = o.jobs > 0 ? o.jobs : sim::default_jobs();
  opts.sm_margin = o.sm_margin;
  sim::WaveGroupTuneResult r;
  try {
    r = sim::tune_wave_groups(w, hw, sim::Fidelity::curve, opts);
  } catch (const std::length_error& e) {
    throw UsageError(std::string("--search exhaustive: ") + e.what());
  }
  const Assumed assumed = assumed_of(o, sim::gemm_collective_shape(w), hw);
  std::string text;
  if (o.format == "json") {
    nlohmann::json j = sim::to_json(r);
    j["assumed"] = {{"dtype", assumed.dtype}, {"hardware", assumed.hardware}, {"gpu", assumed.gpu},
                    {"flashoverlap_kernels", assumed.kernels}};
    text = j.dump(2) + "\n";
  } else {
    text = sim::format_tune_table(r, w, o.hardware, o.top);
  }
  const std::string ties = o.format == "table" ? tie_note(r) + assumed_line(assumed) : std::string();
  std::string config;
  std::vector<std::string> warnings;
  if (!exported.empty()) {
    try {
      nlohmann::ordered_json j = flashoverlap_export(r, sim::gemm_collective_shape(w), o.ranks, o.swizzle, o.algo, warnings);
      j["overlap_sim"]["hardware"] = assumed.hardware;
      j["overlap_sim"]["gpu"] = assumed.gpu;
      config = j.dump(4) + "\n";
    } catch (const std::invalid_argument& e) {
      throw UsageError(o.export_flashoverlap_flag + ": " + e.what());
    }
  }
  // -o and the export land together or not at all: a half-written pair is worse than none.
  StagedOutputs staged;
  try {
    if (!o.output.empty()) staged.stage(o.output, text + ties);
    if (!exported.empty()) staged.stage(exported, config);
    staged.commit();
  } catch (const std::runtime_error& e) {
    if (dynamic_cast<const UsageError*>(&e) || dynamic_cast<const InputError*>(&e)) throw;
    throw UsageError(std::string(e.what()) + " " + written_note(e));
  }
  if (o.output.empty()) out << text << ties;
  for (const std::string& w : warnings) err << "warning: " << exported << ": " << w << "\n";
  for (const std::string* written : {&o.output, static_cast<const std::string*>(&exported)})
    if (!written->empty()) err << "wrote " << *written << "\n";
}

// The --export FORMAT FILE of the scheme level, checked before anything runs: the file, or "".
std::string te_export_path(const TuneOptions& o) {
  if (o.export_spec.empty()) return {};
  if (o.export_spec.size() != 2) throw UsageError("--export takes FORMAT FILE (e.g. --export te-userbuffers ub.yaml)");
  if (o.export_spec[0] != "te-userbuffers")
    throw UsageError(fmt::format("--export: tune writes te-userbuffers (TransformerEngine's ub_cfgs YAML, from a "
                                 "SCENARIO) or flashoverlap (FlashOverlap's JSON, from --gemm ...; got '{}'); NCCL's "
                                 "tuner CSV is 'collective --export nccl-tuner'",
                                 o.export_spec[0]));
  check_distinct_outputs({{"-o", o.output}, {"--export", o.export_spec[1]}});
  // Refused before the tuning runs: a directory, a block device or a socket (cost_model/atomic_file.hpp).
  try {
    resolve_output(o.export_spec[1]);
  } catch (const OutputError& e) {
    throw UsageError(std::string("--export: ") + e.what());
  }
  return o.export_spec[1];
}

// The ub_cfgs YAML of the best te_userbuffers candidate, with the flags it means on stderr's note.
std::string te_export_text(const sim::SchemeTuneResult& r, const sim::Scenario& sc, const std::string& path,
                           std::string& flags) {
  for (const sim::SchemeTuneEntry& e : r.schemes) {
    if (e.scheme != "te_userbuffers" || e.candidates.empty()) continue;
    const sim::SchemeTuneCandidate& best = e.candidates.front();
    flags = megatron_flags(sc.workload, best.params, path);
    const std::vector<std::string> header = {
        "TransformerEngine userbuffers ub_cfgs (transformer_engine/pytorch/module/base.py initialize_ub)",
        fmt::format("written by overlap-sim tune for scenario '{}' on {} (TP {})", sc.name, sc.hardware_name, sc.workload.tp),
        fmt::format("best te_userbuffers setting {}: {:.2f} us ({:.3f}x no_overlap); each GEMM name's entry is its "
                    "own setting (a name the setting leaves out takes the scalar knobs)",
                    best.params.dump(), us_from_ps(best.latency_ps), best.speedup),
        "searched only over settings TransformerEngine runs as simulated (an all-gather, reduce-scatter or "
        "column-dgrad group overlapped for every name or for none; no pipeline inherited by an all-gather)",
        "Megatron-LM: " + flags};
    try {
      return te_userbuffers_yaml(sc.workload, best.params, header);
    } catch (const std::invalid_argument& ex) {
      throw UsageError(std::string("--export te-userbuffers: ") + ex.what());
    }
  }
  throw UsageError("--export te-userbuffers: te_userbuffers does not apply to this scenario's workload "
                   "(TP+SP linears: mlp_tpsp, attention_tpsp, transformer)");
}

void tune_scenario(const TuneOptions& o, std::ostream& out, std::ostream& err) {
  if (!o.export_flashoverlap.empty())
    throw UsageError(o.export_flashoverlap_flag +
                     " belongs to the operator form (--hardware, --gemm, --primitive, --ranks); a SCENARIO exports "
                     "--export te-userbuffers FILE");
  if (o.sm_margin)
    throw UsageError("--sm-margin belongs to the operator form; in a scenario, give the flashoverlap scheme "
                     "params: {sm_margin: true}");
  if (o.format != "table" && o.format != "json") throw UsageError("--format must be table or json (got '" + o.format + "')");
  const std::string path = resolve_input_path(o.scenario);
  sim::ScenarioOptions load;
  load.sets = resolve_set_paths(o.sets, path);
  ScenarioFlags flags = o.flags;
  flags.hardware = o.hardware;  // given a SCENARIO, --hardware is the scenario's hardware
  const std::vector<FlagAssignment> flag_sets = scenario_flag_sets(flags, path, o.sets);
  for (const FlagAssignment& f : flag_sets) load.sets.push_back(f.set);
  load.hardware_dir = hardware_dir();
  load.validate_sweep = false;  // tune ignores the sweep
  const std::string export_path = te_export_path(o);
  sim::Scenario sc = with_flag_errors(flag_sets, [&] { return sim::load_scenario_file(path, load); });
  sc.name = sim::scenario_label(sc.name, shown_overrides(o.sets, flag_sets));
  // A pipeline or context-parallel job is stages composed by a schedule (`run`), not one graph to tune.
  if (sc.workload.training.job.active())
    throw InputError(sc.file, 0, "workload.parallel",
                     "tune searches one graph's knobs; a pipeline or context-parallel job (pp, cp, micro_batches) is "
                     "composed from its stages by `overlap-sim run`: tune one stage's step by giving its layers and "
                     "sequence without those keys");
  check_outputs_not_inputs({{"-o", o.output}, {"--export", export_path}});  // before the tuning runs
  // The export needs te_userbuffers tuned: added when the scenario does not name it.
  if (!export_path.empty() &&
      std::none_of(sc.schemes.begin(), sc.schemes.end(), [](const sim::SchemeSpec& s) { return s.name == "te_userbuffers"; }))
    sc.schemes.push_back(sim::SchemeSpec{"te_userbuffers"});
  const int jobs = o.jobs > 0 ? o.jobs : sim::default_jobs();
  // Exporting for TransformerEngine: te_userbuffers is searched only over what TE runs as simulated,
  // so the exported setting is the one tuned (tools/export_production.hpp te_undeployable).
  sim::TuneFilter deployable;
  if (!export_path.empty())
    deployable = [](const std::string& scheme, const sim::Workload& w, const nlohmann::json& params) {
      return scheme == "te_userbuffers" ? te_undeployable(w, params) : std::string();
    };
  const sim::SchemeTuneResult r = sim::tune_schemes(sc, jobs, deployable);
  std::string text = o.format == "json" ? sim::to_json(r, sc, o.top).dump(2) + "\n"
                                        : sim::format_scheme_tune_table(r, sc, o.top);
  if (o.format == "table") text += production_notes(r);
  std::string megatron, exported;
  if (!export_path.empty()) exported = te_export_text(r, sc, export_path, megatron);
  // -o and --export land together or not at all.
  if (!o.output.empty() || !exported.empty()) {
    StagedOutputs staged;
    try {
      if (!o.output.empty()) staged.stage(o.output, text);
      if (!exported.empty()) staged.stage(export_path, exported);
      staged.commit();
    } catch (const std::runtime_error& e) {
      if (dynamic_cast<const UsageError*>(&e) || dynamic_cast<const InputError*>(&e)) throw;
      throw UsageError(std::string(e.what()) + " " + written_note(e));
    }
  }
  if (o.output.empty()) out << text;
  if (!o.output.empty()) err << "wrote " << o.output << "\n";
  if (!exported.empty()) {
    if (!r.left_out.empty())
      err << fmt::format("note: te_userbuffers searched only over settings TransformerEngine runs as simulated; left "
                         "out: {}{}\n",
                         r.left_out.front(), r.left_out.size() > 1 ? fmt::format(" (and {} more reasons)", r.left_out.size() - 1) : "");
    err << "wrote " << export_path << " (Megatron-LM: " << megatron << ")\n";
  }
}

}  // namespace

// `--export flashoverlap PATH` is the operator form's export: moved into export_flashoverlap, where
// the older `--export-flashoverlap PATH` puts it too (both given: refused).
TuneOptions with_flashoverlap_export(const TuneOptions& options) {
  TuneOptions o = options;
  if (o.export_spec.size() == 2 && o.export_spec[0] == "flashoverlap") {
    if (!o.export_flashoverlap.empty())
      throw UsageError("--export flashoverlap and --export-flashoverlap name the same export: give one");
    if (o.export_spec[1].empty())
      throw UsageError("--export flashoverlap: '': an empty path names no file (give a file name, or a directory/)");
    o.export_flashoverlap = o.export_spec[1];
    o.export_flashoverlap_flag = "--export flashoverlap";
    o.export_spec.clear();
  }
  return o;
}

void cmd_tune(const TuneOptions& given, std::ostream& out, std::ostream& err) {
  const TuneOptions options = with_flashoverlap_export(given);
  if (options.top < 1) throw UsageError(fmt::format("--top must be at least 1 (got {})", options.top));
  if (options.jobs < 0) throw UsageError(fmt::format("-j must be at least 1 (got {})", options.jobs));
  // --hardware alone with a SCENARIO is the scenario's hardware (as in run and sweep).
  const bool operator_level = !options.gemm.empty() || !options.primitive.empty() || options.ranks != 0 ||
                              (!options.hardware.empty() && options.scenario.empty() && !options.flags.tp &&
                               !options.flags.tokens);
  if (operator_level) {
    if (!options.export_spec.empty())
      throw UsageError(fmt::format("--export {}: the operator form (--gemm ...) writes --export flashoverlap FILE|DIR/; "
                                   "te-userbuffers is the scheme level's (a SCENARIO)",
                                   options.export_spec.empty() ? std::string() : options.export_spec[0]));
    if (options.flags.tp || options.flags.tokens)
      throw UsageError("--tp and --tokens shape a SCENARIO's workload; the operator form takes --ranks and --gemm MxNxK");
    if (!options.scenario.empty())
      throw UsageError("tune takes either a SCENARIO (scheme level) or --hardware/--gemm/--primitive/--ranks "
                       "(operator level), not both");
    tune_operator(options, out, err);
    return;
  }
  TuneOptions o = options;
  // Like run and sweep: no scenario means the default one.
  if (o.scenario.empty()) o.scenario = (fs::path(source_dir()) / kDefaultScenario).string();
  tune_scenario(o, out, err);
}

Command add_tune_command(CLI::App& app) {
  const auto options = std::make_shared<TuneOptions>();
  TuneOptions& tune = *options;
  CLI::App* tune_cmd = app.add_subcommand(
      "tune", "Tune FlashOverlap's wave groups for one GEMM (--gemm ...), or every scheme's knobs for a SCENARIO");
  tune_cmd->add_option("scenario", tune.scenario,
                       "Scenario: tune each scheme's knobs (scheme level); on a training step with data "
                       "parallelism also parallel.bucket_mb (DDP, ZeRO-1/2) or parallel.prefetch (ZeRO-3)");
  tune_cmd->add_option("--hardware", tune.hardware,
                       "Hardware profile (name or path): the operator level's, or with a SCENARIO the same as "
                       "--set hardware=VALUE")
      ->type_name("NAME|FILE");
  add_scenario_flags(tune_cmd, tune.flags, false);
  tune_cmd->add_option("--gemm", tune.gemm, "Operator level: the per-rank GEMM, MxNxK")->type_name("MxNxK");
  tune_cmd->add_option("--dtype", tune.dtype, "Operator level: fp8, fp16, bf16 or fp32 (default bf16)");
  tune_cmd->add_option("--primitive", tune.primitive, "Operator level: all_reduce, reduce_scatter or all_to_all");
  tune_cmd->add_option("--ranks", tune.ranks, "Operator level: GPUs in the collective")->transform(decimal_integer());
  tune_cmd->add_option("--search", tune.search,
                       "flashoverlap (the published tuner), optimal (exact optimum of its predictor), exhaustive "
                       "(2^(T-1) partitions, T <= 20), simulate (the engine decides; default)");
  tune_cmd->add_option("--format", tune.format, "table or json");
  tune_cmd->add_option("--output,-o", tune.output, "Write the result to FILE (atomically) instead of stdout");
  // The one export flag is --export FORMAT FILE; --export-flashoverlap PATH is its older spelling, kept as
  // an alias that says so on stderr (the run below) and lands where --export flashoverlap does
  // (with_flashoverlap_export). Its file is checked with -o once its name is known (it may be a
  // directory's FlashOverlap name, which needs the GEMM and the GPU: flashoverlap_export_checked); an
  // empty one names nothing and is refused here, as every empty output path is.
  CLI::Option* older_export =
      tune_cmd->add_option("--export-flashoverlap", tune.export_flashoverlap,
                           "The older form of --export flashoverlap FILE|DIR/ (kept; it says so on stderr)")
          ->type_name("FILE|DIR/")
          ->check(CLI::Validator(
              [](std::string& path) {
                return path.empty() ? std::string("'': an empty path names no file (give a file name, or a directory/)")
                                    : std::string();
              },
              ""));
  tune_cmd->add_option("--export", tune.export_spec,
                       "Write FORMAT to FILE from the best setting: te-userbuffers (a SCENARIO) = TransformerEngine's "
                       "ub_cfgs YAML (Megatron-LM --tp-comm-overlap-cfg); flashoverlap (--gemm ...) = the configuration "
                       "FlashOverlap's kernels read (BM, BN, dur, Algo, hint, cSeg, rLDN), to FILE or into DIR/ under "
                       "the name FlashOverlap's main branch reads, m{M}n{N}k{K}_{gpu}.json")
      ->expected(2)
      ->allow_extra_args(true)
      ->type_name("FORMAT FILE");
  tune_cmd->add_option("--swizzle", tune.swizzle, "Tile order of the exported hint: CUTLASS swizzle 1, 2, 4 or 8")
      ->transform(decimal_integer());
  tune_cmd->add_option("--algo", tune.algo, "Exported Algo: FlashOverlap's index of the GEMM kernel (AlgoDict; 0 or more)")
      ->transform(decimal_integer());
  tune_cmd->add_option("--budget", tune.budget, "simulate: engine runs at most (default 40)")->transform(decimal_integer());
  tune_cmd->add_flag("--sm-margin", tune.sm_margin,
                     "Operator level: the engine runs FlashOverlap with sm_margin (the GEMM leaves NCCL's SMs free)");
  tune_cmd->add_option("--top", tune.top, "Candidates listed (default 10)")->transform(decimal_integer());
  tune_cmd->add_option("-j,--jobs", tune.jobs, "Threads running simulations (default: every core)")
      ->transform(decimal_integer())
      ->check(CLI::Range(1, kMaxJobs));
  tune_cmd->add_option("--set", tune.sets,
                       "Override a key (repeatable): of the profile (operator level, e.g. hardware.gpu.sm_count=100) "
                       "or of the scenario")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  tune_cmd->footer(examples({"overlap-sim tune --hardware a800-8x-nvlink --gemm 8192x8192x4096 --dtype fp16 --primitive all_reduce --ranks 4",
                             "overlap-sim tune --hardware rtx4090-4x-pcie --gemm 4096x8192x7168 --dtype fp16 --primitive reduce_scatter --ranks 4 --search flashoverlap",
                             "overlap-sim tune --hardware h100-sxm-8x-nvswitch --gemm 16384x8192x8192 --primitive all_reduce --ranks 8 --export flashoverlap configs/ --algo 3",
                             "overlap-sim tune scenarios/llama3-70b-tp8-mlp.yaml --tp 4",
                             "overlap-sim tune flashoverlap-a800-allreduce --format json"}));
  return {tune_cmd, [options, tune_cmd, older_export](std::ostream& out, std::ostream& err) {
            check_output_flags({{"-o", &options->output, tune_cmd->get_option("--output")}});  // the exports: cmd_tune
            if (older_export->count() > 0) {
              options->export_flashoverlap_flag = "--export-flashoverlap";
              err << "note: --export-flashoverlap FILE is the older form of --export flashoverlap FILE (one --export "
                     "flag for every export)\n";
            }
            // Read as a signed number so that a negative value is refused by name, not as a parse error.
            if (options->algo && *options->algo < 0)
              throw UsageError(
                  fmt::format("--algo must be 0 or more (FlashOverlap's AlgoDict index; got {})", *options->algo));
            cmd_tune(*options, out, err);
            return kExitOk;
          }};
}

}  // namespace overlap::tools
