#pragma once
// A hardware profile fitted to a trace's measured kernels (`overlap-sim profile fit`): the base
// profile with what the trace measured written over it, so that the next `run --hardware` predicts
// the cluster the trace came from.
//
// What is fitted, from the kernel groups calibrate/traces/trace_analysis.hpp lists (pooled over the
// ranks; each group's time is the median of its kernels' durations, robust to the few kernels that
// ran beside a collective or a copy):
//   gemm_profiles   one entry per GEMM shape (M, N, K, dtype; batch 1) with at least min_samples
//                   kernels: the measured median, on the tile the base profile plans for that shape
//                   (cost_model/gemm_model.hpp: a calibrated entry's duration is spread over its
//                   waves). That shape then predicts as measured.
//   the GEMM rate   for the shapes the entries do not cover: the base profile's compute rate scaled
//                   by f = median over the fitted shapes of (base prediction / measured), taken
//                   over the shapes the base plans compute-bound and without an entry of its own.
//                   The rate is gpu.gemm_efficiency (x f) unless the base sets gpu.gemm_tile_us
//                   (/ f); a base with the CTA roofline (gpu.gemm_sm_load_gbps) also gets its load
//                   rate x f and its per-CTA overhead / f, so every CTA time scales by 1 / f and the
//                   tile choice is unchanged. Needs 2 such shapes: one shape's time carries its own
//                   wave quantisation into every other shape's prediction.
//   curves          per collective and group size, "<primitive>.n<N>" (cost_model/collective_model.hpp:
//                   the measured time of the primitive, whatever algorithm NCCL chose): time vs
//                   message size (nccl-tests' S, as the trace reports it; a kernel matched with its
//                   peers on other ranks timed by its transfer alone, calibrate/traces/collective_wait.hpp)
//                   through the sizes with at
//                   least min_samples kernels, linear between them and alpha-beta beyond. Needs 2
//                   sizes. The base's protocol curves of the same primitive and group size
//                   ("<primitive>.n<N>.<PROTO>") are dropped: they would stand in front of it.
// What cannot be fitted keeps the base's value, and a note says why (too few samples, shape or size
// unknown, a dtype the base has no peak for, a group larger than the base's GPUs, a collective the
// model has no primitive for); nothing is guessed.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/traces/trace_analysis.hpp"
#include "cost_model/hardware_profile.hpp"

namespace overlap::traces {

// PyTorch's dtype names ("c10::BFloat16", "BFloat16", "float", "c10::Half", "Float8_e4m3fn") as the
// cost model's; nullopt for the others.
std::optional<DType> model_dtype(std::string name);

struct FitOptions {
  int min_samples = 3;  // kernels a shape or size needs to count
  // The link class a collective of n ranks runs over on a profile (sim/schemes/graph_builder.hpp's
  // collective_link_class): what the base and the fitted predictions use.
  std::function<std::string(const HardwareProfile&, int)> link_class;
};

// One pooled kernel group: measured, predicted by the base and by the fitted profile.
struct FitRow {
  std::string cls;   // "gemm" | "collective"
  std::string what;  // "4096x2048x8192 bf16", "all_reduce 2097152 B group 8"
  std::int64_t samples = 0;
  double measured_us = 0;               // median
  std::optional<double> base_us;        // nullopt: the base cannot predict it (see status)
  std::optional<double> fitted_us;      // the fitted profile
  std::optional<double> fitted_rate_us; // GEMMs: the fitted rate alone, without this shape's entry
  std::string status;                   // "fitted", or why it was not used
};

// One profile key the fit considered: what it wrote, or that it kept the base's value and why.
struct FitNote {
  std::string key;
  bool fitted = false;
  std::string text;
};

struct FitResult {
  HardwareProfile profile;
  std::vector<FitRow> rows;
  std::vector<FitNote> notes;
  std::int64_t gemm_kernels = 0, gemm_shape_unknown = 0, gemm_batched = 0;
  std::int64_t comm_kernels = 0, comm_size_unknown = 0;
};

// Throws InputError naming the first file when the traces hold no GEMM kernel with a known shape
// (nothing to fit the compute side to).
FitResult fit_profile(const std::vector<RankReport>& ranks, const HardwareProfile& base, const FitOptions& options);

}  // namespace overlap::traces
