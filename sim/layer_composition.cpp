// Composing a deep transformer's step from runs of a few layers (layer_composition.hpp).
#include "sim/layer_composition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <variant>

#include "sim/backward_shapes.hpp"
#include "sim/scenario.hpp"
#include "sim/schemes/training_step.hpp"

namespace overlap::sim {

Workload with_layers(const Workload& w, int layers) {
  Workload c = w;
  Transformer& t = std::get<Transformer>(c.shape);
  // A DDP step's one bucket reduces every layer's gradients, however few layers run (composition_refusal).
  DataParallel& dp = c.training.parallel;
  if (dp.dp > 1 && dp.fsdp == Sharding::none && dp.gradient_layers == 0) dp.gradient_layers = t.layers;
  t.layers = layers;
  return c;
}

std::string composition_refusal(const Workload& workload) {
  const Transformer* t = std::get_if<Transformer>(&workload.shape);
  if (t == nullptr) return "only a transformer's layers are composed";
  const DataParallel& dp = workload.training.parallel;
  if (dp.dp > 1 && dp.fsdp != Sharding::zero3) {
    // ZeRO-1/2 gathers every parameter bucket at the forward's first layer and reduce-scatters the
    // gradients in buckets: a pattern whose period is set by bytes, not layers.
    if (dp.fsdp != Sharding::none)
      return fmt::format("ZeRO-1/2 ({}) gathers and reduces in buckets of bytes that straddle layers, so its step "
                         "does not repeat layer by layer",
                         sharding_name(dp.fsdp));
    if (t->moe) return "a MoE model's DDP buckets are not composed";
    // DDP with one bucket larger than the whole model's gradients (Megatron-LM's local DDP, which
    // all-reduces one contiguous buffer after the backward): every run of fewer layers reduces the whole
    // model's gradients too (DataParallel::gradient_layers), so the step repeats layer by layer. Smaller
    // buckets close at byte counts that straddle layers: not composed.
    const double grad_bytes = static_cast<double>(layer_gradient_elements(workload)) * t->layers *
                              dtype_bytes(dp.grad_dtype);
    if (!(dp.bucket_mb * 1024.0 * 1024.0 > grad_bytes))
      return fmt::format("DDP's gradient buckets of {:g} MiB close at byte counts that straddle layers (the model's "
                         "gradients are {:.0f} MiB per rank), so its step does not repeat layer by layer; a bucket "
                         "larger than the model (one all-reduce after the backward, as Megatron-LM's local DDP) is "
                         "composed",
                         dp.bucket_mb, grad_bytes / (1024.0 * 1024.0));
  }
  if (t->layers <= t->dense_layers + 6)
    return fmt::format("{} layers are too few to compose (it takes the dense prefix + 6)", t->layers);
  return {};
}

std::vector<int> composition_depths(const Workload& workload) {
  const std::optional<int> base = composition_base_layers(workload);
  if (!base || gemm_tiles_per_rank(workload) <= kMaxGemmTilesPerRank) return {};
  const int layers = std::get<Transformer>(workload.shape).layers;
  std::vector<int> out;
  // The depths evaluate_all_composed may run, period by period, as its loop picks them.
  for (int period = 1; period <= kMaxCompositionPeriod; ++period) {
    const int k = *base + (layers - *base) % period;
    if (k + 2 * period >= layers) break;
    for (const int depth : {k, k + period, k + 2 * period})
      if (std::find(out.begin(), out.end(), depth) == out.end()) out.push_back(depth);
  }
  return out;
}

namespace {

// v(L) from v(k) and v(k + P) - v(k): the figure at depth L = k + n P.
struct Line {
  Ps base = 0, per_period = 0;
  std::int64_t periods = 0;
  Ps at() const { return checked_ps(static_cast<double>(base) + static_cast<double>(per_period) * static_cast<double>(periods)); }
};

// The integer figures of a result that grow with the layers; each must grow by the same step twice.
constexpr const char* kFigureNames[] = {"latency", "compute-only latency", "communication alone",
                                        "the scheme's communication alone", "bound",
                                        "forward latency", "forward compute-only", "forward communication",
                                        "backward latency", "backward compute-only", "backward communication",
                                        "exposed TP", "exposed DP"};

std::vector<Ps> periodic_figures(const SchemeResult& r) {
  return {r.latency_ps,
          r.compute_only_ps,
          r.comm_ps,
          r.scheme_comm_ps,
          r.bound_ps,
          r.step.forward.latency_ps,
          r.step.forward.compute_only_ps,
          r.step.forward.comm_ps,
          r.step.backward.latency_ps,
          r.step.backward.compute_only_ps,
          r.step.backward.comm_ps,
          r.step.exposed_tp_ps,
          r.step.exposed_dp_ps};
}

// "" when a, b, c (depths k, k + P, k + 2P) grow alike in every figure; else what does not.
std::string not_repeating(const SchemeResult& a, const SchemeResult& b, const SchemeResult& c) {
  if (a.failed() || b.failed() || c.failed()) return a.scheme + " failed at one of the depths";
  const std::vector<Ps> x = periodic_figures(a), y = periodic_figures(b), z = periodic_figures(c);
  for (std::size_t i = 0; i < x.size(); ++i)
    if (y[i] - x[i] != z[i] - y[i]) return fmt::format("{} of {}", kFigureNames[i], a.scheme);
  // A peak, not a sum: it must have settled by k + P (the deeper run's is every deeper run's).
  if (b.sms_lost_to_comm != c.sms_lost_to_comm) return "SMs held by communication of " + a.scheme;
  return "";
}

double clamp_efficiency(Ps exposed, Ps comm) {
  return comm > 0 ? std::clamp(1.0 - static_cast<double>(exposed) / static_cast<double>(comm), 0.0, 1.0) : 0.0;
}

SchemeResult compose(const SchemeResult& a, const SchemeResult& b, int k, std::int64_t periods, const Workload& w,
                     const HardwareProfile& hw) {
  auto line = [&](Ps x, Ps y) { return Line{x, y - x, periods}.at(); };
  SchemeResult r = a;
  r.latency_ps = line(a.latency_ps, b.latency_ps);
  r.compute_only_ps = line(a.compute_only_ps, b.compute_only_ps);
  r.comm_ps = line(a.comm_ps, b.comm_ps);
  r.scheme_comm_ps = line(a.scheme_comm_ps, b.scheme_comm_ps);
  r.bound_ps = line(a.bound_ps, b.bound_ps);
  r.events = static_cast<std::uint64_t>(line(static_cast<Ps>(a.events), static_cast<Ps>(b.events)));
  // Derived exactly as evaluate derives them (metrics.cpp), from the composed figures.
  r.exposed_comm_ps = r.latency_ps - r.compute_only_ps;
  r.overlap_efficiency_raw =
      r.comm_ps > 0 ? 1.0 - static_cast<double>(r.exposed_comm_ps) / static_cast<double>(r.comm_ps) : 0.0;
  r.overlap_efficiency = std::clamp(r.overlap_efficiency_raw, 0.0, 1.0);
  r.pct_of_bound = r.latency_ps > 0 ? 100.0 * static_cast<double>(r.bound_ps) / static_cast<double>(r.latency_ps) : 100.0;
  for (std::size_t i = 0; i < r.utilization.size() && i < b.utilization.size(); ++i) {
    // Busy time grows by the layer's like everything else; the fraction is over the composed span.
    const double busy_a = a.utilization[i].sm * static_cast<double>(a.latency_ps);
    const double busy_b = b.utilization[i].sm * static_cast<double>(b.latency_ps);
    const double ce_a = a.utilization[i].copy_engine * static_cast<double>(a.latency_ps);
    const double ce_b = b.utilization[i].copy_engine * static_cast<double>(b.latency_ps);
    const double span = static_cast<double>(r.latency_ps);
    const double n = static_cast<double>(periods);
    r.utilization[i].sm = span > 0 ? (busy_a + (busy_b - busy_a) * n) / span : 0;
    r.utilization[i].copy_engine = span > 0 ? (ce_a + (ce_b - ce_a) * n) / span : 0;
  }
  if (r.step.present) {
    StepFigures& s = r.step;
    auto pass = [&](PassFigures& p, const PassFigures& pa, const PassFigures& pb) {
      p.latency_ps = line(pa.latency_ps, pb.latency_ps);
      p.compute_only_ps = line(pa.compute_only_ps, pb.compute_only_ps);
      p.comm_ps = line(pa.comm_ps, pb.comm_ps);
      p.exposed_comm_ps = p.latency_ps - p.compute_only_ps;
      p.overlap_efficiency = clamp_efficiency(p.exposed_comm_ps, p.comm_ps);
    };
    pass(s.forward, a.step.forward, b.step.forward);
    pass(s.backward, a.step.backward, b.step.backward);
    s.exposed_tp_ps = line(a.step.exposed_tp_ps, b.step.exposed_tp_ps);
    s.exposed_dp_ps = line(a.step.exposed_dp_ps, b.step.exposed_dp_ps);
    // The model FLOPs of the whole depth, as metrics.cpp counts them; MFU and tokens per second over
    // the composed step.
    const double forward = workload_forward_flops(w);
    const double passes = (w.training.pass != Pass::backward ? 1.0 : 0.0) + (has_backward(w) ? 2.0 : 0.0);
    s.model_flops = forward * passes;
    const double seconds = static_cast<double>(r.latency_ps) * 1e-12;
    const auto peak = hw.gpu.peak_tflops.find(dtype_name(workload_dtype(w)));
    s.mfu = peak != hw.gpu.peak_tflops.end() && seconds > 0 ? s.model_flops / (seconds * peak->second * 1e12) : 0;
    s.tokens_per_s = seconds > 0 ? static_cast<double>(step_tokens(w)) * std::max(1, w.training.parallel.dp) / seconds : 0;
  }
  r.sms_lost_to_comm = b.sms_lost_to_comm;
  r.composed_from_layers = k;
  return r;
}

}  // namespace

std::optional<int> composition_base_layers(const Workload& workload) {
  const Transformer* t = std::get_if<Transformer>(&workload.shape);
  if (t == nullptr || !composition_refusal(workload).empty()) return std::nullopt;
  // Four layers past the dense prefix: FSDP's first gathers and the recomputation's first layer settle
  // within them (the engine statistics too, not only the latencies).
  return t->dense_layers + 4;
}

std::vector<SchemeResult> evaluate_all_composed(const std::vector<SchemeRequest>& schemes, const Workload& workload,
                                                const HardwareProfile& hardware, Fidelity fidelity,
                                                const EvaluateOptions& options) {
  const std::optional<int> base = composition_base_layers(workload);
  if (!base)
    throw std::invalid_argument(
        fmt::format("layer composition: {}", composition_refusal(workload)));
  const int layers = std::get<Transformer>(workload.shape).layers;
  EvaluateOptions each = options;
  each.comm_ps = -1;  // every depth's own
  each.forward_comm_ps = -1;
  each.keep_timeline = false;
  each.record_ctas = false;
  std::map<int, std::vector<SchemeResult>> runs;  // by depth
  std::string breaks_seen;  // what did not repeat, per period tried
  auto at = [&](int depth) -> const std::vector<SchemeResult>& {
    auto it = runs.find(depth);
    if (it == runs.end()) it = runs.emplace(depth, evaluate_all(schemes, with_layers(workload, depth), hardware, fidelity, each)).first;
    return it->second;
  };
  // The shortest period P (in layers) over which every figure grows by the same amount twice, from
  // the shortest depth k >= base with L - k a whole number of periods. FSDP's prefetch alternates two
  // buffers: P = 2.
  for (int period = 1; period <= kMaxCompositionPeriod; ++period) {
    const int k = *base + (layers - *base) % period;
    if (k + 2 * period >= layers) break;
    const std::vector<SchemeResult>& a = at(k);
    const std::vector<SchemeResult>& b = at(k + period);
    const std::vector<SchemeResult>& c = at(k + 2 * period);
    if (a.size() != b.size() || b.size() != c.size()) continue;
    std::string breaks;
    for (std::size_t i = 0; i < a.size() && breaks.empty(); ++i)
      if (!(a[i].failed() && b[i].failed() && c[i].failed())) breaks = not_repeating(a[i], b[i], c[i]);
    if (!breaks.empty()) {
      breaks_seen += fmt::format("{}{} at {}, {} and {} layers", breaks_seen.empty() ? "" : "; ", breaks, k, k + period,
                                 k + 2 * period);
      continue;
    }
    const std::int64_t periods = (layers - k) / period;
    std::vector<SchemeResult> out;
    for (std::size_t i = 0; i < a.size(); ++i)
      out.push_back(a[i].failed() ? a[i] : compose(a[i], b[i], k, periods, workload, hardware));
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (out[i].failed() || a[i].speedup_vs_no_overlap <= 0) continue;
      // The baseline at depth L from the baselines the speedups imply at k and k + P.
      const double base_a = a[i].speedup_vs_no_overlap * static_cast<double>(a[i].latency_ps);
      const double base_b = b[i].speedup_vs_no_overlap * static_cast<double>(b[i].latency_ps);
      const double baseline = base_a + (base_b - base_a) * static_cast<double>(periods);
      out[i].speedup_vs_no_overlap = baseline / static_cast<double>(out[i].latency_ps);
    }
    return out;
  }
  throw std::invalid_argument(fmt::format(
      "the step over {} layers is too large to simulate whole, and its runs of fewer layers do not repeat with a "
      "period of up to {} layers ({}), so it cannot be composed from them; shrink the workload",
      layers, kMaxCompositionPeriod, breaks_seen.empty() ? "too few layers to tell" : breaks_seen));
}

}  // namespace overlap::sim
