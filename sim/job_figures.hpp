#pragma once
// The job figures of a training step (docs/guide/training.md "The job figures"): per GPU throughput
// in tokens and model TFLOP/s, MFU beside the hardware-FLOPs utilisation, and the breakdown of the
// step's time into compute (GEMMs and attention, memory-bound kernels), exposed TP and DP
// communication and the optimizer.
#include <optional>

#include "cost_model/hardware_profile.hpp"
#include "sim/metrics.hpp"
#include "sim/workload.hpp"

namespace overlap::sim {

// The step's memory-bound kernels (cost_model/step_kernels.hpp, as sim/schemes/training_step.cpp
// issues them) priced alone, one after another on an idle GPU: each max(its bytes over HBM plus the
// device's launch gap, the host's launch time), since a chain of dependent kernels shorter than a
// launch waits for the host. The layers' own activation kernels (SwiGLU) are in neither figure.
struct StepKernelTime {
  Ps memory_bound_ps = 0;  // every kernel but the optimizer's
  Ps optimizer_ps = 0;     // gradient norm, clipping, Adam (the norm's all-reduce not included)
  int launches = 0;        // kernels of both
};
std::optional<StepKernelTime> step_kernel_time(const Workload& w, const HardwareProfile& hw);

// FLOPs one GPU does per step for the hardware, the recomputation included: `model_flops` (PaLM,
// Chowdhery et al., App. B: forward 1x, backward 2x) plus core attention's forward again per layer
// (selective) or every layer's forward again (full).
double hardware_flops(const Workload& w, double model_flops);

// The per-GPU figures of one result.
struct JobFigures {
  double tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;
  double mfu = 0;
  double hfu = 0;  // hardware FLOPs / (latency x peak)
};
JobFigures job_figures(const Workload& w, const SchemeResult& r);

}  // namespace overlap::sim
