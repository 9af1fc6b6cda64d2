// The configuration search of `overlap-sim plan` (plan_search.hpp): enumerate, load each configuration
// as a scenario, prune by memory, simulate the rest as `run` does, rank.
#include "sim/plan_search.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "cost_model/input_error.hpp"
#include "cost_model/units.hpp"
#include "sim/backward_shapes.hpp"
#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "sim/pipeline_step.hpp"
#include "sim/step_memory.hpp"
#include "sim/sweep_mpi.hpp"
#include "sim/sweep_parallel.hpp"

namespace overlap::sim {

namespace {

std::vector<int> powers_of_two_up_to(int limit) {
  std::vector<int> v;
  for (int x = 1; x <= limit; x *= 2) v.push_back(x);
  return v;
}

std::vector<int> divisors_of(int n) {
  std::vector<int> v;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) v.push_back(d);
  return v;
}

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// The GPUs one NVLink domain holds: tensor parallelism beyond it would put every TP collective on the NIC,
// which no production job does (Megatron-LM keeps TP inside a node; Narayanan et al. SC'21 Sec. 3.3).
int node_gpus(const HardwareProfile& hw) {
  return hw.fabric.gpus_per_node > 0 ? hw.fabric.gpus_per_node : std::max(1, hw.fabric.num_gpus);
}

// The schedules a (pp, vpp) takes: none without stages; interleaved alone with vpp > 1; the listed
// non-interleaved schedules with vpp = 1.
std::vector<std::optional<PipelineSchedule>> schedules_for(int pp, int vpp, const std::vector<PipelineSchedule>& listed) {
  std::vector<std::optional<PipelineSchedule>> out;
  if (pp == 1) {
    out.emplace_back(std::nullopt);
    return out;
  }
  for (PipelineSchedule s : listed)
    if ((vpp > 1) == (s == PipelineSchedule::interleaved)) out.emplace_back(s);
  return out;
}

// The per-GPU model FLOPs of a job's step: the whole model's forward for one micro-batch on one TP rank
// (workload_forward_flops, GEMMs and core attention at the full sequence), x 3 for forward and backward
// (PaLM, Chowdhery et al., App. B; the step's own MFU uses the same count), x micro-batches, shared by
// the cp x pp GPUs that hold one TP rank's part of the model and sequence.
double job_model_flops_per_gpu(const Workload& w) {
  Workload whole = w;
  whole.training.job = JobParallel{};
  whole.training.pass = Pass::step;
  const JobParallel& j = w.training.job;
  return 3.0 * workload_forward_flops(whole) * static_cast<double>(j.micro_batches) /
         static_cast<double>(std::max(1, j.cp) * std::max(1, j.pp));
}

double peak_flops(const Workload& w, const HardwareProfile& hw) {
  const auto peak = hw.gpu.peak_tflops.find(dtype_name(workload_dtype(w)));
  return peak == hw.gpu.peak_tflops.end() ? 0.0 : peak->second * 1e12;
}

const SchemeResult* result_of(const std::vector<SchemeResult>& results, const std::string& scheme) {
  for (const SchemeResult& r : results)
    if (r.scheme == scheme) return &r;
  return nullptr;
}

// One candidate through the simulator, as `run` runs its scenario (tools/cmd_run.cpp): a plain step
// through evaluate_all; a job's stage step of one micro-batch, then the schedule over its passes
// (evaluate_pipeline, given that stage step for its exposed DP).
void simulate_candidate(const Workload& w, const HardwareProfile& hardware, Fidelity fidelity, const SchemeSpec& spec,
                        int gpus, PlanOutcome& o) {
  const std::vector<SchemeRequest> request{SchemeRequest{spec.name, spec.params}};
  EvaluateOptions keep_going;
  keep_going.keep_going = true;
  const auto fail = [&](std::string why) {
    o.verdict = PlanVerdict::failed;
    o.reason = std::move(why);
  };
  o.job = w.training.job.active();
  if (!o.job) {
    const std::vector<SchemeResult> results = evaluate_all(request, w, hardware, fidelity, keep_going);
    const SchemeResult* r = result_of(results, spec.name);
    if (r == nullptr) return fail(fmt::format("scheme {} does not apply to this workload", spec.name));
    if (r->failed()) return fail(r->error);
    o.step_ps = r->latency_ps;
    o.tokens_per_s_per_gpu = r->step.tokens_per_s / gpus;
    o.mfu = r->step.mfu;
    o.exposed_tp_ps = r->step.exposed_tp_ps;
    o.exposed_dp_ps = r->step.exposed_dp_ps;
    return;
  }
  const PipelineParallel pp = pipeline_parallel_of(w);
  const std::vector<SchemeResult> stage_steps =
      evaluate_all(request, stage_workload(w, pp), hardware, fidelity, keep_going);
  const SchemeResult* stage = result_of(stage_steps, spec.name);
  if (stage == nullptr) return fail(fmt::format("scheme {} does not apply to this workload", spec.name));
  if (stage->failed()) return fail(stage->error);
  const std::vector<PipelineStepResult> jobs = evaluate_pipeline(request, w, hardware, fidelity, pp, &stage_steps);
  if (jobs.empty()) return fail(fmt::format("scheme {} has no pipeline result", spec.name));
  const PipelineStepResult& r = jobs.front();
  o.step_ps = r.step_ps;
  o.tokens_per_s_per_gpu = r.tokens_per_s / gpus;
  const double peak = peak_flops(w, hardware);
  const double seconds = static_cast<double>(r.step_ps) * 1e-12;
  o.mfu = peak > 0 && seconds > 0 ? job_model_flops_per_gpu(w) / (seconds * peak) : 0;
  // The stage step is one micro-batch through the stage's layers; every micro-batch repeats its TP traffic.
  o.exposed_tp_ps = stage->step.exposed_tp_ps * static_cast<Ps>(pp.micro_batches);
  o.exposed_dp_ps = r.exposed_dp_ps;
  o.exposed_pp_ps = r.bubble_ps;
  o.exposed_cp_ps = r.exposed_cp_ps;
  o.bubble_fraction = r.bubble_fraction;
}

// What simulating a candidate sets in its outcome, as JSON (integers exact, doubles to the digits that
// read back to the same double), for the ranks of an MPI search to exchange.
nlohmann::json simulated_fields(const PlanOutcome& o) {
  return {static_cast<int>(o.verdict), o.reason, o.step_ps, o.tokens_per_s_per_gpu, o.mfu, o.exposed_tp_ps,
          o.exposed_dp_ps, o.exposed_pp_ps, o.exposed_cp_ps, o.bubble_fraction, o.job};
}

void read_simulated_fields(const nlohmann::json& j, PlanOutcome& o) {
  o.verdict = static_cast<PlanVerdict>(j.at(0).get<int>());
  o.reason = j.at(1).get<std::string>();
  o.step_ps = j.at(2).get<Ps>();
  o.tokens_per_s_per_gpu = j.at(3).get<double>();
  o.mfu = j.at(4).get<double>();
  o.exposed_tp_ps = j.at(5).get<Ps>();
  o.exposed_dp_ps = j.at(6).get<Ps>();
  o.exposed_pp_ps = j.at(7).get<Ps>();
  o.exposed_cp_ps = j.at(8).get<Ps>();
  o.bubble_fraction = j.at(9).get<double>();
  o.job = j.at(10).get<bool>();
}

// Every rank's simulated outcomes onto every rank: each sends [index, fields] for its share to rank 0,
// which merges them and sends the whole list back.
void exchange_simulated(const SweepWorld& world, const std::vector<std::size_t>& mine, PlanResult& result) {
  nlohmann::json own = nlohmann::json::array();
  for (const std::size_t i : mine) own.push_back({i, simulated_fields(result.outcomes[i])});
  std::string all;
  if (world.rank() == 0) {
    nlohmann::json merged = nlohmann::json::array();
    for (const std::string& part : world.gather(own.dump()))
      for (const nlohmann::json& entry : nlohmann::json::parse(part)) merged.push_back(entry);
    all = merged.dump();
  } else {
    (void)world.gather(own.dump());
  }
  world.broadcast(all);
  for (const nlohmann::json& entry : nlohmann::json::parse(all))
    read_simulated_fields(entry.at(1), result.outcomes.at(entry.at(0).get<std::size_t>()));
}

}  // namespace

const char* plan_verdict_name(PlanVerdict v) {
  switch (v) {
    case PlanVerdict::ranked: return "ranked";
    case PlanVerdict::out_of_memory: return "out_of_memory";
    case PlanVerdict::invalid: return "invalid";
    case PlanVerdict::failed: return "failed";
  }
  return "?";
}

PlanAxes resolve_plan_axes(const PlanAxes& given, const Scenario& base, int gpus) {
  PlanAxes a = given;
  if (a.tp.empty()) a.tp = powers_of_two_up_to(std::min(node_gpus(base.hardware), std::max(1, gpus)));
  if (a.cp.empty()) a.cp = {1, 2, 4, 8};
  if (a.vpp.empty()) a.vpp = {1, 2};
  if (a.micro_batch_size.empty()) a.micro_batch_size = {1, 2, 4};
  if (a.fsdp.empty()) a.fsdp = {Sharding::none, Sharding::zero1, Sharding::zero2, Sharding::zero3};
  if (a.recompute.empty()) a.recompute = {Recompute::none, Recompute::selective, Recompute::full};
  if (a.schedules.empty()) a.schedules = {PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved};
  if (a.cp_algorithm.empty()) a.cp_algorithm = {ContextParallel::ring};
  if (a.schemes.empty())
    for (const SchemeSpec& s : base.schemes) a.schemes.push_back(s.name);
  // pp stays empty: every divisor of what tp x cp leaves (plan_candidates).
  return a;
}

std::vector<PlanCandidate> plan_candidates(const PlanQuery& q) {
  const PlanAxes& a = q.axes;
  std::vector<PlanCandidate> out;
  for (int tp : a.tp)
    for (int cp : a.cp) {
      if (tp < 1 || cp < 1 || q.gpus % (tp * cp) != 0) continue;
      const int rest = q.gpus / (tp * cp);
      for (int pp : divisors_of(rest)) {
        if (!a.pp.empty() && !contains(a.pp, pp)) continue;
        const int dp = rest / pp;
        for (int vpp : a.vpp) {
          if (vpp < 1 || (pp == 1 && vpp != 1)) continue;
          for (const auto& schedule : schedules_for(pp, vpp, a.schedules)) {
            std::vector<std::optional<ContextParallel>> algorithms;
            if (cp == 1) algorithms.emplace_back(std::nullopt);
            else
              for (ContextParallel c : a.cp_algorithm) algorithms.emplace_back(c);
            for (const auto& algorithm : algorithms) {
              std::vector<Sharding> shardings = dp == 1 ? std::vector<Sharding>{Sharding::none} : a.fsdp;
              for (Sharding fsdp : shardings)
                for (int mbs : a.micro_batch_size) {
                  if (mbs < 1 || q.global_batch % (static_cast<std::int64_t>(dp) * mbs) != 0) continue;
                  for (Recompute recompute : a.recompute)
                    for (const std::string& scheme : a.schemes) {
                      PlanCandidate c;
                      c.tp = tp, c.cp = cp, c.pp = pp, c.vpp = vpp, c.dp = dp, c.fsdp = fsdp;
                      c.micro_batch_size = mbs;
                      c.micro_batches = q.global_batch / (static_cast<std::int64_t>(dp) * mbs);
                      c.recompute = recompute;
                      c.schedule = schedule;
                      c.cp_algorithm = algorithm;
                      c.scheme = scheme;
                      c.index = static_cast<int>(out.size());
                      out.push_back(std::move(c));
                    }
                }
            }
          }
        }
      }
    }
  return out;
}

std::vector<std::string> plan_candidate_sets(const PlanCandidate& c, std::int64_t seq) {
  std::string parallel = fmt::format("{{dp: {}", c.dp);
  if (c.dp > 1) parallel += fmt::format(", fsdp: {}", sharding_name(c.fsdp));
  if (c.pp > 1) parallel += fmt::format(", pp: {}", c.pp);
  if (c.vpp > 1) parallel += fmt::format(", vpp: {}", c.vpp);
  if (c.micro_batches > 1) parallel += fmt::format(", micro_batches: {}", c.micro_batches);
  if (c.schedule) parallel += fmt::format(", schedule: {}", pipeline_schedule_name(*c.schedule));
  if (c.cp > 1) parallel += fmt::format(", cp: {}", c.cp);
  if (c.cp_algorithm) parallel += fmt::format(", cp_algorithm: {}", context_parallel_name(*c.cp_algorithm));
  parallel += "}";
  return {fmt::format("workload.tp={}", c.tp),
          fmt::format("workload.batch={}", c.micro_batch_size),
          fmt::format("workload.seq={}", seq),
          "workload.pass=step",
          fmt::format("workload.recompute={}", recompute_name(c.recompute)),
          "workload.parallel=" + parallel};
}

std::string plan_candidate_label(const PlanCandidate& c) {
  std::string s = fmt::format("tp {} cp {} pp {}", c.tp, c.cp, c.pp);
  if (c.vpp > 1) s += fmt::format(" vpp {}", c.vpp);
  s += fmt::format(" dp {}", c.dp);
  if (c.dp > 1) s += fmt::format(" {}", sharding_name(c.fsdp));
  s += fmt::format(" mbs {} x {}", c.micro_batch_size, c.micro_batches);
  s += fmt::format(" {}", recompute_name(c.recompute));
  if (c.schedule) s += fmt::format(" {}", pipeline_schedule_name(*c.schedule));
  if (c.cp_algorithm) s += fmt::format(" {}", context_parallel_name(*c.cp_algorithm));
  return s + " " + c.scheme;
}

PlanResult plan_search(const PlanQuery& query, const PlanOptions& options) {
  PlanResult result;
  result.query = query;
  result.simulate_all = options.simulate_all;
  result.hbm_bytes = query.base.hardware.gpu.hbm_bytes;
  const std::vector<PlanCandidate> candidates = plan_candidates(query);
  if (candidates.empty()) throw std::invalid_argument("no candidate configuration: nothing to search");
  result.outcomes.resize(candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i) result.outcomes[i].candidate = candidates[i];

  // Each candidate loaded as the base with its --set overrides and its scheme alone (a scheme that does
  // not apply to the candidate's workload, e.g. a TP overlap at tp 1, is the loader's to refuse), then
  // sized. The profile is the base's for every candidate: the overrides touch only the workload.
  std::vector<std::optional<Workload>> workloads(candidates.size());
  std::vector<SchemeSpec> specs(candidates.size());
  parallel_for(candidates.size(), query.jobs, [&](std::size_t i) {
    PlanOutcome& o = result.outcomes[i];
    ScenarioOptions load;
    load.sets = query.base.sets;
    for (const std::string& s : plan_candidate_sets(candidates[i], query.seq)) load.sets.push_back(s);
    load.sets.push_back("schemes=[" + candidates[i].scheme + "]");
    load.hardware_dir = query.hardware_dir;
    load.validate_sweep = false;
    load.check_ignored_sweep = false;
    try {
      Scenario sc = load_scenario_text(query.base.text, query.base.file, load);
      o.verdict = PlanVerdict::ranked;
      for (const StepMemory& m : stage_memories(sc.workload, sc.hardware)) {
        if (!o.peak_bytes || m.bytes.peak_bytes > *o.peak_bytes) {
          o.peak_bytes = m.bytes.peak_bytes;
          o.fullest_stage = m.stage;
        }
        if (!m.fits()) o.verdict = PlanVerdict::out_of_memory;
      }
      // The base's own parameters for the scheme, where it names them.
      specs[i] = sc.schemes.front();
      for (const SchemeSpec& b : query.base.schemes)
        if (b.name == specs[i].name) specs[i] = b;
      workloads[i] = std::move(sc.workload);
    } catch (const InputError& e) {
      o.verdict = PlanVerdict::invalid;
      o.reason = e.message();
      o.reason_key = e.key_path();
    } catch (const std::invalid_argument& e) {
      o.verdict = PlanVerdict::invalid;
      o.reason = e.what();
      o.reason_key = "workload.parallel";
    }
  });

  // The survivors through the simulator, one candidate a task.
  std::vector<std::size_t> to_simulate;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const PlanVerdict v = result.outcomes[i].verdict;
    if (v == PlanVerdict::ranked || (options.simulate_all && v == PlanVerdict::out_of_memory)) to_simulate.push_back(i);
  }
  // Under mpirun this rank's share: every size-th candidate from its rank (the ranks load and prune alike).
  const bool distributed = options.world != nullptr && options.world->distributed();
  std::vector<std::size_t> mine;
  for (std::size_t t = 0; t < to_simulate.size(); ++t)
    if (!distributed || static_cast<int>(t % static_cast<std::size_t>(options.world->size())) == options.world->rank())
      mine.push_back(to_simulate[t]);
  parallel_for(mine.size(), query.jobs, [&](std::size_t t) {
    const std::size_t i = mine[t];
    PlanOutcome& o = result.outcomes[i];
    const PlanVerdict before = o.verdict;
    try {
      simulate_candidate(*workloads[i], query.base.hardware, query.base.fidelity, specs[i], query.gpus, o);
    } catch (const InputError& e) {
      o.verdict = PlanVerdict::failed;
      o.reason = e.message();
    } catch (const std::invalid_argument& e) {  // a configuration the composition refuses
      o.verdict = PlanVerdict::failed;
      o.reason = e.what();
    } catch (const RangeError& e) {  // times or bytes beyond what the simulator counts
      o.verdict = PlanVerdict::failed;
      o.reason = std::string("cannot simulate this: ") + e.what();
    } catch (const ResourceError& e) {  // hardware the model cannot simulate for this candidate
      o.verdict = PlanVerdict::failed;
      o.reason = std::string("cannot simulate this: ") + e.what();
    }
    if (before == PlanVerdict::out_of_memory && o.verdict != PlanVerdict::failed) o.verdict = PlanVerdict::out_of_memory;
  });
  if (distributed) exchange_simulated(*options.world, mine, result);
  result.simulated = static_cast<int>(to_simulate.size());

  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (result.outcomes[i].verdict == PlanVerdict::ranked) result.ranking.push_back(static_cast<int>(i));
  std::stable_sort(result.ranking.begin(), result.ranking.end(), [&](int x, int y) {
    const PlanOutcome& a = result.outcomes[static_cast<std::size_t>(x)];
    const PlanOutcome& b = result.outcomes[static_cast<std::size_t>(y)];
    return a.step_ps != b.step_ps ? a.step_ps < b.step_ps : x < y;
  });
  return result;
}

}  // namespace overlap::sim
