#pragma once
// The decode family on a node (delayed-tp-blog): 2 N_L modules (attention, MLP; GPT-J's parallel
// block is both) each streaming its weight shard from HBM with a batch-1 GEMV, then all-reducing one
// token's hidden state (d_model bf16) when its plan says so; a module starts only after the
// all-reduces it waits for have landed (its input takes their sum, as a residual would). Weight
// bytes per rank follow the simulator's decode_shapes (sim/workload_shapes.cpp).
#include <cublas_v2.h>

#include <functional>
#include <vector>

#include "kernels/comm/node.hpp"
#include "kernels/schemes/run_spec.hpp"

namespace overlap::cuda {

class DecodeRun {
 public:
  DecodeRun(Node& node, const RunSpec& spec, cublasHandle_t cublas, ncclComm_t ref_comm);
  ~DecodeRun();
  std::string what;
  // Max relative error of every module's GEMV (against cuBLAS) and every all-reduce (against the
  // fp32 sum of the ranks' GEMV outputs), after one run.
  double check();
  std::vector<double> time(bool skip_comm, int warmup, int reps);
  std::vector<double> host_enqueue_us;  // the last time() call's host enqueue time per repetition

 private:
  void enqueue(bool skip);
  Node& node_;
  RunSpec cfg_;
  const sim::DecodePlan& plan_ = cfg_.plan;
  cublasHandle_t cublas_;
  ncclComm_t ref_comm_;
  std::int64_t d_model_ = 0;
  std::vector<std::int64_t> cols_;  // per module: GEMV width (weight = d_model x cols)
  // [rank][module]
  std::vector<std::vector<DeviceBuffer<__nv_bfloat16>>> w_, x_, y_, ar_;
  std::vector<std::vector<cudaEvent_t>> landed_;  // [rank][module]: its all-reduce has landed
  cudaStream_t root_ = nullptr;
  cudaEvent_t root_event_ = nullptr;
};

}  // namespace overlap::cuda
