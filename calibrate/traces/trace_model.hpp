#pragma once
// What `overlap-sim trace` keeps of a profile: GPU activities (kernels, copies), the CPU-side
// information that names their shapes and messages, and step ranges. Kept compact (a 1 GB trace
// holds millions of events): names are interned, times are integer nanoseconds, and only the CPU
// ops that can describe a GEMM or a collective are kept.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "calibrate/traces/kernel_kind.hpp"

namespace overlap::traces {

enum class ActivityClass : std::uint8_t { compute, communication, memory };

// The CPU op a GPU activity was linked to, as the readers resolve it.
enum class OpLink : std::uint8_t { none, gemm, comm, shaped };

struct GpuActivity {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t external_id = -1;  // Kineto "External id" as recorded (-1: none)
  std::int64_t correlation = -1;  // CUDA correlation id of the launch (-1: none)
  std::uint32_t name = 0;         // index into RankTrace::names
  std::int32_t device = 0;
  std::int32_t op = -1;           // index into RankTrace::gemm_ops, comm_ops or shaped_ops, as `link` says
  std::int32_t stream = -1;       // CUDA stream (Kineto args.stream, else tid; nsys streamId); -1: not recorded
  // Blocks in the grid's x (Kineto args.grid[0], nsys gridX); -1: not recorded. A NCCL kernel's is its
  // channel count, one block per SM (calibrate/traces/sm_share.hpp).
  std::int32_t grid_x = -1;
  ActivityClass cls = ActivityClass::compute;
  KernelKind kind = KernelKind::unknown;
  CommLibrary library = CommLibrary::none;
  OpLink link = OpLink::none;
};

// The class a family counts in for exposed communication: communication kernels of every library
// are communication, copies (peer copies aside) memory, every other kernel compute.
ActivityClass activity_class(const KernelFamily& family);

// A CPU op (or a kernel's own args) as the reader sees it while parsing; what is kept of it is a
// GemmOp or a CommOp.
struct OpInfo {
  std::string name;                                // aten::mm, record_param_comms, ...
  std::vector<std::vector<std::int64_t>> input_dims;  // "Input Dims" as recorded
  std::vector<std::string> input_types;            // "Input type"
  std::string collective;                          // "Collective name"
  std::optional<std::int64_t> in_nelems, out_nelems, group_size;
  std::string dtype;                               // "dtype" of the collective
  std::string process_group;                       // "Process Group Name"
  std::vector<std::string> concrete_inputs;        // "Concrete Inputs" (PyTorch 2.1+): scalar arguments as text
};

// A GEMM's problem read from its CPU op's Input Dims (batch 1 unless bmm / baddbmm / batched
// matmul).
struct GemmShape {
  std::int64_t batch = 1, m = 0, n = 0, k = 0;
  std::string dtype;  // "Input type" of the first matrix operand, as PyTorch names it
};
// nullopt when the op is not one whose operands name M, N, K unambiguously.
std::optional<GemmShape> gemm_shape(const OpInfo& op);

// What is kept of a matmul op (aten::mm, ...): 48 bytes, strings interned in RankTrace::names.
struct GemmOp {
  std::int64_t batch = 0, m = 0, n = 0, k = 0;  // batch 0: shape unknown
  std::uint32_t name = 0, dtype = 0;
};
// What is kept of a collective's args; -1: not in the trace.
struct CommOp {
  std::int64_t in_nelems = -1, out_nelems = -1, group_size = -1;
  std::uint32_t collective = 0, dtype = 0, process_group = 0;
};

// What is kept of another op with Input Dims, to price the attention or memory-bound kernel it
// launches (calibrate/traces/attention_pricing.hpp, memory_pricing.hpp): 72 bytes.
struct ShapedOp {
  std::int64_t bytes = -1;  // memory_bound_bytes(); -1: unknown
  // attention_shape(); batch 0: not an attention op (or causal not recorded)
  std::int64_t batch = 0, heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
  std::uint32_t name = 0, dtype = 0;  // op name; the query's dtype (attention) or the first input's
  bool causal = false, backward = false;
};

// A synchronisation the trace records, for the replay (calibrate/traces/replay_graph.hpp).
enum class SyncKind : std::uint8_t {
  stream_wait_event,  // the stream waits for an event recorded on another stream (cudaStreamWaitEvent)
  event_record,       // cudaEventRecord: the event is the recording stream's work launched so far
  stream_sync,        // the CPU thread waits for one stream (cudaStreamSynchronize)
  device_sync,        // the CPU thread waits for every stream (cudaDeviceSynchronize)
  event_sync,         // the CPU thread waits for an event (cudaEventSynchronize)
};
struct SyncCall {
  std::int64_t start_ns = 0, end_ns = 0;  // the runtime call (or CUPTI sync record) as recorded
  std::int64_t correlation = -1;          // its correlation id: orders it among the launches
  std::int64_t thread = -1;               // the calling CPU thread (-1: not recorded)
  // Kineto's cuda_sync record of a stream wait (PyTorch 2.x): the waiting stream, the stream
  // waited on and the correlation id of the cudaEventRecord it waits for; -1 when not recorded.
  std::int64_t event_record_correlation = -1;
  std::int32_t stream = -1, wait_on_stream = -1;
  SyncKind kind = SyncKind::device_sync;
};

struct StepRange {
  std::string name;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

struct RankTrace {
  std::string file;
  // One process of an export that holds several ("pid 4242, GPU 3"); "" when the file is one rank.
  std::string part;
  std::string format;  // "kineto" or "nsys"
  std::optional<int> rank, world_size;
  std::string backend;
  std::vector<std::string> names;
  std::vector<GpuActivity> activities;
  std::vector<GemmOp> gemm_ops;
  std::vector<CommOp> comm_ops;
  std::vector<ShapedOp> shaped_ops;  // Kineto: ops with Input Dims that are neither GEMM nor collective
  // (External id, index into gemm_ops / comm_ops): how the readers link kernels to ops.
  std::vector<std::pair<std::int64_t, std::int32_t>> gemm_by_external_id, comm_by_external_id, shaped_by_external_id;
  std::vector<StepRange> steps;
  // (correlation, launch time): when the CPU launched each activity, which decides its step.
  std::vector<std::pair<std::int64_t, std::int64_t>> launches;
  // The CPU thread of each launch, index for index with `launches` ((pid, tid) folded to one key;
  // -1: not recorded): the replay's launch order per thread.
  std::vector<std::int64_t> launch_threads;
  // Synchronisations the trace records (runtime calls and CUPTI sync records), in file order.
  std::vector<SyncCall> syncs;
  // Events the reader could not read as written and left out, by what and why ("kernel: dur
  // negative", "kernel: start not an integer"): reported with the figures, or, read with strict,
  // the file refused at the first one.
  std::map<std::string, std::int64_t> skipped;
};

// Interns kernel names: each distinct name once.
class NameTable {
 public:
  explicit NameTable(std::vector<std::string>& names) : names_(names) {}
  std::uint32_t intern(const std::string& name);

 private:
  std::vector<std::string>& names_;
  std::unordered_map<std::string, std::uint32_t> index_;
};

// The collective a kernel name says: all_reduce, all_gather, reduce_scatter, all_to_all, broadcast,
// reduce, send_recv, send, recv; "" when it names none.
std::string collective_from_kernel_name(const std::string& name);

// Reads a file in either format, chosen by its first bytes (SQLite header, gzip magic, or JSON),
// each kernel's family from `kernels` (calibrate/traces/kernel_kind.hpp). Only a regular file within
// the caps of calibrate/traces/trace_limits.hpp is read.
// Throws InputError naming the file and what is wrong or missing; with `strict`, also at the first
// event the reader cannot read as written (else counted in RankTrace::skipped).
RankTrace read_trace(const std::string& path, const std::string& step_prefix, const KernelClassifier& kernels = {},
                     bool strict = false);
// The same, one RankTrace per rank the file holds: a Kineto trace is one rank; an Nsight Systems
// export of several processes (nsys profile of a launcher that starts every rank) is one per process.
std::vector<RankTrace> read_traces(const std::string& path, const std::string& step_prefix,
                                   const KernelClassifier& kernels = {}, bool strict = false);

// A skipped event: counted in `trace.skipped` under "WHAT: WHY", or with `strict` refused:
// InputError naming the file, `key` (the event's field) and why.
void skip_event(RankTrace& trace, bool strict, const std::string& what, const std::string& why, const std::string& key);

}  // namespace overlap::traces
