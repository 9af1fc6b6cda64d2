// The job figures of a training step (job_figures.hpp).
#include "sim/job_figures.hpp"

#include <algorithm>
#include <variant>

#include "cost_model/step_kernels.hpp"
#include "sim/backward_shapes.hpp"
#include "sim/schemes/training_step.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

namespace {

// What a chain of the kernels takes alone (job_figures.hpp StepKernelTime).
struct Pricer {
  const HardwareProfile& hw;
  Ps total_ps = 0;
  int launches = 0;
  void add(const step::Kernels& list, std::int64_t times = 1) {
    const Ps host = ps_from_us(hw.launch.cuda_graphs ? 0.0 : hw.launch.host_us);
    const Ps gap = ps_from_us(hw.launch.cuda_graphs ? hw.launch.graph_gap_us : hw.launch.gap_us);
    for (const step::MemoryBoundKernel& k : list) {
      total_ps += times * std::max(streaming_kernel_ps(hw, k.bytes) + gap, host);
      launches += static_cast<int>(times);
    }
  }
};

}  // namespace

std::optional<StepKernelTime> step_kernel_time(const Workload& w, const HardwareProfile& hw) {
  const std::optional<step::StepShape> shape = step_kernel_shape(w);
  if (!shape) return std::nullopt;
  const step::StepShape& s = *shape;
  const int layers = layer_count(w);
  const std::int64_t layer_params =
      block_parameters(w, Block::attention) + block_parameters(w, Block::mlp) + 2 * s.d_model;
  Pricer kernels{hw};
  // The layers: forward (again under full recomputation), FP8 weights once, backward.
  const std::int64_t forwards = w.training.recompute == Recompute::full ? 2 * layers : layers;
  for (step::Site site : {step::Site::before_attention, step::Site::after_attention, step::Site::before_mlp, step::Site::after_mlp}) {
    kernels.add(step::layer_forward(s, site), forwards);
    kernels.add(step::layer_backward(s, site), layers);
  }
  kernels.add(step::layer_fp8_weights(s, layer_params), layers);
  // Around them.
  const step::CrossEntropyKernels ce = step::cross_entropy(s);
  for (const step::Kernels* list : {&ce.before_max, &ce.after_max, &ce.after_sums, &ce.backward}) kernels.add(*list);
  kernels.add(step::embedding_forward(s));
  kernels.add(step::embedding_backward(s));
  kernels.add(step::first_layer_norm(s));
  kernels.add(step::final_norm_forward(s));
  kernels.add(step::final_norm_backward(s));
  // The optimizer over the local shard (training_step.cpp StepDriver::optimizer).
  const DataParallel& dp = w.training.parallel;
  const int g = dtype_bytes(dp.grad_dtype);
  auto local = [&](std::int64_t params) {
    return dp.dp > 1 && dp.fsdp != Sharding::none ? (params + dp.dp - 1) / dp.dp : params;
  };
  const std::int64_t rows = s.vocab > 0 ? (s.vocab + s.tp - 1) / s.tp * s.d_model : 0;
  Pricer opt{hw};
  for (const std::int64_t p : {local(layer_params), local(2 * rows + s.d_model)}) {
    const std::int64_t times = p == local(layer_params) ? layers : 1;
    opt.add(step::grad_norm(p, g), times);
    opt.add(step::clip_grads(p, g), times);
    opt.add(step::adam(p, g, s.fusion), times);
  }
  return StepKernelTime{kernels.total_ps, opt.total_ps, kernels.launches + opt.launches};
}

double hardware_flops(const Workload& w, double model_flops) {
  const auto* t = std::get_if<Transformer>(&w.shape);
  if (t == nullptr || !has_backward(w)) return model_flops;
  switch (w.training.recompute) {
    case Recompute::none: return model_flops;
    case Recompute::selective: {
      // Core attention's forward again in every layer (its MLA or MoE variants as their shapes give it).
      const double core = t->mla ? mla_shapes(*t, std::max(1, w.tp)).attention_flops
                                 : attention_shapes(transformer_attention(*t), std::max(1, w.tp)).attention_flops;
      return model_flops + core * t->layers;
    }
    case Recompute::full: return model_flops + workload_forward_flops(w) - output_layer_flops(w);
  }
  return model_flops;
}

JobFigures job_figures(const Workload& w, const SchemeResult& r) {
  JobFigures j;
  const StepFigures& s = r.step;
  const double seconds = static_cast<double>(r.latency_ps) * 1e-12;
  const int gpus = std::max(1, w.tp) * std::max(1, w.training.parallel.dp);
  j.tokens_per_s_per_gpu = s.tokens_per_s / gpus;
  j.model_tflops_per_gpu = seconds > 0 ? s.model_flops / seconds / 1e12 : 0;
  j.mfu = s.mfu;
  j.hfu = s.model_flops > 0 ? s.mfu * hardware_flops(w, s.model_flops) / s.model_flops : 0;
  return j;
}

}  // namespace overlap::sim
