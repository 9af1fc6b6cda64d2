#pragma once
// What one run of the reference kernels is: the scheme, the workload's shapes, the scheme's
// parameters and, for the decode family, the plan. The calibration harness fills it in from a
// configuration list (calibrate/core/run_spec.hpp); the kernels read nothing else. Plain C++, so the
// harness's host library can fill it in without CUDA.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/schemes/decode_plan.hpp"

namespace overlap::cuda {

// CTAs per SM of the runner's signalling GEMM (kernels/gemm/signal_gemm.hpp), for every scheme's
// GEMM and for the virtual node's profile (gpu.gemm_ctas_per_sm); a FlashOverlap wave is
// wave_sms x this many tiles. Two: the second CTA uses the SM while the first waits on its publish
// release, and the kernel runs 1.25x faster (H100, 2026-11-23, calibrate signal_gemm: overhead
// 0.1-0.4 % against 0.7-1.7 % with one CTA per SM; 1.8x cuBLASLt's time against 2.3x).
inline constexpr int kRunnerGemmCtasPerSm = 2;

enum class RunKind { gemm_collective, decode_stack };

struct RunSpec {
  std::string scheme;  // the simulator's scheme name
  RunKind kind = RunKind::gemm_collective;
  int ranks = 0;       // workload.tp

  // gemm_collective: the per-rank GEMM (scenario convention) and its collective.
  std::int64_t m = 0, n = 0, k = 0;
  std::string primitive;  // all_reduce | reduce_scatter | all_gather
  // Scheme parameters, as the simulator takes them (`overlap-sim schemes`).
  int chunks = 4;                 // data_slicing
  int streams = 2;                // async_tp
  int slices_per_rank = 1;        // commfuse: params.m
  std::string schedule = "ring";  // commfuse
  std::string transport;          // commfuse: nccl | copy_engine; empty = the node's own
  std::vector<int> groups;        // flashoverlap
  int wave_sms = 0;               // flashoverlap
  int ctas_per_sm = 1;            // flashoverlap

  // decode_stack
  int layers = 0;
  std::int64_t d_model = 0, d_ffn = 0, heads = 0, kv_heads = 0;
  sim::DecodePlan plan;
};

}  // namespace overlap::cuda
