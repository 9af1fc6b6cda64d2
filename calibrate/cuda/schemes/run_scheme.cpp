#include "calibrate/cuda/schemes/bench_schemes.hpp"

#include <cmath>
#include <cstdio>
#include <memory>

#include "calibrate/core/run_spec.hpp"
#include "calibrate/core/statistics.hpp"
#include "kernels/common/host_profile.hpp"
#include "kernels/schemes/decode_run.hpp"
#include "kernels/schemes/gemm_run.hpp"

namespace overlap::calibrate {
namespace {

// One run as the three things the runner does with it: check once, time (latency, or compute-only
// with every transfer skipped), read the host's enqueue times of the last timing.
struct PreparedRun {
  std::unique_ptr<cuda::GemmRun> gemm;
  std::unique_ptr<cuda::DecodeRun> decode;
  std::string what;
  double check() { return gemm ? gemm->check() : decode->check(); }
  std::vector<double> time(bool skip_comm, int warmup, int reps) {
    return gemm ? gemm->time(skip_comm, warmup, reps) : decode->time(skip_comm, warmup, reps);
  }
  const std::vector<double>& host_enqueue_us() const { return gemm ? gemm->host_enqueue_us : decode->host_enqueue_us; }
};

PreparedRun prepare(cuda::Node& node, const cuda::RunSpec& spec, cublasHandle_t cublas, ncclComm_t comm) {
  PreparedRun p;
  if (spec.kind == cuda::RunKind::gemm_collective) {
    cuda::use_scheme_transport(node, spec);
    p.gemm = std::make_unique<cuda::GemmRun>(node, spec, cublas, comm);
    cuda::setup_scheme(*p.gemm);
    p.gemm->share_buffers();
    p.what = p.gemm->what;
  } else {
    p.decode = std::make_unique<cuda::DecodeRun>(node, spec, cublas, comm);
    p.what = p.decode->what;
  }
  return p;
}

}  // namespace

SchemeRunResult run_scheme(Driver& d, cuda::Node& node, const SchemeRunConfig& c, cublasHandle_t cublas, ncclComm_t comm) {
  const int warmup = d.options().warmup, reps = d.options().reps;
  SchemeRunResult res;
  res.config = c;
  res.tolerance = kSchemeCheckTolerance;
  PreparedRun run = prepare(node, run_spec_of(c), cublas, comm);
  res.rel_error = run.check();
  res.passed = std::isfinite(res.rel_error) && res.rel_error <= kSchemeCheckTolerance;
  progress(c.id, run.what);
  progress("", "check: relative error " + std::to_string(res.rel_error) + (res.passed ? " (pass)" : " (FAIL)") +
                   " against cuBLAS + reference collective");
  cuda::host_profile::reset();
  res.latency_us = summarize(run.time(false, warmup, reps));
  if (!run.host_enqueue_us().empty()) res.host_enqueue_us = median_of(run.host_enqueue_us());
  if (cuda::host_profile::enabled_in_env()) progress("", "host per run: " + cuda::host_profile::report_and_reset(warmup + reps));
  res.compute_only_us = summarize(run.time(true, warmup, reps));
  char line[256];
  std::snprintf(line, sizeof line, "latency %.1f us (spread %.3f), compute-only %.1f us, exposed %.1f us, host enqueue %.1f us",
                res.latency_us.median, res.latency_us.spread, res.compute_only_us.median,
                res.latency_us.median - res.compute_only_us.median, res.host_enqueue_us);
  progress("", line);
  return res;
}

}  // namespace overlap::calibrate
