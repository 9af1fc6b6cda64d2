#pragma once
// The calibration driver's shared state, in the shape of nccl-tests (style.md "The benchmark
// harness"): a benchmark is a short function that sets up its buffers, hands the driver one
// enqueue-a-run callable per configuration, and says what the configuration and derived figures
// are; the driver times it (warm-up, repetitions, CUDA events), summarises (median, spread),
// prints a progress line and keeps the measurement for measurements.json.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/core/measurement.hpp"
#include "kernels/comm/bootstrap.hpp"
#include "kernels/common/check.hpp"
#include "kernels/gemm/cublaslt_gemm.hpp"

namespace overlap::calibrate {

struct DriverOptions {
  std::string out_dir;
  int warmup = 5;
  int reps = 20;
  bool quick = false;           // a smaller grid (smoke run): fewer shapes and sizes
  std::vector<std::string> only;  // run only these benchmarks (empty = all)
  std::string bootstrap_dir = "/tmp/overlap-calibrate";
  std::string link_class = "nvlink";
  int profile_schema = 2;
};

class Driver {
 public:
  Driver(DriverOptions options, cuda::ProcessRank pr);

  const DriverOptions& options() const { return options_; }
  const cuda::ProcessRank& process() const { return pr_; }
  int device() const { return device_; }
  int sm_count() const { return sm_count_; }
  cudaStream_t stream() const { return stream_; }
  cublasLtHandle_t lt() const { return lt_; }
  nlohmann::json& environment() { return set_.environment; }
  MeasurementSet& measurements() { return set_; }
  // The measurements recorded so far, handed over (the driver keeps none): a program that writes
  // several measurement sets (one per virtual node) takes each when it is complete.
  std::vector<Measurement> take_measurements();

  // Times `run` on `stream` (default: the driver's) and records the measurement; returns it.
  // `derive` may fill derived figures from the statistics.
  const Measurement& measure(const std::string& benchmark, nlohmann::json config, const std::function<void()>& run,
                             const std::function<void(const SampleStats&, nlohmann::json&)>& derive = {},
                             cudaStream_t stream = nullptr, int reps = 0);
  // Records already-summarised samples (host-clock benchmarks, NCCL sweeps timed elsewhere).
  const Measurement& record(const std::string& benchmark, nlohmann::json config, const std::vector<double>& samples_us,
                            nlohmann::json derived = nlohmann::json::object());

  bool wants(const std::string& benchmark) const;

 private:
  DriverOptions options_;
  cuda::ProcessRank pr_;
  int device_ = 0;
  int sm_count_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  MeasurementSet set_;
};

// The benchmarks, one file each.
void bench_gemm(Driver& d);          // gemm, gemm_tile, gemm_waves
void bench_gemm_sm(Driver& d);       // gemm_sm (green contexts)
void bench_interference(Driver& d);  // interference_sm_copy, interference_copy_engine
void bench_transfer(Driver& d);      // transfer: copy engine d2d / h2d / d2h, SM copy
void bench_p2p(Driver& d);           // transfer: copy_engine.p2p, sm_copy.p2p (>= 2 visible GPUs)
void bench_launch(Driver& d);        // launch: host cost, dependent gap, graph gap
void bench_hbm(Driver& d);           // hbm_stream: GEMV-like weight streaming
void bench_nccl(Driver& d);          // nccl (+ interference_nccl) under mpirun, every rank
void bench_signal_gemm(Driver& d);   // signal_gemm: the reference GEMM vs cuBLASLt, signalling overhead
void bench_gemm_backward(Driver& d);  // gemm_backward: a training step's GEMMs in their layouts
void bench_grouped_gemm(Driver& d);   // grouped_gemm: MoE expert GEMMs, grouped and per expert

// Environment (GPU, driver, runtime, cuBLASLt, NCCL, clocks as read).
nlohmann::json read_environment(int device, const cuda::ProcessRank& pr, const std::string& link_class);

}  // namespace overlap::calibrate

namespace overlap::cuda {

// The cuBLASLt algorithm a GEMM row ran with, every field under its own name: the tile shape behind
// the row's wave count, and what else the heuristic chose.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LtAlgoInfo, algo_id, tile_id, tile_m, tile_n, split_k, swizzle, stages_id,
                                   cluster_shape_id, cluster_m, cluster_n)

}  // namespace overlap::cuda
