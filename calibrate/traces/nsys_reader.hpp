#pragma once
// An Nsight Systems report exported to SQLite (`nsys export --type sqlite report.nsys-rep`).
//
// Tables and columns read, as NVIDIA's "SQLite Export Schema Reference" (Nsight Systems export
// documentation, sections CUDA, NVTX and Secondary tables) documents them; times are integer
// nanoseconds:
//   CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, correlationId, shortName and
//     demangledName: ids into StringIds; the demangled name is used) -- required
//   StringIds (id, value)                                     -- required
//   CUPTI_ACTIVITY_KIND_MEMCPY / CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId)   -- optional
//   CUPTI_ACTIVITY_KIND_RUNTIME (start, correlationId): the launch, which decides a kernel's step
//   NVTX_EVENTS (start, end, text or textId -> StringIds): ranges named PREFIX<n> are steps
// An export has no tensor shapes and no collective arguments: every GEMM is "shape unknown" and a
// collective's size is unknown; the rank is not recorded either (see cmd_trace: file order).
#include <string>
#include <vector>

#include "calibrate/traces/trace_model.hpp"

namespace overlap::traces {

// Only real tables are read (sqlite_master type 'table'): a view of an expected name is refused, as
// its query could run without end. Rows whose times are not integers, are out of range or end
// before they start are skipped and counted (RankTrace::skipped), or with `strict` refuse the file.
// Throws InputError naming the file and the missing table / column.
std::vector<RankTrace> read_nsys_sqlite(const std::string& path, const std::string& step_prefix,
                                        const KernelClassifier& kernels, bool strict = false);

}  // namespace overlap::traces
