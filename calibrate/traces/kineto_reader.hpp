#pragma once
// The PyTorch profiler's (Kineto's) Chrome-trace JSON, plain or gzip, read as a stream.
//
// Fields read, as torch.profiler writes them. Checked against the public sources: pytorch/kineto
// libkineto/src/output_json.cpp (ChromeTraceLogger::handleActivity writes every activity as
// {"ph": "X", "cat", "name", "pid": device, "tid": stream, "ts", "dur"} with ts/dur as microseconds
// with three decimals, "External id" = the launching CPU op's id, and copies record_param_comms'
// "Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype", "Process Group Name"
// onto the NCCL kernel; addOnDemandDistMetadata writes "distributedInfo" {backend, rank,
// world_size, ...}, as PyTorch's torch/profiler/profiler.py also does), PyTorch's
// torch/csrc/distributed/c10d/ParamCommsUtils (the record_param_comms op and its args), and
// HolisticTraceAnalysis, which reads the same fields:
//   top level: traceEvents[], distributedInfo {rank, world_size, backend};
//   each event: ph ("X" = complete event; others ignored), cat, name, pid, tid, ts and dur in
//   microseconds (decimal, read exactly to the nanosecond), args;
//   cat "kernel": a GPU kernel (args: device, stream, correlation, External id, and for NCCL
//   kernels in recent PyTorch the collective's args themselves); "gpu_memcpy" / "gpu_memset": copies;
//   "cpu_op": an operator (pid, tid, ts, dur; args: External id, "Input Dims" or "Input dims",
//   "Input type", and the collective's args for record_param_comms); "cuda_runtime" /
//   "cuda_driver": a launch (args: correlation, External id), whose ts decides which step the
//   kernel belongs to, and whose pid / tid and ts find the op that launched it in traces of older
//   profilers, which write a kernel's correlation id as its External id (link_by_id and
//   link_by_thread in the .cpp); "cpu_op" / "user_annotation" named PREFIX<n> (ProfilerStep#<n> by
//   default): a step.
// A trace taken on AMD GPUs (ROCm) has the same layout, its runtime calls named for HIP
// (hipLaunchKernel, hipExtModuleLaunchKernel, hipStreamWaitEvent, ...; pytorch/kineto
// libkineto/src/RoctracerActivity_inl.h, RocprofActivity_inl.h); the older roctracer back end writes
// a kernel's "External id" and nothing else, so a kernel without a correlation id is linked by its
// External id in every layout.
// The document is never held whole: nlohmann::json's SAX parser reads it through a 256 KiB buffer
// (calibrate/traces/trace_stream.hpp inflates a gzip file and bounds tokens), so memory grows with the number of GPU
// activities kept (56 bytes each, plus 24 per launch record and about 96 per matmul or collective
// op, whose shape is worked out as it is read), not with the file. A trace of the older layout is
// read a second time for its launches and op ranges (32 bytes each).
#include <string>

#include "calibrate/traces/trace_model.hpp"

namespace overlap::traces {

// An "X" event the reader uses (a kernel, a copy, a launch, an op, a step) whose ts is missing, not
// a number or outside [0, 2^62) ns, whose dur (where used) is missing, not a number, negative, or
// ends past 2^62 ns, is skipped and counted in RankTrace::skipped ("kernel: dur negative"); with
// `strict` it refuses the file.
// Throws InputError naming the file: truncated or malformed JSON (with line and column), a
// truncated gzip stream or bytes after it, a cap of trace_limits.hpp, a distributedInfo rank or
// world_size that is not an integer in range, no traceEvents, no GPU kernels.
RankTrace read_kineto_json(const std::string& path, const std::string& step_prefix, const KernelClassifier& kernels,
                           bool strict = false);

}  // namespace overlap::traces
