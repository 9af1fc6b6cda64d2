// `overlap-sim plan` (cmd_plan.hpp): the flags read into a search query over a base scenario, the search,
// and the report.
#include "tools/cmd_plan.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <sstream>
#include <variant>

#include "cost_model/input_error.hpp"
#include "cost_model/yaml_reader.hpp"
#include "sim/plan_report.hpp"
#include "sim/plan_search.hpp"
#include "sim/sweep_mpi.hpp"
#include "sim/sweep_parallel.hpp"
#include "tools/cmd_run.hpp"
#include "tools/command_errors.hpp"
#include "tools/input_paths.hpp"
#include "tools/mpi_command.hpp"
#include "tools/scenario_flags.hpp"

namespace overlap::tools {

namespace fs = std::filesystem;

namespace {

// The base when no scenario is given: a transformer training step of --model on --hardware. Every key the
// search varies is written again for each candidate, its scheme included (kPlanSchemes).
constexpr const char* kPlanBase =
    "name: plan\n"
    "hardware: h100-sxm-8x-nvswitch\n"
    "workload:\n"
    "  kind: transformer\n"
    "  tp: 1\n"
    "  model: llama3-8b\n"
    "  batch: 1\n"
    "  seq: 4096\n"
    "  dtype: bf16\n"
    "  pass: step\n"
    "schemes: [no_overlap]\n"
    "fidelity: curve\n";

// The schemes searched without a base scenario: the TP overlap a Megatron-LM job chooses between, none
// and TransformerEngine's userbuffers.
const std::vector<std::string> kPlanSchemes = {"no_overlap", "te_userbuffers"};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const auto b = item.find_first_not_of(' ');
    const auto e = item.find_last_not_of(' ');
    out.push_back(b == std::string::npos ? "" : item.substr(b, e - b + 1));
  }
  return out;
}

std::vector<int> int_list(const std::string& flag, const std::string& text) {
  std::vector<int> out;
  if (text.empty()) return out;
  for (const std::string& item : split_list(text)) {
    const auto v = parse_decimal_int(item);
    if (!v || *v < 1 || *v > 65536)
      throw UsageError(fmt::format("{} {}: '{}' is not a whole number from 1 to 65536 (give a comma-separated list)",
                                   flag, text, item));
    out.push_back(static_cast<int>(*v));
  }
  return out;
}

template <typename T, typename Parse>
std::vector<T> named_list(const std::string& flag, const std::string& text, Parse parse, const char* values) {
  std::vector<T> out;
  if (text.empty()) return out;
  for (const std::string& item : split_list(text)) {
    const auto v = parse(item);
    if (!v) throw UsageError(fmt::format("{} {}: '{}' is not one of {}", flag, text, item, values));
    out.push_back(*v);
  }
  return out;
}

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// The base scenario: SCENARIO with --set, --hardware and --model, or the built-in base with --model and
// --hardware. An error in a flag's value names the flag.
sim::Scenario load_base(const PlanCommandOptions& o, std::string& hardware_dir_out) {
  hardware_dir_out = hardware_dir();
  ScenarioFlags flags;
  flags.hardware = o.hardware;
  flags.model = o.model;
  if (!o.scenario.empty()) {
    ScenarioLoad load = scenario_load(o.scenario, o.sets, flags);
    load.options.validate_sweep = false;
    return with_flag_errors(load.flag_sets, [&] { return sim::load_scenario_file(load.path, load.options); });
  }
  if (o.model.empty()) throw UsageError("plan: give --model NAME|FILE (or a transformer SCENARIO as the base)");
  if (o.hardware.empty()) throw UsageError("plan: give --hardware NAME|FILE (or a transformer SCENARIO as the base)");
  // Paths resolve as for a scenario under scenarios/ (where the built-in base would live).
  const std::string beside = (fs::path(source_dir()) / "scenarios" / "plan.yaml").string();
  const std::vector<std::string> resolved =
      resolve_set_paths({"hardware=" + o.hardware, "workload.model=" + o.model}, beside);
  const std::vector<FlagAssignment> flag_sets = {
      {resolved[0], "hardware=" + o.hardware, "--hardware " + o.hardware},
      {resolved[1], "workload.model=" + o.model, "--model " + o.model}};
  sim::ScenarioOptions options;
  options.sets = {resolved[0], resolved[1]};
  for (const std::string& s : resolve_set_paths(o.sets, beside)) options.sets.push_back(s);
  options.hardware_dir = hardware_dir_out;
  options.validate_sweep = false;
  return with_flag_errors(flag_sets, [&] { return sim::load_scenario_text(kPlanBase, "", options); });
}

sim::PlanAxes axes_of(const PlanCommandOptions& o) {
  sim::PlanAxes a;
  a.tp = int_list("--tp", o.tp);
  a.cp = int_list("--cp", o.cp);
  a.pp = int_list("--pp", o.pp);
  a.vpp = int_list("--vpp", o.vpp);
  a.micro_batch_size = int_list("--mbs", o.mbs);
  a.fsdp = named_list<sim::Sharding>("--fsdp", o.fsdp, sim::parse_sharding, "none, zero1, zero2, zero3");
  a.recompute = named_list<sim::Recompute>("--recompute", o.recompute, sim::parse_recompute, "none, selective, full");
  a.schedules = named_list<sim::PipelineSchedule>(
      "--schedule", o.schedule,
      [](const std::string& s) -> std::optional<sim::PipelineSchedule> {
        try {
          return sim::pipeline_schedule_from_name(s);
        } catch (const std::invalid_argument&) {
          return std::nullopt;
        }
      },
      "gpipe, 1f1b, interleaved, zb_h1, dualpipe");
  a.cp_algorithm = named_list<sim::ContextParallel>("--cp-algorithm", o.cp_algorithm, sim::parse_context_parallel,
                                                    "ring, allgather_kv");
  if (!o.schemes.empty()) a.schemes = split_list(o.schemes);
  for (const std::string& s : a.schemes)
    if (s.empty()) throw UsageError(fmt::format("--schemes {}: an empty scheme name", o.schemes));
  return a;
}

// Why the enumeration is empty, said with the flags that decide it.
[[noreturn]] void refuse_empty_search(const sim::PlanQuery& q) {
  const sim::PlanAxes& a = q.axes;
  bool factors = false;
  for (int tp : a.tp)
    for (int cp : a.cp)
      if (q.gpus % (tp * cp) == 0) {
        const int rest = q.gpus / (tp * cp);
        if (a.pp.empty()) factors = true;
        for (int pp : a.pp)
          if (rest % pp == 0) factors = true;
      }
  if (!factors)
    throw UsageError(fmt::format("--gpus {}: no tp x cp x pp x dp of the search's values makes {} GPUs (tp from {}, cp "
                                 "from {}{}); change --gpus or widen --tp / --cp / --pp",
                                 q.gpus, q.gpus, join_ints(a.tp), join_ints(a.cp),
                                 a.pp.empty() ? "" : ", pp from " + join_ints(a.pp)));
  throw UsageError(fmt::format("--global-batch {}: no data-parallel degree x micro-batch size (from {}) divides it on {} "
                               "GPUs; give a global batch with more factors of two, or other --mbs",
                               q.global_batch, join_ints(a.micro_batch_size), q.gpus));
}

// Nothing ranked: nothing fits, or nothing ran. Says the smallest memory against HBM.
[[noreturn]] void refuse_no_result(const sim::PlanResult& r) {
  const sim::PlanOutcome* smallest = nullptr;
  const sim::PlanOutcome* failed = nullptr;
  int oom = 0, invalid = 0;
  for (const sim::PlanOutcome& o : r.outcomes) {
    if (o.verdict == sim::PlanVerdict::out_of_memory) {
      ++oom;
      if (!smallest || o.peak_bytes.value_or(0) < smallest->peak_bytes.value_or(0)) smallest = &o;
    }
    if (o.verdict == sim::PlanVerdict::invalid) ++invalid;
    if (o.verdict == sim::PlanVerdict::failed && !failed) failed = &o;
  }
  const double gib = 1024.0 * 1024.0 * 1024.0;
  if (smallest)
    throw UsageError(fmt::format(
        "plan: no configuration fits: of {} candidates {} need more memory than the {:.2f} GiB of HBM of {} "
        "(gpu.hbm_bytes) and {} are invalid; the smallest peak is {:.2f} GiB ({}); give more --gpus, a smaller "
        "--global-batch or --seq, or allow --recompute full / --fsdp zero3",
        r.outcomes.size(), oom, static_cast<double>(r.hbm_bytes) / gib, r.query.base.hardware_name, invalid,
        static_cast<double>(smallest->peak_bytes.value_or(0)) / gib, sim::plan_candidate_label(smallest->candidate)));
  if (failed)
    throw UsageError(fmt::format("plan: no configuration could be simulated: {} candidates, {} invalid; the first "
                                 "failure: {}: {}",
                                 r.outcomes.size(), invalid, sim::plan_candidate_label(failed->candidate), failed->reason));
  const sim::PlanOutcome& first = r.outcomes.front();
  throw UsageError(fmt::format("plan: every one of the {} candidates is invalid for this model; the first: {}: {} ({})",
                               r.outcomes.size(), sim::plan_candidate_label(first.candidate), first.reason,
                               first.reason_key));
}

}  // namespace

Command add_plan_command(CLI::App& app) {
  const auto options = std::make_shared<PlanCommandOptions>();
  PlanCommandOptions& o = *options;
  CLI::App* cmd = app.add_subcommand(
      "plan", "Search (tp, cp, pp, vpp, dp and ZeRO stage, micro-batches, recompute, overlap scheme) for the fastest "
              "training step that fits, and say why the others lost");
  cmd->add_option("scenario", o.scenario, "A transformer scenario as the base (its hardware, model, dtype, schemes)");
  cmd->add_option("--model", o.model, "Model: a built-in name or a config.json (as run's --model)")
      ->check(non_empty_value());
  cmd->add_option("--hardware", o.hardware, "Built-in profile name or a profile YAML path")->check(non_empty_value());
  cmd->add_option("--set", o.sets, "Override a key of the base: a.b.c=value (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  cmd->add_option("--gpus", o.gpus, "GPUs of the job")->required()->transform(decimal_integer());
  cmd->add_option("--global-batch", o.global_batch, "Sequences a step")->transform(decimal_integer());
  cmd->add_option("--global-batch-tokens", o.global_batch_tokens, "Tokens a step (a multiple of --seq)")
      ->transform(decimal_integer());
  cmd->add_option("--seq", o.seq, "Tokens a sequence (default: the base's)")->transform(decimal_integer());
  cmd->add_option("--tp", o.tp, "Tensor-parallel sizes to try, e.g. 4,8 (default: powers of two up to a node)");
  cmd->add_option("--cp", o.cp, "Context-parallel sizes (default 1,2,4,8)");
  cmd->add_option("--pp", o.pp, "Pipeline stages (default: every divisor that the GPUs leave)");
  cmd->add_option("--vpp", o.vpp, "Model chunks a stage, interleaved (default 1,2)");
  cmd->add_option("--mbs", o.mbs, "Sequences a micro-batch (default 1,2,4)");
  cmd->add_option("--fsdp", o.fsdp, "ZeRO stages with dp > 1 (default none,zero1,zero2,zero3)");
  cmd->add_option("--recompute", o.recompute, "Recomputation (default none,selective,full)");
  cmd->add_option("--schedule", o.schedule, "Pipeline schedules (default 1f1b,interleaved)");
  cmd->add_option("--cp-algorithm", o.cp_algorithm, "Context-parallel algorithms (default ring)");
  cmd->add_option("--schemes", o.schemes, "TP overlap schemes (default: the base's; no_overlap,te_userbuffers)");
  cmd->add_option("--top", o.top, "Configurations to print")->check(CLI::Range(1, 1000));
  cmd->add_option("-j,--jobs", o.jobs, "Threads (default: every core)")->check(CLI::Range(0, kMaxJobs));
  cmd->add_option("--format", o.format, "Output format")->check(CLI::IsMember({"table", "json"}));
  cmd->add_option("--output,-o", o.output, "Write the report to FILE (atomically) instead of stdout");
  cmd->footer(
      "\nExamples:\n"
      "  overlap-sim plan --model llama3-70b --hardware h100-64node-ib400-rail --gpus 64 --global-batch 64 --seq 8192 "
      "--tp 8 --cp 1 --mbs 1\n"
      "  overlap-sim plan --model llama3-8b --hardware h100-sxm-8x-nvswitch --gpus 8 --global-batch-tokens 131072 "
      "--seq 8192\n"
      "  overlap-sim plan scenarios/llama3-70b-tp8xpp4-interleaved-step.yaml --gpus 64 --global-batch 64 --tp 8 "
      "--format json -o plan.json\n");
  return {cmd, [options, cmd](std::ostream& out, std::ostream& err) {
            check_output_flags({{"-o", &options->output, cmd->get_option("--output")}});
            cmd_plan(*options, out, err);
            return kExitOk;
          }};
}

namespace {

void run_plan(const PlanCommandOptions& o, std::ostream& out, std::ostream& err, const sim::SweepWorld& world) {
  if (o.gpus < 1 || o.gpus > 1'000'000) throw UsageError(fmt::format("--gpus {}: give 1 to 1,000,000 GPUs", o.gpus));
  if ((o.global_batch > 0) == (o.global_batch_tokens > 0))
    throw UsageError("plan: give the global batch once, as --global-batch SEQUENCES or --global-batch-tokens TOKENS "
                     "(a positive number)");
  if (o.global_batch < 0 || o.global_batch_tokens < 0 || o.seq < 0)
    throw UsageError("plan: --global-batch, --global-batch-tokens and --seq must be positive");
  sim::PlanQuery q;
  q.axes = axes_of(o);
  q.base = load_base(o, q.hardware_dir);
  const auto* t = std::get_if<sim::Transformer>(&q.base.workload.shape);
  if (q.base.workload.kind != sim::WorkloadKind::transformer || t == nullptr)
    throw InputError(q.base.file, 0, "workload.kind",
                     fmt::format("plan searches a transformer's training step; this base is '{}'", sim::workload_kind_name(q.base.workload.kind)));
  q.gpus = static_cast<int>(o.gpus);
  if (q.base.hardware.fabric.num_gpus > 0 && q.gpus > q.base.hardware.fabric.num_gpus)
    throw UsageError(fmt::format("--gpus {}: the profile {} has {} GPUs (fabric.num_gpus)", q.gpus,
                                 q.base.hardware_name, q.base.hardware.fabric.num_gpus));
  q.seq = o.seq > 0 ? o.seq : t->seq;
  if (o.global_batch_tokens > 0) {
    if (o.global_batch_tokens % q.seq != 0)
      throw UsageError(fmt::format("--global-batch-tokens {} is not a whole number of {}-token sequences (--seq)",
                                   o.global_batch_tokens, q.seq));
    q.global_batch = o.global_batch_tokens / q.seq;
  } else {
    q.global_batch = o.global_batch;
  }
  if (o.scenario.empty() && q.axes.schemes.empty()) q.axes.schemes = kPlanSchemes;
  q.axes = sim::resolve_plan_axes(q.axes, q.base, q.gpus);
  // Under mpirun the ranks on one machine share its cores, as a sweep's do.
  q.jobs = o.jobs > 0 ? o.jobs : std::max(1, sim::default_jobs() / std::max(1, world.local_size()));
  if (sim::plan_candidates(q).empty()) refuse_empty_search(q);
  sim::PlanOptions options;
  options.world = &world;
  const sim::PlanResult result = sim::plan_search(q, options);
  if (result.ranking.empty()) refuse_no_result(result);
  // Every rank holds the whole result; rank 0 alone writes it.
  if (world.rank() != 0) return;
  const std::string text = o.format == "json" ? sim::plan_report_json(result, o.top).dump(2) + "\n"
                                              : sim::format_plan_report(result, o.top);
  if (!o.output.empty() && o.output != "-") {
    write_output(o.output, text);
    err << "wrote " << o.output << "\n";
  } else {
    out << text;
  }
}

}  // namespace

void cmd_plan(const PlanCommandOptions& o, std::ostream& out, std::ostream& err) {
  run_on_mpi_world("search", [&](sim::SweepWorld& world) { run_plan(o, out, err, world); }, err);
}

}  // namespace overlap::tools
