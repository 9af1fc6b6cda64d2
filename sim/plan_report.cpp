// The report of `overlap-sim plan` (plan_report.hpp).
#include "sim/plan_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <variant>

namespace overlap::sim {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double us(Ps ps) { return static_cast<double>(ps) / 1e6; }
double ms(Ps ps) { return static_cast<double>(ps) / 1e9; }

std::string model_name(const PlanQuery& q) {
  const Transformer* t = std::get_if<Transformer>(&q.base.workload.shape);
  return t != nullptr && !t->model.empty() ? t->model : q.base.name;
}

// The rank (1-based) of the first ranked outcome with the same step as ranking[k], when it is an
// earlier one: the tie the table names.
int tie_with(const PlanResult& r, std::size_t k) {
  const Ps step = r.outcomes[static_cast<std::size_t>(r.ranking[k])].step_ps;
  for (std::size_t j = 0; j < k; ++j)
    if (r.outcomes[static_cast<std::size_t>(r.ranking[j])].step_ps == step) return static_cast<int>(j) + 1;
  return 0;
}

nlohmann::json config_json(const PlanCandidate& c, std::int64_t seq) {
  nlohmann::json j = {{"tp", c.tp},
                      {"cp", c.cp},
                      {"pp", c.pp},
                      {"vpp", c.vpp},
                      {"dp", c.dp},
                      {"fsdp", sharding_name(c.fsdp)},
                      {"micro_batch_size", c.micro_batch_size},
                      {"micro_batches", c.micro_batches},
                      {"recompute", recompute_name(c.recompute)},
                      {"schedule", nullptr},
                      {"cp_algorithm", nullptr},
                      {"scheme", c.scheme}};
  if (c.schedule) j["schedule"] = std::string(pipeline_schedule_name(*c.schedule));
  if (c.cp_algorithm) j["cp_algorithm"] = context_parallel_name(*c.cp_algorithm);
  j["sets"] = plan_candidate_sets(c, seq);
  return j;
}

nlohmann::json outcome_json(const PlanResult& r, const PlanOutcome& o) {
  nlohmann::json j = {{"index", o.candidate.index},
                      {"label", plan_candidate_label(o.candidate)},
                      {"config", config_json(o.candidate, r.query.seq)},
                      {"verdict", plan_verdict_name(o.verdict)},
                      {"peak_memory_bytes", nullptr},
                      {"fullest_stage", o.fullest_stage}};
  if (o.peak_bytes) j["peak_memory_bytes"] = *o.peak_bytes;
  if (o.verdict == PlanVerdict::ranked || (r.simulate_all && o.verdict == PlanVerdict::out_of_memory)) {
    j["step_us"] = us(o.step_ps);
    j["tokens_per_s_per_gpu"] = o.tokens_per_s_per_gpu;
    j["mfu"] = o.mfu;
    j["exposed_tp_us"] = us(o.exposed_tp_ps);
    j["exposed_dp_us"] = us(o.exposed_dp_ps);
    j["exposed_pp_us"] = us(o.exposed_pp_ps);
    j["exposed_cp_us"] = us(o.exposed_cp_ps);
    j["bubble_fraction"] = o.bubble_fraction;
    j["job"] = o.job;
  }
  if (!o.reason.empty()) j["reason"] = o.reason;
  if (!o.reason_key.empty()) j["reason_key"] = o.reason_key;
  return j;
}

struct Losers {
  std::vector<const PlanOutcome*> slower;         // ranked beyond the top, fastest first
  std::vector<const PlanOutcome*> out_of_memory;  // smallest peak first (ties by index)
  std::vector<const PlanOutcome*> invalid;
  std::vector<const PlanOutcome*> failed;
  std::map<std::string, std::vector<const PlanOutcome*>> invalid_by_key;  // key -> outcomes, enumeration order
};

Losers losers_of(const PlanResult& r, int top) {
  Losers l;
  for (std::size_t k = static_cast<std::size_t>(std::max(0, top)); k < r.ranking.size(); ++k)
    l.slower.push_back(&r.outcomes[static_cast<std::size_t>(r.ranking[k])]);
  for (const PlanOutcome& o : r.outcomes) {
    if (o.verdict == PlanVerdict::out_of_memory) l.out_of_memory.push_back(&o);
    if (o.verdict == PlanVerdict::invalid) {
      l.invalid.push_back(&o);
      l.invalid_by_key[o.reason_key].push_back(&o);
    }
    if (o.verdict == PlanVerdict::failed) l.failed.push_back(&o);
  }
  std::stable_sort(l.out_of_memory.begin(), l.out_of_memory.end(), [](const PlanOutcome* a, const PlanOutcome* b) {
    return a->peak_bytes.value_or(0) < b->peak_bytes.value_or(0);
  });
  return l;
}

std::string gib(std::optional<Bytes> b) { return b ? fmt::format("{:.2f}", static_cast<double>(*b) / kGiB) : "-"; }

}  // namespace

nlohmann::json plan_report_json(const PlanResult& r, int top) {
  const PlanQuery& q = r.query;
  const Losers l = losers_of(r, top);
  nlohmann::json out;
  out["query"] = {{"model", model_name(q)},
                  {"hardware", q.base.hardware_name},
                  {"gpus", q.gpus},
                  {"global_batch", q.global_batch},
                  {"seq", q.seq},
                  {"tokens_per_step", q.global_batch * q.seq},
                  {"hbm_bytes", r.hbm_bytes > 0 ? nlohmann::json(r.hbm_bytes) : nlohmann::json(nullptr)}};
  out["counts"] = {{"candidates", r.outcomes.size()},
                   {"ranked", r.ranking.size()},
                   {"slower", l.slower.size()},
                   {"out_of_memory", l.out_of_memory.size()},
                   {"invalid", l.invalid.size()},
                   {"failed", l.failed.size()},
                   {"simulated", r.simulated}};
  out["best"] = nlohmann::json::array();
  for (std::size_t k = 0; k < r.ranking.size() && k < static_cast<std::size_t>(std::max(0, top)); ++k) {
    nlohmann::json j = outcome_json(r, r.outcomes[static_cast<std::size_t>(r.ranking[k])]);
    j["rank"] = k + 1;
    const int tie = tie_with(r, k);
    j["tie_with"] = tie > 0 ? nlohmann::json(tie) : nlohmann::json(nullptr);
    out["best"].push_back(std::move(j));
  }
  const auto nearest = [&](const std::vector<const PlanOutcome*>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (std::size_t k = 0; k < v.size() && k < static_cast<std::size_t>(kPlanNearestLosers); ++k)
      a.push_back(outcome_json(r, *v[k]));
    return a;
  };
  nlohmann::json invalid_keys = nlohmann::json::array();
  for (const auto& [key, v] : l.invalid_by_key)
    invalid_keys.push_back({{"key", key}, {"count", v.size()}, {"example", outcome_json(r, *v.front())}});
  out["losers"] = {{"slower", {{"count", l.slower.size()}, {"nearest", nearest(l.slower)}}},
                   {"out_of_memory", {{"count", l.out_of_memory.size()}, {"nearest", nearest(l.out_of_memory)}}},
                   {"invalid", {{"count", l.invalid.size()}, {"by_key", invalid_keys}}},
                   {"failed", {{"count", l.failed.size()}, {"first", nearest(l.failed)}}}};
  out["definitions"] = {
      {"step_us", "the step as `run` reports it: a job's schedule makespan plus the exposed DP after it; a plain "
                  "step's latency"},
      {"tokens_per_s_per_gpu", "global batch x seq / step / gpus"},
      {"mfu", "model FLOPs per GPU (GEMMs and core attention, forward 1x, backward 2x; PaLM App. B) / (step x peak)"},
      {"peak_memory_bytes", "the fullest stage's peak per GPU (sim/step_memory.hpp)"},
      {"exposed_tp_us", "a job: the stage step's exposed TP for one micro-batch x micro-batches; a step: its own"},
      {"exposed_pp_us", "the busiest stage's idle time in the schedule: bubble and send/recv"},
      {"exposed_cp_us", "context parallelism's transfers not hidden behind attention, over the step"},
      {"tie_with", "the rank of an earlier configuration with the same step, to the picosecond"}};
  return out;
}

std::string format_plan_report(const PlanResult& r, int top) {
  const PlanQuery& q = r.query;
  const Losers l = losers_of(r, top);
  std::string s = fmt::format("plan: {} on {} GPUs of {}, global batch {} x {} tokens ({} tokens a step)\n",
                              model_name(q), q.gpus, q.base.hardware_name, q.global_batch, q.seq,
                              q.global_batch * q.seq);
  s += fmt::format("{} candidates: {} ranked, {} do not fit memory, {} invalid, {} failed ({} simulated)\n\n",
                   r.outcomes.size(), r.ranking.size(), l.out_of_memory.size(), l.invalid.size(), l.failed.size(),
                   r.simulated);
  s += fmt::format("{:>4}  {:<58} {:>11} {:>10} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9}  {}\n", "rank", "configuration",
                   "step (ms)", "tok/s/GPU", "MFU %", "mem GiB", "TP exp", "DP exp", "PP exp", "CP exp", "sim  tie");
  for (std::size_t k = 0; k < r.ranking.size() && k < static_cast<std::size_t>(std::max(0, top)); ++k) {
    const PlanOutcome& o = r.outcomes[static_cast<std::size_t>(r.ranking[k])];
    const int tie = tie_with(r, k);
    s += fmt::format("{:>4}  {:<58} {:>11.3f} {:>10.1f} {:>6.1f} {:>9} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f}  {:<4} {}\n", k + 1,
                     plan_candidate_label(o.candidate), ms(o.step_ps), o.tokens_per_s_per_gpu, 100 * o.mfu,
                     gib(o.peak_bytes), ms(o.exposed_tp_ps), ms(o.exposed_dp_ps), ms(o.exposed_pp_ps),
                     ms(o.exposed_cp_ps), o.job ? "job" : "step", tie > 0 ? fmt::format("= #{}", tie) : "");
  }
  s += "(exposed times in ms over the step; a job's TP: its stage step's for one micro-batch x micro-batches;\n"
       " sim: job = the pipeline composition, without the step's memory-bound kernels and optimizer;\n"
       " step = one plain step with them: compare like with like, docs/guide/plan.md)\n";
  s += "\nwhy the others lost:\n";
  const PlanOutcome* best = r.ranking.empty() ? nullptr : &r.outcomes[static_cast<std::size_t>(r.ranking.front())];
  s += fmt::format("  slower: {}\n", l.slower.size());
  for (std::size_t k = 0; k < l.slower.size() && k < static_cast<std::size_t>(kPlanNearestLosers); ++k)
    s += fmt::format("    {:<58} {:.3f} ms (+{:.2f} % over #1)\n", plan_candidate_label(l.slower[k]->candidate),
                     ms(l.slower[k]->step_ps),
                     best && best->step_ps > 0
                         ? 100.0 * static_cast<double>(l.slower[k]->step_ps - best->step_ps) / static_cast<double>(best->step_ps)
                         : 0.0);
  s += fmt::format("  does not fit memory: {}{}\n", l.out_of_memory.size(),
                   r.hbm_bytes > 0 ? fmt::format(" (HBM {:.2f} GiB)", static_cast<double>(r.hbm_bytes) / kGiB) : "");
  for (std::size_t k = 0; k < l.out_of_memory.size() && k < static_cast<std::size_t>(kPlanNearestLosers); ++k)
    s += fmt::format("    {:<58} {} GiB{}\n", plan_candidate_label(l.out_of_memory[k]->candidate),
                     gib(l.out_of_memory[k]->peak_bytes),
                     l.out_of_memory[k]->fullest_stage >= 0 ? fmt::format(" at stage {}", l.out_of_memory[k]->fullest_stage)
                                                            : std::string());
  s += fmt::format("  invalid: {}\n", l.invalid.size());
  for (const auto& [key, v] : l.invalid_by_key)
    s += fmt::format("    {} x {}: e.g. {}: {}\n", v.size(), key.empty() ? "(no key)" : key,
                     plan_candidate_label(v.front()->candidate), v.front()->reason);
  s += fmt::format("  failed: {}\n", l.failed.size());
  for (std::size_t k = 0; k < l.failed.size() && k < static_cast<std::size_t>(kPlanNearestLosers); ++k)
    s += fmt::format("    {}: {}\n", plan_candidate_label(l.failed[k]->candidate), l.failed[k]->reason);
  return s;
}

}  // namespace overlap::sim
