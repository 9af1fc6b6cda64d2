#include "sim/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <type_traits>
#include <variant>

#include <fmt/format.h>

#include "cost_model/collective_primitive.hpp"

namespace overlap::sim {

const char* const kExposedCommDefinition =
    "exposed comm = latency - compute-only latency (the same graph re-run with every communication op "
    "taking zero time)";

namespace {

// Picoseconds as microseconds with all six decimals: exact, so CSV output never depends on
// floating-point printing.
std::string exact_us(Ps ps) {
  const Ps mag = ps < 0 ? -ps : ps;
  return fmt::format("{}{}.{:06}", ps < 0 ? "-" : "", mag / kPsPerUs, mag % kPsPerUs);
}

// Fixed precision; "-" for a value that is not finite (never print NaN).
std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "-";
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (s.find_first_not_of("-0.") == std::string::npos && s[0] == '-') s.erase(0, 1);  // no "-0.00"
  return s;
}

std::string param_value_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// "chunks=8 schedule=ring" (params in key order; nlohmann keeps objects sorted).
std::string params_text(const nlohmann::json& params) {
  std::string out;
  if (!params.is_object()) return params.is_null() ? out : params.dump();
  for (auto it = params.begin(); it != params.end(); ++it)
    out += (out.empty() ? "" : " ") + it.key() + "=" + param_value_text(it.value());
  return out;
}

std::string scheme_label(const SchemeResult& r) {
  const std::string p = params_text(r.params);
  return p.empty() ? r.scheme : r.scheme + " (" + p + ")";
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

template <typename T>
void field(nlohmann::json& j, std::string& text, const char* key, const T& value) {
  j[key] = value;
  text += fmt::format(" {}={}", key, value);
}

}  // namespace

std::string hardware_display_name(const Scenario& scenario) {
  // A profile given by path (hardware: ../hardware/x.yaml) is named by its `name:`, else its file stem.
  if (!scenario.hardware.name.empty()) return scenario.hardware.name;
  const std::string stem = std::filesystem::path(scenario.hardware_name).stem().string();
  return stem.empty() ? scenario.hardware_name : stem;
}

std::string scenario_label(const std::string& name, const std::vector<std::string>& overrides) {
  std::string out;
  for (const std::string& o : overrides) out += (out.empty() ? "" : " ") + o;
  return out.empty() ? name : name + " (" + out + ")";
}

namespace {

// One workload of each kind at `tp`, for asking a scheme's `applies` where it runs. The shapes are
// only looked at by kind and primitive; their sizes are those of a Llama-3-70B layer.
std::vector<std::pair<std::string, Workload>> probe_workloads(int tp) {
  std::vector<std::pair<std::string, Workload>> out;
  for (Primitive p : {Primitive::all_reduce, Primitive::reduce_scatter, Primitive::all_gather, Primitive::all_to_all}) {
    GemmCollective g;
    g.m = g.n = g.k = 8192;
    g.primitive = p;
    out.push_back({primitive_name(p), Workload{WorkloadKind::gemm_collective, tp, g}});
  }
  out.push_back({"", Workload{WorkloadKind::mlp_tpsp, tp, MlpTpSp{8192, 8192, 28672, true, DType::bf16, true}}});
  out.push_back({"", Workload{WorkloadKind::attention_tpsp, tp, AttentionTpSp{1, 8192, 8192, 64, 8, true, DType::bf16, true}}});
  out.push_back({"", Workload{WorkloadKind::attention_ulysses, tp, AttentionUlysses{1, 8192, 8192, 64, true, DType::bf16}}});
  out.push_back({"", Workload{WorkloadKind::decode_stack, tp, DecodeStack{80, 8192, 28672, 64, 8, DType::fp8, -1}}});
  out.push_back({"", Workload{WorkloadKind::transformer, tp, Transformer{"custom", 1, 1, 8192, 8192, 28672, 64, 8, DType::bf16}}});
  Moe moe;  // Mixtral-8x7B's layer over `tp` EP ranks
  moe.experts = 8;
  moe.top_k = 2;
  moe.ep = tp;
  moe.d_model = 4096;
  moe.d_ffn_expert = 14336;
  moe.tokens = 8192;
  out.push_back({"", Workload{WorkloadKind::moe, tp, moe}});
  return out;
}

}  // namespace

std::string scheme_applies_to(const SchemeInfo& scheme) {
  if (!scheme.applies) return "every workload";
  auto kinds_at = [&](int tp) {
    std::vector<std::string> kinds;
    std::vector<std::string> primitives;
    std::size_t gemm_probes = 0;
    for (const auto& [primitive, w] : probe_workloads(tp)) {
      if (w.kind == WorkloadKind::gemm_collective) ++gemm_probes;
      if (!scheme.applies(w)) continue;
      if (w.kind == WorkloadKind::gemm_collective) primitives.push_back(primitive);
      else kinds.push_back(workload_kind_name(w.kind));
    }
    std::string gemm;
    if (!primitives.empty()) {
      gemm = workload_kind_name(WorkloadKind::gemm_collective);
      if (primitives.size() < gemm_probes) {
        std::string list;
        for (const auto& p : primitives) list += (list.empty() ? "" : "/") + p;
        gemm += " with " + list;
      }
      kinds.insert(kinds.begin(), gemm);
    }
    return kinds;
  };
  const std::vector<std::string> at_tp = kinds_at(8);
  if (at_tp.empty()) return "no workload";
  if (kinds_at(1) == at_tp && at_tp.size() == kWorkloadKindNames.size() &&
      at_tp.front() == workload_kind_name(WorkloadKind::gemm_collective)) return "every workload";
  std::string out;
  for (const auto& k : at_tp) out += (out.empty() ? "" : ", ") + k;
  return kinds_at(1).empty() ? out + ", tp >= 2" : out;
}

std::vector<ReportContext::Skipped> schemes_not_applying(const Workload& workload) {
  std::vector<ReportContext::Skipped> out;
  for (const SchemeInfo& s : scheme_registry()) {
    if (!s.applies || s.applies(workload)) continue;
    // A scheme that runs this kind's forward but has no backward form: that is why it is absent.
    Workload forward = workload;
    forward.training = Training{};
    // A dense-TP scheme on a transformer of a MoE model: it runs the same transformer with dense FFNs.
    Workload dense = workload;
    if (auto* t = std::get_if<Transformer>(&dense.shape); t && t->moe) {
      t->moe.reset();
      t->dense_layers = 0;
    }
    if (is_training_step(workload) && s.backward.empty() && s.applies(forward))
      out.push_back({s.name, "forward passes only: no backward form"});
    else if (has_moe_layers(workload) && !has_moe_layers(dense) && s.applies(dense))
      out.push_back({s.name, "dense FFN layers only: no MoE form"});
    else if (const Moe* m = std::get_if<Moe>(&workload.shape); m && m->expert_tp > 1 && [&] {
               // A moe scheme without an expert-TP form (sim/schemes/moe.hpp moe_expert_tp_refusal).
               Workload whole = workload;
               std::get<Moe>(whole.shape).expert_tp = 1;
               whole.tp = m->ep;
               return s.applies(whole);
             }())
      out.push_back({s.name, "moe with expert_tp 1: no expert-TP form"});
    else
      out.push_back({s.name, scheme_applies_to(s)});
  }
  return out;
}

const SchemeResult* best_result(const std::vector<SchemeResult>& results) {
  const SchemeResult* best = nullptr;
  for (const SchemeResult& r : results) {
    if (r.failed() || !(r.speedup_vs_no_overlap > 0)) continue;
    if (!best || r.speedup_vs_no_overlap > best->speedup_vs_no_overlap ||
        (r.speedup_vs_no_overlap == best->speedup_vs_no_overlap && r.latency_ps < best->latency_ps))
      best = &r;
  }
  return best;
}

std::vector<const SchemeResult*> best_results(const std::vector<SchemeResult>& results) {
  std::vector<const SchemeResult*> out;
  const SchemeResult* best = best_result(results);
  if (!best) return out;
  out.push_back(best);
  for (const SchemeResult& r : results)
    if (&r != best && !r.failed() && r.speedup_vs_no_overlap > 0 && r.latency_ps == best->latency_ps) out.push_back(&r);
  return out;
}

ReportContext report_context(const Scenario& scenario) {
  ReportContext ctx;
  ctx.scenario = scenario.name;
  ctx.hardware = hardware_display_name(scenario);
  ctx.workload = scenario.workload;
  ctx.fidelity = scenario.fidelity;
  ctx.baseline = baseline_scheme_for(scenario.workload);
  ctx.memory = step_memory(scenario.workload, scenario.hardware);
  ctx.step_kernels = step_kernel_time(scenario.workload, scenario.hardware);
  return ctx;
}

namespace {

// A MoE block's fields; in a transformer (`in_transformer`) d_model is the model's, already printed,
// and the tokens are the per-rank shard the transformer's batch x seq gives.
void moe_fields(nlohmann::json& j, std::string& text, const Moe& s, bool in_transformer) {
  field(j, text, "experts", s.experts);
  field(j, text, "top_k", s.top_k);
  if (!in_transformer) field(j, text, "d_model", s.d_model);
  field(j, text, "d_ffn_expert", s.d_ffn_expert);
  if (!in_transformer) field(j, text, "tokens", s.tokens);
  if (s.shared_experts > 0) field(j, text, "shared_experts", s.shared_experts);
  if (s.capacity_factor) field(j, text, "capacity_factor", *s.capacity_factor);
  switch (s.routing.kind) {
    case MoeRoutingSpec::Kind::uniform: field(j, text, "routing", std::string("uniform")); break;
    case MoeRoutingSpec::Kind::zipf:
      field(j, text, "routing", fmt::format("zipf: {}", s.routing.zipf_s));
      field(j, text, "seed", static_cast<std::int64_t>(s.routing.seed));
      break;
    case MoeRoutingSpec::Kind::histogram:
      field(j, text, "routing", "histogram: " + s.routing.histogram_file);
      break;
  }
  // The dispatch and combine's algorithm when it is not NCCL's (docs/guide/moe.md "Dispatch across nodes").
  if (s.all_to_all != MoeAllToAll::nccl) field(j, text, "all_to_all", std::string(moe_all_to_all_name(s.all_to_all)));
  if (s.max_nodes > 0) field(j, text, "max_nodes", s.max_nodes);
}

// The fields of the workload's shape, each kind its own.
void shape_fields(nlohmann::json& j, std::string& text, const Workload& w) {
  std::visit(
      [&](const auto& s) {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, GemmCollective>) {
          field(j, text, "m", s.m);
          field(j, text, "n", s.n);
          field(j, text, "k", s.k);
          field(j, text, "primitive", std::string(primitive_name(s.primitive)));
          field(j, text, "rmsnorm_after", s.rmsnorm_after);
        } else if constexpr (std::is_same_v<S, MlpTpSp>) {
          field(j, text, "tokens", s.tokens);
          field(j, text, "d_model", s.d_model);
          field(j, text, "d_ffn", s.d_ffn);
          field(j, text, "gated", s.gated);
          if (!s.gather_input) field(j, text, "gather_input", s.gather_input);
        } else if constexpr (std::is_same_v<S, AttentionTpSp>) {
          field(j, text, "batch", s.batch);
          field(j, text, "seq", s.seq);
          field(j, text, "d_model", s.d_model);
          field(j, text, "heads", s.heads);
          field(j, text, "kv_heads", s.kv_heads);
          if (s.head_dim > 0) field(j, text, "head_dim", s.head_dim);  // set only where it is not d_model / heads
          field(j, text, "causal", s.causal);
          if (!s.gather_input) field(j, text, "gather_input", s.gather_input);
        } else if constexpr (std::is_same_v<S, AttentionUlysses>) {
          field(j, text, "batch", s.batch);
          field(j, text, "seq", s.seq);
          field(j, text, "d_model", s.d_model);
          field(j, text, "heads", s.heads);
          field(j, text, "causal", s.causal);
        } else if constexpr (std::is_same_v<S, DecodeStack>) {
          field(j, text, "layers", s.layers);
          field(j, text, "d_model", s.d_model);
          field(j, text, "d_ffn", s.d_ffn);
          field(j, text, "heads", s.heads);
          field(j, text, "kv_heads", s.kv_heads);
          if (s.allreduce_us >= 0) field(j, text, "allreduce_us", s.allreduce_us);
        } else if constexpr (std::is_same_v<S, Moe>) {
          j["ep"] = s.ep;
          if (s.expert_tp > 1) j["expert_tp"] = s.expert_tp;
          moe_fields(j, text, s, false);
        } else if constexpr (std::is_same_v<S, Transformer>) {
          field(j, text, "model", s.model);
          field(j, text, "layers", s.layers);
          field(j, text, "batch", s.batch);
          field(j, text, "seq", s.seq);
          field(j, text, "d_model", s.d_model);
          field(j, text, "d_ffn", s.d_ffn);
          field(j, text, "heads", s.heads);
          field(j, text, "kv_heads", s.kv_heads);
          if (s.head_dim > 0) field(j, text, "head_dim", s.head_dim);  // set only where it is not d_model / heads
          // A MoE model's layers: EP folded onto the TP group (sim/workload.hpp Transformer::moe).
          if (s.moe) {
            if (s.dense_layers > 0) field(j, text, "dense_layers", s.dense_layers);
            moe_fields(j, text, *s.moe, true);
          }
        }
        field(j, text, "dtype", std::string(dtype_name(s.dtype)));
      },
      w.shape);
}

void training_fields(nlohmann::json& j, std::string& text, const Training& t) {
  // The training keys only where they differ from a forward pass alone, so a forward workload reads
  // as it always has.
  if (t.pass != Pass::forward || t.recompute != Recompute::none || t.parallel.dp > 1) {
    field(j, text, "pass", std::string(pass_name(t.pass)));
    if (t.recompute != Recompute::none) field(j, text, "recompute", std::string(recompute_name(t.recompute)));
  }
  if (t.parallel.dp > 1) {
    field(j, text, "dp", t.parallel.dp);
    field(j, text, "fsdp", std::string(sharding_name(t.parallel.fsdp)));
    if (t.parallel.fsdp == Sharding::zero3) field(j, text, "prefetch", t.parallel.prefetch);
    else field(j, text, "bucket_mb", t.parallel.bucket_mb);
  }
  if (t.job.active()) {
    field(j, text, "pp", t.job.pp);
    if (t.job.vpp > 1) field(j, text, "vpp", t.job.vpp);
    field(j, text, "micro_batches", t.job.micro_batches);
    field(j, text, "schedule", std::string(pipeline_schedule_name(t.job.schedule)));
    // Uneven first and last stages (sim/pipeline_layers.hpp); 0, layers / pp, is not printed.
    if (t.job.first_stage_layers > 0) field(j, text, "first_stage_layers", t.job.first_stage_layers);
    if (t.job.last_stage_layers > 0) field(j, text, "last_stage_layers", t.job.last_stage_layers);
    field(j, text, "cp", t.job.cp);
    if (t.job.cp > 1) field(j, text, "cp_algorithm", std::string(context_parallel_name(t.job.cp_algorithm)));
  }
}

// Both renderings of a workload from one walk over its fields, so they never disagree.
std::pair<nlohmann::json, std::string> workload_fields(const Workload& w) {
  nlohmann::json j = nlohmann::json::object();
  std::string text;
  j["kind"] = workload_kind_name(w.kind);
  j["tp"] = w.tp;
  // A moe workload's ranks are its EP ranks (Workload::tp holds ep x expert_tp for it): named as such,
  // with expert_tp when each expert's FFN is split over several GPUs.
  if (const Moe* m = std::get_if<Moe>(&w.shape))
    text = m->expert_tp > 1 ? fmt::format("{} ep={} expert_tp={}", workload_kind_name(w.kind), m->ep, m->expert_tp)
                            : fmt::format("{} ep={}", workload_kind_name(w.kind), w.tp);
  else
    text = fmt::format("{} tp={}", workload_kind_name(w.kind), w.tp);
  shape_fields(j, text, w);
  training_fields(j, text, w.training);
  return {j, text};
}

}  // namespace

std::string describe_workload(const Workload& w) { return workload_fields(w).second; }
nlohmann::json workload_json(const Workload& w) { return workload_fields(w).first; }

nlohmann::json report_json(const ReportContext& ctx, const std::vector<SchemeResult>& results) {
  nlohmann::json j;
  j["scenario"] = scenario_label(ctx.scenario, ctx.overrides);
  j["overrides"] = ctx.overrides;
  j["hardware"] = ctx.hardware;
  j["workload"] = workload_json(ctx.workload);
  j["fidelity"] = fidelity_name(ctx.fidelity);
  j["baseline"] = ctx.baseline;
  j["exposed_comm_definition"] = kExposedCommDefinition;
  nlohmann::json rows = nlohmann::json::array();
  for (const SchemeResult& r : results) {
    rows.push_back(report_row_json(r));
    // A dense transformer step's job figures (sim/job_figures.hpp; the run table's "job figures").
    if (ctx.step_kernels && !r.failed() && r.step.present) {
      const JobFigures f = job_figures(ctx.workload, r);
      rows.back()["job"] = {{"tokens_per_s_per_gpu", f.tokens_per_s_per_gpu},
                            {"model_tflops_per_gpu", f.model_tflops_per_gpu},
                            {"mfu", f.mfu},
                            {"hfu", f.hfu},
                            {"memory_bound_us", us_from_ps(ctx.step_kernels->memory_bound_ps)},
                            {"optimizer_us", us_from_ps(ctx.step_kernels->optimizer_ps)},
                            {"step_kernel_launches", ctx.step_kernels->launches}};
    }
  }
  j["results"] = rows;
  const std::vector<const SchemeResult*> tied = best_results(results);
  if (tied.empty()) {
    j["best"] = nlohmann::json();
  } else {
    const SchemeResult* best = tied.front();
    nlohmann::json all = nlohmann::json::array();
    for (const SchemeResult* r : tied) all.push_back({{"scheme", r->scheme}, {"params", r->params}});
    j["best"] = {{"scheme", best->scheme}, {"params", best->params}, {"speedup_vs_baseline", best->speedup_vs_no_overlap},
                 {"tied", all}, {"label", best_label(results)}};
  }
  nlohmann::json skipped = nlohmann::json::array();
  for (const auto& s : ctx.not_applicable) skipped.push_back({{"scheme", s.scheme}, {"applies_to", s.applies_to}});
  j["not_applicable"] = skipped;
  j["hardware_note"] = ctx.hardware_note;
  if (ctx.memory) j["memory_per_gpu"] = step_memory_json(*ctx.memory);
  if (ctx.job) j["job"] = pipeline_report_json(*ctx.job);
  if (!ctx.placeholder_sensitivity.is_null()) j["placeholder_sensitivity"] = ctx.placeholder_sensitivity;
  return j;
}

nlohmann::json report_row_json(const SchemeResult& r) {
  // A failed scheme's row says so and carries no figures (0 would read as a result).
  if (r.failed()) return {{"scheme", r.scheme}, {"params", r.params}, {"failed", true}, {"error", r.error}};
  nlohmann::json row = to_json(r);
  // Microseconds by division of the exact picoseconds: the double nearest the true value, so
  // 2171207944 ps prints as 2171.207944, not 2171.2079439999998.
  for (const char* key : {"latency", "compute_only", "comm", "exposed_comm", "bound"}) {
    const std::string ps_key = std::string(key) + "_ps";
    if (row.contains(ps_key) && row[ps_key].is_number_integer())
      row[std::string(key) + "_us"] = static_cast<double>(row[ps_key].get<std::int64_t>()) / 1e6;
  }
  return row;
}

std::string format_json(const ReportContext& ctx, const std::vector<SchemeResult>& results) {
  return report_json(ctx, results).dump(2) + "\n";
}

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> cols = {
      "scenario",  "hardware",        "scheme",   "params",       "latency_us",
      "compute_only_us", "comm_us",   "exposed_comm_us", "overlap_efficiency", "speedup_vs_no_overlap",
      "bound_us",  "pct_of_bound",    "sms_lost_to_comm", "reason"};
  return cols;
}

const std::vector<std::string>& csv_step_columns() {
  static const std::vector<std::string> cols = {
      "pass",          "forward_us",         "forward_compute_only_us", "forward_exposed_comm_us",
      "forward_comm_us", "forward_overlap_efficiency", "backward_us",   "backward_compute_only_us",
      "backward_exposed_comm_us", "backward_comm_us", "backward_overlap_efficiency", "exposed_tp_us",
      "exposed_dp_us", "model_tflop",        "mfu",                     "tokens_per_s"};
  return cols;
}

std::vector<std::string> csv_columns(bool step_columns) {
  std::vector<std::string> cols = csv_columns();
  if (step_columns) cols.insert(cols.end(), csv_step_columns().begin(), csv_step_columns().end());
  return cols;
}

namespace {

// The step columns of one result: its figures, or empty fields when it has none (a forward point of a
// sweep that also runs steps, a failed scheme).
std::vector<std::string> csv_step_fields(const SchemeResult& r) {
  const StepFigures& s = r.step;
  if (r.failed() || !s.present) return std::vector<std::string>(csv_step_columns().size());
  return {s.pass,
          exact_us(s.forward.latency_ps),
          exact_us(s.forward.compute_only_ps),
          exact_us(s.forward.exposed_comm_ps),
          exact_us(s.forward.comm_ps),
          fixed(s.forward.overlap_efficiency, 6),
          exact_us(s.backward.latency_ps),
          exact_us(s.backward.compute_only_ps),
          exact_us(s.backward.exposed_comm_ps),
          exact_us(s.backward.comm_ps),
          fixed(s.backward.overlap_efficiency, 6),
          exact_us(s.exposed_tp_ps),
          exact_us(s.exposed_dp_ps),
          fixed(s.model_flops / 1e12, 6),
          fixed(s.mfu, 6),
          fixed(s.tokens_per_s, 3)};
}

std::vector<std::string> csv_forward_fields(const ReportContext& ctx, const SchemeResult& r) {
  if (r.failed()) {
    std::vector<std::string> row(csv_columns().size());
    row[0] = scenario_label(ctx.scenario, ctx.overrides);
    row[1] = ctx.hardware;
    row[2] = r.scheme;
    row[3] = r.params.is_object() && r.params.empty() ? std::string() : r.params.dump();
    row.back() = "FAILED: " + r.error;  // the reason column; the figures stay empty
    return row;
  }
  return {scenario_label(ctx.scenario, ctx.overrides),
          ctx.hardware,
          r.scheme,
          r.params.is_object() && r.params.empty() ? std::string() : r.params.dump(),
          exact_us(r.latency_ps),
          exact_us(r.compute_only_ps),
          exact_us(r.comm_ps),
          exact_us(r.exposed_comm_ps),
          fixed(r.overlap_efficiency, 6),
          fixed(r.speedup_vs_no_overlap, 6),
          exact_us(r.bound_ps),
          fixed(r.pct_of_bound, 4),
          std::to_string(r.sms_lost_to_comm),
          r.reason};
}

}  // namespace

std::vector<std::string> csv_row(const ReportContext& ctx, const SchemeResult& r, bool step_columns) {
  std::vector<std::string> row = csv_forward_fields(ctx, r);
  if (step_columns) {
    const std::vector<std::string> step = csv_step_fields(r);
    row.insert(row.end(), step.begin(), step.end());
  }
  return row;
}

std::vector<std::string> csv_row(const ReportContext& ctx, const SchemeResult& r) {
  return csv_row(ctx, r, is_training_step(ctx.workload));
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + csv_field(fields[i]);
  return out;
}

std::string format_csv(const ReportContext& ctx, const std::vector<SchemeResult>& results) {
  const bool step = is_training_step(ctx.workload);
  std::string out = csv_line(csv_columns(step)) + "\n";
  for (const SchemeResult& r : results) out += csv_line(csv_row(ctx, r, step)) + "\n";
  return out;
}

std::vector<std::size_t> column_widths(const std::vector<std::string>& headers,
                                       const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(headers.size());
  for (std::size_t c = 0; c < headers.size(); ++c) {
    width[c] = headers[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  return width;
}

std::string table_line(const std::vector<std::string>& cells, const std::vector<std::size_t>& width,
                       const std::string& align) {
  std::string s;
  for (std::size_t c = 0; c < cells.size(); ++c) {
    if (c) s += "  ";
    if (align[c] == '-') s += cells[c];
    else if (align[c] == '>') s += fmt::format("{:>{}}", cells[c], width[c]);
    else s += fmt::format("{:<{}}", cells[c], width[c]);
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s + "\n";
}

std::string wrap_text(const std::string& text, std::size_t width, const std::string& indent) {
  if (text.size() <= width) return text.empty() ? text : text + "\n";  // as written, spacing kept
  std::string out, line;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t sp = text.find(' ', pos);
    if (sp == std::string::npos) sp = text.size();
    const std::string word = text.substr(pos, sp - pos);
    pos = sp + 1;
    if (word.empty()) continue;
    const std::size_t add = line.empty() ? word.size() : line.size() + 1 + word.size();
    if (!line.empty() && add > width) {
      out += line + "\n";
      line = indent + word;
    } else {
      line += (line.empty() ? "" : " ") + word;
    }
  }
  if (!line.empty()) out += line + "\n";
  return out;
}

namespace {

// The parameters a result ran with that differ from its scheme's declared defaults.
nlohmann::json non_default_params(const SchemeResult& r) {
  nlohmann::json out = nlohmann::json::object();
  if (!r.params.is_object()) return out;
  const SchemeInfo* info = find_scheme(r.scheme);
  for (auto it = r.params.begin(); it != r.params.end(); ++it) {
    bool is_default = false;
    if (info) {
      for (const SchemeParam& p : info->params)
        if (p.name == it.key()) is_default = it.value() == default_for(p, nullptr);
    }
    if (!is_default) out[it.key()] = it.value();
  }
  return out;
}

std::string clip(const std::string& s, std::size_t width) {
  return s.size() <= width ? s : s.substr(0, width - 3) + "...";
}

std::string format_narrow_table(const ReportContext& ctx, const std::vector<SchemeResult>& results) {
  constexpr std::size_t kLabelWidth = 34;
  const std::vector<std::string> headers = {"scheme",           "latency (us)", "comm (us)", "exposed comm (us)",
                                            "overlap eff. (%)", "speedup",      "% of bound"};
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> labels;
  for (const SchemeResult& r : results) {
    const std::string p = params_text(non_default_params(r));
    labels.push_back(p.empty() ? r.scheme : r.scheme + " (" + p + ")");
    if (r.failed()) {
      rows.push_back({clip(labels.back(), kLabelWidth), "FAILED", "-", "-", "-", "-", "-"});
      continue;
    }
    rows.push_back({clip(labels.back(), kLabelWidth), fixed(us_from_ps(r.latency_ps), 2),
                    fixed(us_from_ps(r.comm_ps), 2), fixed(us_from_ps(r.exposed_comm_ps), 2),
                    fixed(100.0 * r.overlap_efficiency, 1),
                    r.speedup_vs_no_overlap > 0 ? fixed(r.speedup_vs_no_overlap, 3) + "x" : std::string("-"),
                    r.bound_ps > 0 ? fixed(r.pct_of_bound, 1) : std::string("-")});
  }
  const std::vector<std::size_t> width = column_widths(headers, rows);
  // The label left-aligned, the numbers right-aligned.
  const std::string align = "<" + std::string(headers.size() - 1, '>');
  auto line = [&](const std::vector<std::string>& cells) { return table_line(cells, width, align); };
  std::string out;
  out += wrap_text(fmt::format("scenario: {}   hardware: {}   fidelity: {}", scenario_label(ctx.scenario, ctx.overrides),
                               ctx.hardware, fidelity_name(ctx.fidelity)),
                   kTableWidth, "  ");
  out += wrap_text("workload: " + describe_workload(ctx.workload), kTableWidth, "  ");
  out += wrap_text(fmt::format("{}; overlap eff. = 1 - exposed / comm; speedup vs {}; bound = latency with perfect "
                               "overlap",
                               kExposedCommDefinition, ctx.baseline),
                   kTableWidth, "  ");
  out += "\n" + line(headers);
  std::size_t rule = 0;
  for (std::size_t c = 0; c < headers.size(); ++c) rule += width[c] + (c ? 2 : 0);
  out += std::string(rule, '-') + "\n";
  for (const auto& row : rows) out += line(row);
  out += "\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    // The full label when the table had to shorten it.
    const std::string who = labels[i].size() > kLabelWidth ? labels[i] : results[i].scheme;
    const std::string why = results[i].failed() ? "FAILED: " + results[i].error : results[i].reason;
    out += wrap_text(who + ": " + why, kTableWidth, "    ");
  }
  return out;
}

// The memory-per-GPU block of a training step (sim/step_memory.hpp); empty where it does not apply.
// The job figures of a dense transformer step (sim/job_figures.hpp): per GPU, and the step's time split
// into compute (GEMMs and attention; the memory-bound kernels and the optimizer priced alone) and the
// exposed communication per communicator.
std::string format_job_table(const ReportContext& ctx, const std::vector<SchemeResult>& results) {
  if (!ctx.step_kernels) return {};
  const StepKernelTime& k = *ctx.step_kernels;
  const std::vector<std::string> headers = {"scheme",    "tokens/s", "TFLOP/s",   "MFU (%)", "HFU (%)",
                                            "GEMM+attn", "mem-bound", "optimizer", "TP exp.", "DP exp."};
  std::vector<std::vector<std::string>> rows;
  auto ms = [](Ps ps) { return fixed(us_from_ps(ps) / 1000.0, 2); };
  for (const SchemeResult& r : results) {
    if (r.failed() || !r.step.present) continue;
    const JobFigures j = job_figures(ctx.workload, r);
    const Ps compute = r.latency_ps - r.step.exposed_tp_ps - r.step.exposed_dp_ps;
    rows.push_back({clip(r.scheme, 26), fixed(j.tokens_per_s_per_gpu, 0), fixed(j.model_tflops_per_gpu, 1),
                    fixed(100.0 * j.mfu, 1), fixed(100.0 * j.hfu, 1),
                    ms(compute - k.memory_bound_ps - k.optimizer_ps), ms(k.memory_bound_ps), ms(k.optimizer_ps),
                    ms(r.step.exposed_tp_ps), ms(r.step.exposed_dp_ps)});
  }
  if (rows.empty()) return {};
  const std::vector<std::size_t> width = column_widths(headers, rows);
  const std::string align = "<" + std::string(headers.size() - 1, '>');
  const std::string heading = fmt::format(
      "job figures per GPU, times in ms: TFLOP/s = model FLOPs / latency; MFU = model FLOPs (PaLM App. B: forward 1x, backward "
      "2x, the output layer included) / (latency x peak); HFU the same with the recomputation's FLOPs; the step = "
      "GEMM+attn + mem-bound + optimizer + TP exp. + DP exp. (TP and DP exposed may overlap, GEMM+attn is what "
      "remains), mem-bound and optimizer = their {} kernels priced alone (fused_elementwise {})",
      k.launches, step::fusion_name(std::get<Transformer>(ctx.workload.shape).fusion));
  std::string out = "\n" + wrap_text(heading, kTableWidth, "  ") + "\n";
  out += table_line(headers, width, align);
  std::size_t rule = 0;
  for (std::size_t c = 0; c < headers.size(); ++c) rule += width[c] + (c ? 2 : 0);
  out += std::string(rule, '-') + "\n";
  for (const auto& row : rows) out += table_line(row, width, align);
  return out;
}

std::string format_memory(const ReportContext& ctx) {
  return (ctx.memory ? format_step_memory(*ctx.memory) : std::string()) +
         (ctx.job ? format_pipeline_report(*ctx.job) : std::string());
}

}  // namespace

std::string format_table(const ReportContext& ctx, const std::vector<SchemeResult>& results, bool wide) {
  if (!wide)
    return format_narrow_table(ctx, results) + format_step_table(ctx, results, false) +
           format_job_table(ctx, results) + format_memory(ctx) +
           format_collectives(results, false) + format_summary(ctx, results);
  const std::vector<std::string> headers = {
      "scheme",       "latency (us)", "compute-only (us)", "comm (us)", "exposed comm (us)",
      "overlap eff. (%)", "speedup vs " + ctx.baseline, "bound (us)", "% of bound", "SMs lost to comm",
      "reason"};
  std::vector<std::vector<std::string>> rows;
  for (const SchemeResult& r : results) {
    if (r.failed()) {
      rows.push_back({scheme_label(r), "FAILED", "-", "-", "-", "-", "-", "-", "-", "-", "FAILED: " + r.error});
      continue;
    }
    rows.push_back({scheme_label(r), fixed(us_from_ps(r.latency_ps), 2), fixed(us_from_ps(r.compute_only_ps), 2),
                    fixed(us_from_ps(r.comm_ps), 2), fixed(us_from_ps(r.exposed_comm_ps), 2),
                    fixed(100.0 * r.overlap_efficiency, 1),
                    r.speedup_vs_no_overlap > 0 ? fixed(r.speedup_vs_no_overlap, 3) + "x" : std::string("-"),
                    r.bound_ps > 0 ? fixed(us_from_ps(r.bound_ps), 2) : std::string("-"),
                    r.bound_ps > 0 ? fixed(r.pct_of_bound, 1) : std::string("-"),
                    std::to_string(r.sms_lost_to_comm), r.reason});
  }
  const std::vector<std::size_t> width = column_widths(headers, rows);
  const std::size_t last = headers.size() - 1;  // the reason: left-aligned, not padded
  const std::string align = "<" + std::string(last - 1, '>') + "-";
  auto line = [&](const std::vector<std::string>& cells) { return table_line(cells, width, align); };
  std::string out;
  out += fmt::format("scenario: {}   hardware: {}   fidelity: {}\n", scenario_label(ctx.scenario, ctx.overrides),
                     ctx.hardware, fidelity_name(ctx.fidelity));
  out += fmt::format("workload: {}\n", describe_workload(ctx.workload));
  out += fmt::format("{}; overlap eff. = 1 - exposed / comm; bound = latency with perfect overlap\n\n",
                     kExposedCommDefinition);
  out += line(headers);
  std::size_t rule = 0;
  for (std::size_t c = 0; c < last; ++c) rule += width[c] + 2;
  rule += headers[last].size();
  out += std::string(rule, '-') + "\n";
  for (const auto& row : rows) out += line(row);
  out += format_step_table(ctx, results, true);
  out += format_job_table(ctx, results);
  out += format_memory(ctx);
  out += format_collectives(results, true);
  out += format_summary(ctx, results);
  return out;
}

std::string format_step_table(const ReportContext& ctx, const std::vector<SchemeResult>& results, bool wide) {
  if (!is_training_step(ctx.workload)) return {};
  const Training& t = ctx.workload.training;
  // The passes and the communicators, each a column; compute-only per pass only in --wide (the narrow
  // table keeps to kTableWidth; compute-only = latency - exposed there).
  std::vector<std::string> headers = {"scheme", "forward", "backward", "fwd exposed", "bwd exposed", "TP exposed",
                                      "DP exposed", "MFU (%)", "tokens/s"};
  if (wide) {
    headers.insert(headers.begin() + 3, {"fwd compute-only", "bwd compute-only"});
    headers.insert(headers.begin() + 7, {"fwd comm", "bwd comm", "fwd overlap eff. (%)", "bwd overlap eff. (%)"});
    headers.push_back("model TFLOP");
  }
  std::vector<std::vector<std::string>> rows;
  for (const SchemeResult& r : results) {
    const std::string shown = params_text(non_default_params(r));
    const std::string label = wide ? scheme_label(r) : clip(shown.empty() ? r.scheme : r.scheme + " (" + shown + ")", 26);
    if (r.failed() || !r.step.present) {
      std::vector<std::string> row(headers.size(), "-");
      row[0] = label;
      rows.push_back(std::move(row));
      continue;
    }
    const StepFigures& s = r.step;
    auto t_us = [](Ps ps) { return fixed(us_from_ps(ps), 2); };
    std::vector<std::string> row = {label,
                                    t_us(s.forward.latency_ps),
                                    t_us(s.backward.latency_ps),
                                    t_us(s.forward.exposed_comm_ps),
                                    t_us(s.backward.exposed_comm_ps),
                                    t_us(s.exposed_tp_ps),
                                    t_us(s.exposed_dp_ps),
                                    fixed(100.0 * s.mfu, 1),
                                    fixed(s.tokens_per_s, 0)};
    if (wide) {
      row.insert(row.begin() + 3, {t_us(s.forward.compute_only_ps), t_us(s.backward.compute_only_ps)});
      row.insert(row.begin() + 7, {t_us(s.forward.comm_ps), t_us(s.backward.comm_ps),
                                   fixed(100.0 * s.forward.overlap_efficiency, 1),
                                   fixed(100.0 * s.backward.overlap_efficiency, 1)});
      row.push_back(fixed(s.model_flops / 1e12, 3));
    }
    rows.push_back(std::move(row));
  }
  const std::vector<std::size_t> width = column_widths(headers, rows);
  const std::string align = "<" + std::string(headers.size() - 1, '>');
  auto line = [&](const std::vector<std::string>& cells) { return table_line(cells, width, align); };
  const std::string heading = fmt::format(
      "training step (pass {}), times in us: forward = until the forward's last op ends, backward = the rest (data-parallel "
      "tail included), forward + backward = latency; TP / DP exposed = latency - latency with that communicator's ops "
      "taking zero time (the two overlap, so they need not add up to exposed comm); MFU = model FLOPs (forward 1x, "
      "backward 2x, no recomputation) / (latency x peak); tokens/s of the whole data-parallel job",
      pass_name(t.pass));
  std::string out = "\n" + (wide ? heading + "\n" : wrap_text(heading, kTableWidth, "  ")) + "\n";
  out += line(headers);
  std::size_t rule = 0;
  for (std::size_t c = 0; c < headers.size(); ++c) rule += width[c] + (c ? 2 : 0);
  out += std::string(rule, '-') + "\n";
  for (const auto& row : rows) out += line(row);
  return out;
}

std::string format_collectives(const std::vector<SchemeResult>& results, bool wide) {
  // Calls of the same primitive, size, group and NCCL choice are summed into one line per scheme (a
  // model repeats the same collectives layer after layer): mean time, and algbw / busbw from it.
  struct Group {
    std::string scheme, primitive, algo;
    Bytes bytes = 0;
    int ranks = 0, calls = 0;
    Ps total_ps = 0;
  };
  std::vector<Group> groups;
  for (const SchemeResult& r : results) {
    const std::string shown = params_text(non_default_params(r));
    const std::string label = wide ? scheme_label(r) : shown.empty() ? r.scheme : r.scheme + " (" + shown + ")";
    for (const CollectiveFigure& c : r.collectives) {
      const std::string algo = c.algorithm + "/" + c.protocol;
      auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) {
        return g.scheme == label && g.primitive == c.primitive && g.bytes == c.bytes && g.ranks == c.ranks && g.algo == algo;
      });
      if (it == groups.end()) {
        groups.push_back(Group{label, c.primitive, algo, c.bytes, c.ranks, 0, 0});
        it = groups.end() - 1;
      }
      ++it->calls;
      it->total_ps += c.time_ps;
    }
  }
  if (groups.empty()) return {};
  // Narrow: units folded into shorter headers and the label clipped, so the table keeps to kTableWidth.
  const std::vector<std::string> headers =
      wide ? std::vector<std::string>{"scheme", "collective", "S (B)", "ranks", "calls", "time (us)", "algbw (GB/s)",
                                      "busbw (GB/s)", "algo/proto"}
           : std::vector<std::string>{"scheme", "collective", "S (B)", "ranks", "calls", "us", "algbw GB/s",
                                      "busbw GB/s", "algo/proto"};
  std::vector<std::vector<std::string>> rows;
  for (const Group& g : groups) {
    const Ps mean = g.total_ps / std::max(1, g.calls);
    const double algbw = mean > 0 ? static_cast<double>(g.bytes) * 1000.0 / static_cast<double>(mean) : 0.0;
    const auto prim = parse_collective_primitive(g.primitive);
    const double busbw = prim ? busbw_from_algbw(*prim, g.ranks, algbw) : 0.0;
    rows.push_back({wide ? g.scheme : clip(g.scheme, 26), g.primitive, std::to_string(g.bytes), std::to_string(g.ranks), std::to_string(g.calls),
                    fixed(us_from_ps(mean), 2), fixed(algbw, 2), fixed(busbw, 2), g.algo});
  }
  const std::vector<std::size_t> width = column_widths(headers, rows);
  // Scheme, collective and algo/proto left-aligned, the numbers right-aligned.
  const std::string align = "<<" + std::string(headers.size() - 3, '>') + "<";
  auto line = [&](const std::vector<std::string>& cells) { return table_line(cells, width, align); };
  const std::string heading =
      "collectives (as nccl-tests reports them: S = full array size, time once every member joined, mean over "
      "calls; algbw = S / time, busbw = algbw x nccl-tests' factor; times include sharing the GPU with the "
      "computation)";
  std::string out = "\n" + (wide ? heading + "\n" : wrap_text(heading, kTableWidth, "  "));
  out += line(headers);
  for (const auto& row : rows) out += line(row);
  return out;
}

std::string result_label(const SchemeResult& r) {
  const std::string p = params_text(non_default_params(r));
  return p.empty() ? r.scheme : r.scheme + " (" + p + ")";
}

std::vector<std::string> best_names(const std::vector<SchemeResult>& results) {
  std::vector<std::string> out;
  for (const SchemeResult* r : best_results(results)) out.push_back(result_label(*r));
  return out;
}

std::string best_label(const std::vector<SchemeResult>& results) {
  std::string out;
  for (const std::string& name : best_names(results)) out += (out.empty() ? "" : " = ") + name;
  return out;
}

std::string format_summary(const ReportContext& ctx, const std::vector<SchemeResult>& results) {
  std::string out;
  const SchemeResult* best = best_result(results);
  std::size_t ran = 0;
  for (const SchemeResult& r : results) ran += r.failed() ? 0 : 1;
  if (best) {
    // Every scheme tied with the best to the picosecond is named ("async_tp = te_userbuffers").
    const std::string who = best_label(results);
    out += wrap_text(ran > 1 ? fmt::format("best: {}, {:.3f}x vs {} ({} us)", who, best->speedup_vs_no_overlap,
                                           ctx.baseline, fixed(us_from_ps(best->latency_ps), 2))
                             : fmt::format("only {} ran: {:.3f}x vs {}", who, best->speedup_vs_no_overlap, ctx.baseline),
                     kTableWidth, "  ");
  }
  out += ctx.placeholder_lines;
  // A deep transformer composed from a few layers (sim/layer_composition.hpp): say so, and what of the
  // report is the shorter runs'.
  for (const SchemeResult& r : results)
    if (!r.failed() && r.composed_from_layers > 0) {
      out += wrap_text(fmt::format("composed: every figure above from runs of {} layers and one and two periods more, "
                                   "repeated to the model's depth (exact: its identical layers add the same time "
                                   "each); the collectives listed are the {}-layer run's",
                                   r.composed_from_layers, r.composed_from_layers),
                       kTableWidth, "  ");
      break;
    }
  if (!ctx.not_applicable.empty()) {
    // Grouped by where they apply, so six decode-only schemes take one clause.
    std::vector<std::pair<std::string, std::string>> groups;  // applies_to -> names
    for (const auto& s : ctx.not_applicable) {
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == s.applies_to; });
      if (it == groups.end()) groups.push_back({s.applies_to, s.scheme});
      else it->second += ", " + s.scheme;
    }
    std::string text = fmt::format("not applicable to this {} tp={} workload:", workload_kind_name(ctx.workload.kind), ctx.workload.tp);
    for (std::size_t i = 0; i < groups.size(); ++i)
      text += fmt::format("{} {} (for {})", i ? ";" : "", groups[i].second, groups[i].first);
    out += wrap_text(text, kTableWidth, "  ");
  }
  if (!ctx.hardware_note.empty()) out += wrap_text(ctx.hardware_note, kTableWidth, "  ");
  return out.empty() ? out : "\n" + out;
}

std::string format_report(ReportFormat format, const ReportContext& ctx, const std::vector<SchemeResult>& results,
                          bool wide) {
  switch (format) {
    case ReportFormat::table: return format_table(ctx, results, wide);
    case ReportFormat::json: return format_json(ctx, results);
    case ReportFormat::csv: return format_csv(ctx, results);
  }
  return {};
}

}  // namespace overlap::sim
