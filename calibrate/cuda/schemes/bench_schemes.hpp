#pragma once
// overlap-bench-schemes: the scheme configurations of a list run on the reference kernels
// (kernels/schemes/), each checked against its reference and then timed; the virtual nodes measured
// first, so their profiles describe the machine the runs ran on. The calibration Driver
// (calibrate/cuda/driver.hpp) owns the device, the root stream, the statistics and the progress
// lines; the node timing below adds what a node of several ranks needs on top (fork and join over
// every rank's streams, a sleep that takes the host out of the picture).
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/core/scheme_config.hpp"
#include "calibrate/cuda/driver.hpp"
#include "kernels/comm/node.hpp"

namespace overlap::calibrate {

// bf16 GEMM inputs accumulate in fp32 and round once (or T times through bf16 partial sums): a
// relative error of a few 1e-3 is expected (device METHOD.md: bf16 between 1e-3 and 1e-2).
inline constexpr double kSchemeCheckTolerance = 2e-2;

// --- node timing (node_timing.cpp) ---

// Makes the device's primary context current again after work in a rank's green context.
void make_primary_current();

// Times `work` issued on every rank of the node, joined to the root stream (CUDA events on it).
std::vector<double> time_on_node(cuda::Node& node, cudaStream_t root, int warmup, int reps, const std::function<void()>& work);

// `work` timed twice: with the host in the loop (unqueued: what sizes the hold), then queued behind a
// sleep (the GPU's time alone: the samples a curve takes). The derived figures say both, and the
// host's enqueue time per call.
struct QueuedTiming {
  std::vector<double> samples;  // queued, us
  nlohmann::json derived;       // queued, host_enqueue_us, unqueued_us
};
QueuedTiming time_queued(cuda::Node& node, cudaStream_t root, int reps, const std::function<void()>& work,
                         const std::function<void()>& before_queued = {});

// A progress line of the runner (id or benchmark, then text), flushed.
void progress(const std::string& what, const std::string& text);

// --- the virtual node's own calibration (virtual_node.cpp) ---

// Measures a virtual node (its GEMMs on one partition and on all at once, rank-to-rank pulls, its
// collectives, launch costs, shared HBM streaming) into the driver; returns the environment its
// profile is written with. The measurements are the driver's (Driver::take_measurements).
nlohmann::json measure_virtual_node(Driver& d, cuda::Node& node, const std::string& link, const std::vector<SchemeRunConfig>& runs);

// --- one configuration (run_scheme.cpp) ---

// Builds the run on the node, checks it against its reference, then times it (latency and
// compute-only) with the driver's warm-up and repetitions.
SchemeRunResult run_scheme(Driver& d, cuda::Node& node, const SchemeRunConfig& c, cublasHandle_t cublas, ncclComm_t comm);

}  // namespace overlap::calibrate
