#pragma once
// Small kernels every scheme and benchmark uses: random inputs, reductions of partial results,
// the relative-error check, the SM copy kernel with a chosen CTA count, the GEMV-like streaming
// kernel, an empty kernel for launch timing, FlashOverlap's wait kernel and the reorder-aware
// RMSNorm. Each launcher checks its launch (CUDA_CHECK_LAUNCH).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace overlap::cuda {

// Uniform values in [-scale, scale] from a counter hash of (seed, index): fresh inputs per seed,
// never zeros (METHOD.md: zeros hide unwritten outputs and run faster than real data).
void fill_random_bf16(__nv_bfloat16* p, std::size_t n, std::uint64_t seed, float scale, cudaStream_t s);
void fill_random_fp8(void* p_e4m3, std::size_t n, std::uint64_t seed, float scale, cudaStream_t s);
void fill_value_bf16(__nv_bfloat16* p, std::size_t n, float v, cudaStream_t s);  // poison before a run

// Up to 16 input pointers, passed by value (no device pointer tables to manage).
struct PtrList {
  const __nv_bfloat16* p[16];
  int count = 0;
  void add(const __nv_bfloat16* q) { p[count++] = q; }
};
// out[i] = sum_j in.p[j][i] (fp32 accumulation, one bf16 rounding): the reduction of partials.
void sum_bf16(__nv_bfloat16* out, const PtrList& in, std::size_t n, cudaStream_t s);
// acc[i] += x[i] (x bf16, acc fp32); and the final conversion.
void accumulate_f32(float* acc, const __nv_bfloat16* x, std::size_t n, cudaStream_t s);
void accumulate_f32_from_f32(float* acc, const float* x, std::size_t n, cudaStream_t s);
void f32_to_bf16(__nv_bfloat16* out, const float* in, std::size_t n, cudaStream_t s);
void bf16_to_f32(float* out, const __nv_bfloat16* in, std::size_t n, cudaStream_t s);

// ||out - ref||_2 / ||ref||_2 over n elements, in double; synchronises `s`. NaN anywhere -> NaN.
double relative_error(const __nv_bfloat16* out, const float* ref, std::size_t n, cudaStream_t s);

// Copies `bytes` (multiple of 16) from src to dst with exactly `ctas` CTAs of 512 threads, each CTA
// holding a whole SM (dynamic shared memory above half an SM's), `iters` times over the buffer.
void sm_copy(void* dst, const void* src, std::size_t bytes, int ctas, int iters, cudaStream_t s);

// y[r] = sum_c W[r, c] x[c] for a row-major bf16 W of rows x cols (cols multiple of 8): batch-1
// decode's weight streaming (delayed-tp-blog); one warp per row, 16-byte loads.
void gemv_bf16(__nv_bfloat16* y, const __nv_bfloat16* W, const __nv_bfloat16* x, std::int64_t rows,
               std::int64_t cols, cudaStream_t s);

// How many SMs the stream's SMs (a green-context partition, or the whole GPU) can give to thread
// block clusters of `cluster` CTAs, each CTA holding a whole SM as cuBLAS's big-tile kernels do: a
// grid of `blocks` such CTAs (rounded up to whole clusters) records where each CTA ran, each holding
// its SM for `hold_ns` so the first wave spreads over every SM it can reach; returns the distinct
// SMs used. A cluster's CTAs must share a GPC, so a partition whose SMs split unevenly over GPCs
// can host fewer SMs' worth of clusters than it has SMs. Synchronises `s`.
int sms_reached_by_clusters(int cluster, int blocks, std::uint64_t hold_ns, cudaStream_t s);

void empty_kernel(cudaStream_t s);
// One thread that holds the stream for `ns` nanoseconds (%globaltimer): work launched behind it
// queues up, so its timing shows the device-side gaps without the host's launch rate.
void sleep_on_stream(std::uint64_t ns, cudaStream_t s);

// FlashOverlap's wait kernel: one thread spins (__nanosleep(100)) until *counter >= target, then
// resets it to 0 for the next run (facts.md "FlashOverlap's published implementation"). Launch it on
// a high-priority stream; the communication of the group goes after it on the same stream.
void wait_counter(unsigned int* counter, unsigned int target, cudaStream_t s);

// RMSNorm over rows of width n reading the GEMM output in FlashOverlap's tile-major reordered layout
// (tile (tm, tn) of 128x128 stored contiguously at slot_of_tile[tm * tiles_n + tn] * 128 * 128):
// out[row, :] = x * rsqrt(mean(x^2) + eps) * weight, written row-major.
void rmsnorm_reordered(__nv_bfloat16* out, const __nv_bfloat16* reordered, const int* slot_of_tile,
                       const __nv_bfloat16* weight, std::int64_t rows, std::int64_t n, float eps, cudaStream_t s);
// The same RMSNorm on a plain row-major input (the reference, and the unreordered baseline).
void rmsnorm_rowmajor(__nv_bfloat16* out, const __nv_bfloat16* x, const __nv_bfloat16* weight, std::int64_t rows,
                      std::int64_t n, float eps, cudaStream_t s);

}  // namespace overlap::cuda
