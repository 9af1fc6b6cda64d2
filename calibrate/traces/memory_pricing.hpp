#pragma once
// A memory-bound kernel (elementwise, norm, reduction, copy, cast) priced by the bytes its op reads
// and writes, from the op's Input Dims and Input types, streamed through HBM as the engine runs the
// step's memory-bound kernels (cost_model/step_kernels.hpp; streaming_kernel_ps: hbm_latency_us +
// bytes / min(hbm_bandwidth_gbps x hbm_efficiency, sm_count x hbm_sm_gbps)).
#include <optional>

#include "calibrate/traces/trace_model.hpp"
#include "cost_model/hardware_profile.hpp"

namespace overlap::traces {

// Bytes through HBM: every tensor input read once; written, what the op's kind writes:
//   reductions (aten::sum, mean, amax, amin, max, min, norm, linalg_vector_norm, argmax, argmin):
//     their output is the reduced shape, counted as nothing beside the input;
//   aten::copy_ (copies and casts into an existing tensor): reads its source (input 1) and writes its
//     destination (input 0), each in its own dtype;
//   every other op (elementwise, broadcasts, norms, softmax, casts by aten::to / _to_copy): writes a
//     tensor the size of its largest input, in that input's dtype (a cast to another dtype is then off
//     by the ratio of the element sizes on the write).
// nullopt when an input's dtype has no known size or no input is a tensor.
std::optional<Bytes> memory_bound_bytes(const OpInfo& op);

}  // namespace overlap::traces
