#pragma once
// What a trace says about overlap, per rank and per step, and which GEMMs and collectives ran.
//
// Exposed communication is HolisticTraceAnalysis' definition (its comm_comp_overlap: the part of
// communication time during which no computation kernel runs), taken per GPU:
//   comm     = |U_comm|                 (U_comm: the union of the communication kernels' intervals)
//   compute  = |U_comp|                 (U_comp: the union of every other kernel's intervals)
//   exposed  = |U_comm| - |U_comm n U_comp|
//   overlap  = 1 - exposed / comm       (the share of communication hidden behind computation)
// Communication kernels are those of every library calibrate/traces/kernel_kind.hpp names (NCCL,
// DeepEP, NVSHMEM, userbuffers, FLUX, symmetric memory), peer copies, and a user's --comm-kernel
// patterns. Other copies and memsets (cat gpu_memcpy / gpu_memset) are neither: memory time.
// Rank figures sum their GPUs'; the overall figures sum the ranks'.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/traces/trace_model.hpp"

namespace overlap::traces {

struct OverlapFigures {
  std::int64_t compute_ns = 0, comm_ns = 0, exposed_ns = 0, memory_ns = 0;
  std::int64_t span_ns = 0;  // first activity's start to last one's end (max over GPUs)
  std::int64_t kernels = 0;  // compute + communication kernels counted
  // 1 - exposed / comm; nullopt when there is no communication.
  std::optional<double> overlap() const;
  OverlapFigures& operator+=(const OverlapFigures& o);
};

struct StepFigures {
  std::string name;
  OverlapFigures figures;
};

struct GemmGroup {
  std::string kernel, op;
  std::optional<GemmShape> shape;  // nullopt: "shape unknown"
  std::int64_t count = 0, total_ns = 0;
  std::vector<std::int64_t> durations_ns;  // each kernel's, in trace order (medians for fitting)
};

struct CommGroup {
  std::string kernel, collective;
  std::string library;  // library_name(): nccl, deepep, ...
  std::optional<std::int64_t> nelems, bytes, group_size;  // nullopt: not in the trace
  std::string dtype, process_group;
  std::int64_t count = 0, total_ns = 0;
  std::vector<std::int64_t> durations_ns;
  // Across ranks (calibrate/traces/collective_wait.hpp): the kernels matched with their peers'
  // and split into waiting for the last peer to arrive and the transfer after it.
  std::int64_t matched = 0, wait_ns = 0, transfer_ns = 0;
  std::vector<std::int64_t> transfer_durations_ns;
};

// Attention and memory-bound kernels whose op gave their shapes (RankTrace::shaped_ops), grouped by
// kernel, op and shape, for pricing (trace --hardware).
struct ShapedGroup {
  std::string kernel, op, kind;  // kind: attention or memory_bound
  std::string dtype;             // the op's (the query's for attention)
  ShapedOp shape;                // its name and dtype ids are RankTrace::names' and not used here
  std::int64_t count = 0, total_ns = 0;
};

// A communication kernel in the order it ran, for matching it with its peers' on other ranks.
struct CommKernel {
  std::int64_t start_ns = 0, end_ns = 0;
  std::int32_t group = 0;  // index into RankReport::comms
  std::int32_t activity = -1;  // index into RankTrace::activities (the replay joins collectives by it)
};

// Every kernel (and copy) group of a rank, for `trace --kernels`: a GEMM group (kernel, op and
// shape), a collective group (kernel and message), or any other kernel by name with its family.
struct KernelGroup {
  std::string kernel;
  ActivityClass cls = ActivityClass::compute;
  std::string kind;     // kind_name(): gemm, grouped_gemm, attention, memory_bound, collective, compute, copy, unknown
  std::string library;  // communication: library_name(); "" otherwise
  std::string what;  // the shape or message as describe() writes it; "" for other kernels
  std::int64_t count = 0, total_ns = 0, min_ns = 0, max_ns = 0;
};

struct RankReport {
  std::string file, format;
  std::string part;  // RankTrace::part
  int rank = 0;
  bool rank_from_trace = false;  // false: assigned by the order of the files
  OverlapFigures figures;
  std::vector<StepFigures> steps;
  std::vector<GemmGroup> gemms;  // by total time, longest first
  std::vector<CommGroup> comms;
  std::vector<ShapedGroup> shaped;   // by total time, longest first
  std::vector<KernelGroup> kernels;  // every group, by total time, longest first
  std::vector<CommKernel> comm_sequence;  // communication kernels by start (peer copies aside)
  std::optional<std::int64_t> clock_offset_ns;  // set by split_collective_waits when aligned
  std::int64_t gemm_kernels = 0, gemm_shape_unknown = 0, comm_kernels = 0, comm_size_unknown = 0;
  std::map<std::string, std::int64_t> skipped;  // RankTrace::skipped: events left out, by what and why
};

// Bytes of one element of a dtype as PyTorch / c10 names it (Float, BFloat16, float32, ...); 0 when
// unknown.
int dtype_bytes(const std::string& dtype);

// "MxNxK dtype" (batched: "Bx(MxNxK) dtype"), or "shape unknown".
std::string describe(const GemmGroup& g);
// "attention fwd 2x16x4096x4096x128 causal c10::BFloat16" (batch x heads x seq_q x seq_kv x head dim),
// "memory 196608 B c10::BFloat16".
std::string describe(const ShapedGroup& g);
// "all_reduce 2097152 B group 8", with "size unknown" / "group unknown" for what the trace lacks;
// another library's kernels start with its name ("deepep dispatch size unknown group unknown").
std::string describe(const CommGroup& g);
const char* class_name(ActivityClass c);  // compute, communication, memory

// Overlap figures of a set of activities (per GPU, then summed).
OverlapFigures measure(const std::vector<const GpuActivity*>& activities);

// A GEMM group is a kernel of the gemm family, or one of unknown family that a matmul op launched
// (its library's name is not one kernel_kind knows); only these carry the op's shape. The op's
// other kernels (the bias copy, cuBLAS' split-K reduction) are listed by their own family.
RankReport analyze(const RankTrace& trace);

}  // namespace overlap::traces
