#pragma once
// One gemm_collective configuration on a node: per-rank operands, the reference result (cuBLAS
// GEMM with fp32 output plus a reference collective: a local fp32 sum on virtual ranks, an fp32
// NCCL all-reduce on real nodes), the scheme's output buffers and the description of how its output
// is laid out, so the check compares exactly what each rank holds (each scheme's output is
// checked against a reference, the relative error printed, before anything is timed).
//
// Conventions follow the simulator's gemm_collective workload (sim/workload.hpp): every rank computes
// C_r = A_r B_r with A_r m x k and B_r k x n; all_reduce leaves sum_r C_r on every rank;
// reduce_scatter leaves rank r rows [r m/T, (r+1) m/T) of the sum (or the scheme's own row order,
// described by `layout`); all_gather gathers A (rank r holds rows [r m/T, (r+1) m/T)) before the GEMM.
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/comm/node.hpp"
#include "kernels/schemes/run_spec.hpp"

namespace overlap::cuda {

// How out[r] is laid out, for the check: row blocks of width n in order (plain), or 128-wide
// tiles / tile stripes in order (FlashOverlap's reordered layouts).
struct OutputPiece {
  std::int64_t row = 0, col = 0;   // top-left in the reference result
  std::int64_t rows = 0, cols = 0; // block size; stored contiguously (row-major rows x cols)
};

class GemmRun {
 public:
  GemmRun(Node& node, const RunSpec& spec, cublasHandle_t cublas, ncclComm_t ref_comm);
  ~GemmRun();

  Node& node;
  const RunSpec cfg;
  int T = 0;
  std::int64_t m = 0, n = 0, k = 0;

  // Per rank (indexed by rank; only local ranks allocated): operands and outputs.
  std::vector<DeviceBuffer<__nv_bfloat16>> a;        // m x k (all_gather: the gathered A, filled by the scheme)
  std::vector<DeviceBuffer<__nv_bfloat16>> a_shard;  // all_gather: rank r's rows, m/T x k
  std::vector<DeviceBuffer<__nv_bfloat16>> b;        // k x n
  std::vector<DeviceBuffer<__nv_bfloat16>> c;        // m x n: the local GEMM result / partials
  std::vector<DeviceBuffer<__nv_bfloat16>> out;      // the scheme's result on rank r
  std::vector<std::vector<OutputPiece>> layout;      // set by the scheme: what out[r] holds, in order

  // Scratch the schemes ask for by name (allocated on first use, per rank). Schemes ask for all of
  // it in their setup, so share_buffers() shares it too.
  __nv_bfloat16* scratch(int rank, const std::string& name, std::size_t elems);

  bool is_local(int rank) const;
  // Rank j's copy of a buffer every rank holds (f(r) is rank r's), as this process addresses it, for
  // a pull of `bytes` from it: f(j) where rank j is local; on a real node pulling by copy engine,
  // this rank's f(r) mapped into rank j's memory (symmetric buffers: node.peer); else nullptr (the
  // receiver of an NCCL exchange does not name the sender's buffer).
  const void* on_rank(int j, std::size_t bytes, const std::function<const void*(int)>& f) const;
  // After the scheme's setup: shares every operand, output and scratch buffer with the peers (real
  // nodes pulling by copy engine; nothing elsewhere), until this run ends.
  void share_buffers();

  // Enqueues one run of the scheme for every local rank (compute-only: every transfer skipped).
  std::function<void(bool skip_comm)> enqueue;
  // An extra check after the output check (FlashOverlap: the reorder-aware RMSNorm reading the
  // reordered output back); returns its relative error.
  std::function<double()> extra_check;
  // The fp32 reference of what the primitive leaves on rank r (all_reduce / reduce_scatter: the
  // whole sum, m x n, shared by the ranks).
  const float* reference(int r) const;
  std::string what;  // one line: what the scheme does here

  // Runs once and compares every local rank's out with the reference; returns the largest relative
  // error (NaN counts as failure). On real nodes the maximum over ranks.
  double check();
  // Median-timed runs: latency (or compute-only) samples in us from the root stream's events.
  std::vector<double> time(bool skip_comm, int warmup, int reps);
  std::vector<double> host_enqueue_us;  // the last time() call's host enqueue time per repetition

  cudaStream_t root() const { return root_; }

 private:
  cublasHandle_t cublas_;
  ncclComm_t ref_comm_;
  cudaStream_t root_ = nullptr;
  cudaEvent_t root_event_ = nullptr;
  std::vector<DeviceBuffer<float>> ref_;  // per rank fp32 reference of what the primitive leaves
  std::vector<std::vector<std::pair<std::string, DeviceBuffer<__nv_bfloat16>>>> scratch_;
  // Declared last, so it ends (peers unmap) before any buffer above is freed.
  std::shared_ptr<void> shared_;
};

// Schemes (one file each): set run.enqueue, run.layout and run.what. Throw std::invalid_argument
// for parameters the kernels cannot run.
void setup_no_overlap(GemmRun& run);
void setup_data_slicing(GemmRun& run, int chunks);
void setup_async_tp(GemmRun& run, int streams);
void setup_commfuse(GemmRun& run, int m_slices, const std::string& schedule);
// Groups are in waves of wave_sms x ctas_per_sm tiles; ctas_per_sm must be the runner's
// (kRunnerGemmCtasPerSm), which the virtual node's profile states.
void setup_flashoverlap(GemmRun& run, const std::vector<int>& groups, int wave_sms, int ctas_per_sm);
// The node's transport for the scheme's point-to-point steps, then the scheme's setup from
// run.cfg: std::invalid_argument for a scheme the kernels do not run on gemm_collective.
void use_scheme_transport(Node& node, const RunSpec& spec);
void setup_scheme(GemmRun& run);

// The rows x n x k GEMM of `a_rows` (row-major rows x k) with rank r's B into `c_rows` (row-major
// rows x n), on `stream` in rank r's partition: the signalling GEMM without signals, so every scheme
// computes with the same kernel FlashOverlap uses.
void gemm_rows(GemmRun& run, int r, cudaStream_t stream, const __nv_bfloat16* a_rows, __nv_bfloat16* c_rows,
               std::int64_t rows);
// Per-rank pointer vectors over all ranks (nullptr where the rank is not local).
std::vector<const __nv_bfloat16*> const_ptrs(const GemmRun& run, const std::function<const __nv_bfloat16*(int)>& f);
std::vector<__nv_bfloat16*> ptrs(const GemmRun& run, const std::function<__nv_bfloat16*(int)>& f);
std::vector<cudaStream_t> stream_ptrs(GemmRun& run, const std::function<cudaStream_t(int)>& f);

// Rows [row0, row0 + rows) of full width n.
inline OutputPiece rows_piece(std::int64_t row0, std::int64_t rows, std::int64_t n) { return {row0, 0, rows, n}; }

}  // namespace overlap::cuda
