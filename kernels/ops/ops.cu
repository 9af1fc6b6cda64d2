#include "kernels/ops/ops.hpp"

#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "kernels/common/check.hpp"

namespace overlap::cuda {
namespace {

constexpr int kThreads = 256;

int blocks_for(std::size_t n) {
  const std::size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 * 16 ? b : 65535 * 16);
}

__device__ float hash_uniform(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + i + 1;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return static_cast<float>(x >> 40) / static_cast<float>(1ull << 24) * 2.0f - 1.0f;  // [-1, 1)
}

__global__ void fill_bf16_kernel(__nv_bfloat16* p, std::size_t n, std::uint64_t seed, float scale) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    float v = hash_uniform(seed, i) * scale;
    if (v == 0.0f) v = scale * 1e-3f;
    p[i] = __float2bfloat16(v);
  }
}

__global__ void fill_fp8_kernel(__nv_fp8_e4m3* p, std::size_t n, std::uint64_t seed, float scale) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    p[i] = __nv_fp8_e4m3(hash_uniform(seed, i) * scale);
  }
}

__global__ void fill_value_kernel(__nv_bfloat16* p, std::size_t n, float v) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    p[i] = __float2bfloat16(v);
  }
}

__global__ void sum_kernel(__nv_bfloat16* out, PtrList in, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    float a = 0;
    for (int j = 0; j < in.count; ++j) a += __bfloat162float(in.p[j][i]);
    out[i] = __float2bfloat16(a);
  }
}

// The same sum, 8 elements per thread with 16-byte loads and stores (every pointer 16-byte aligned):
// a reduction that runs near HBM speed, as NCCL's does, instead of being bound by 2-byte accesses.
// The accumulation order over inputs is the scalar kernel's, so results are bit-identical.
__global__ void sum_vec_kernel(uint4* out, PtrList in, std::size_t vecs) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < vecs; i += std::size_t(gridDim.x) * blockDim.x) {
    float a[8] = {};
    for (int j = 0; j < in.count; ++j) {
      const uint4 v = reinterpret_cast<const uint4*>(in.p[j])[i];
      const auto* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float2 f = __bfloat1622float2(h[q]);
        a[2 * q] += f.x;
        a[2 * q + 1] += f.y;
      }
    }
    uint4 o;
    auto* oh = reinterpret_cast<__nv_bfloat162*>(&o);
#pragma unroll
    for (int q = 0; q < 4; ++q) oh[q] = __floats2bfloat162_rn(a[2 * q], a[2 * q + 1]);
    out[i] = o;
  }
}

__global__ void acc_kernel(float* acc, const __nv_bfloat16* x, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    acc[i] += __bfloat162float(x[i]);
  }
}

__global__ void acc_f32_kernel(float* acc, const float* x, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    acc[i] += x[i];
  }
}

__global__ void f32_to_bf16_kernel(__nv_bfloat16* out, const float* in, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    out[i] = __float2bfloat16(in[i]);
  }
}

__global__ void bf16_to_f32_kernel(float* out, const __nv_bfloat16* in, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    out[i] = __bfloat162float(in[i]);
  }
}

__global__ void rel_error_kernel(const __nv_bfloat16* out, const float* ref, std::size_t n, double* sums) {
  double d2 = 0, r2 = 0;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const double o = __bfloat162float(out[i]);
    const double r = ref[i];
    d2 += (o - r) * (o - r);
    r2 += r * r;
  }
  for (int off = 16; off > 0; off /= 2) {
    d2 += __shfl_down_sync(0xffffffffu, d2, off);
    r2 += __shfl_down_sync(0xffffffffu, r2, off);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&sums[0], d2);
    atomicAdd(&sums[1], r2);
  }
}

__global__ void sm_copy_kernel(uint4* dst, const uint4* src, std::size_t vecs, int iters) {
  for (int it = 0; it < iters; ++it) {
    for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < vecs; i += std::size_t(gridDim.x) * blockDim.x) {
      dst[i] = src[i];
    }
  }
}

__global__ void smid_kernel(int* smid_of_block, std::uint64_t hold_ns) {
  extern __shared__ unsigned char hold_sm[];  // sized to allow one CTA per SM
  if (threadIdx.x == 0) {
    unsigned int id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    smid_of_block[blockIdx.x] = static_cast<int>(id);
    hold_sm[0] = 1;
    std::uint64_t t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < hold_ns);
  }
}

__global__ void gemv_kernel(__nv_bfloat16* y, const __nv_bfloat16* W, const __nv_bfloat16* x, std::int64_t rows,
                            std::int64_t cols) {
  const int lane = threadIdx.x & 31;
  const std::int64_t warps = std::int64_t(gridDim.x) * (blockDim.x / 32);
  for (std::int64_t r = std::int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; r < rows; r += warps) {
    const uint4* wrow = reinterpret_cast<const uint4*>(W + r * cols);
    const uint4* xv = reinterpret_cast<const uint4*>(x);
    float acc = 0;
    for (std::int64_t c = lane; c < cols / 8; c += 32) {
      const uint4 wv = wrow[c];
      const uint4 xx = xv[c];
      const __nv_bfloat162* w2 = reinterpret_cast<const __nv_bfloat162*>(&wv);
      const __nv_bfloat162* x2 = reinterpret_cast<const __nv_bfloat162*>(&xx);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 a = __bfloat1622float2(w2[j]);
        const float2 b = __bfloat1622float2(x2[j]);
        acc += a.x * b.x + a.y * b.y;
      }
    }
    for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
    if (lane == 0) y[r] = __float2bfloat16(acc);
  }
}

__global__ void empty() {}

__global__ void sleep_kernel(std::uint64_t ns) {
  // %globaltimer is in ns on every GPU since Volta; __nanosleep alone may return early.
  std::uint64_t t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (;;) {
    std::uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 >= ns) break;
    __nanosleep(1000);
  }
}

__global__ void wait_kernel(unsigned int* counter, unsigned int target) {
  // Acquire: the tiles counted were stored before their CTAs' release increments.
  volatile unsigned int* c = counter;
  while (*c < target) __nanosleep(100);
  __threadfence();
  *counter = 0;
}

template <bool kReordered>
__global__ void rmsnorm_kernel(__nv_bfloat16* out, const __nv_bfloat16* x, const int* slot_of_tile,
                               const __nv_bfloat16* w, std::int64_t rows, std::int64_t n, float eps) {
  const std::int64_t row = blockIdx.x;
  if (row >= rows) return;
  const std::int64_t tiles_n = n / 128;
  auto at = [&](std::int64_t col) -> float {
    if (!kReordered) return __bfloat162float(x[row * n + col]);
    const std::int64_t slot = slot_of_tile[(row / 128) * tiles_n + col / 128];
    return __bfloat162float(x[slot * 128 * 128 + (row % 128) * 128 + (col % 128)]);
  };
  float ss = 0;
  for (std::int64_t c = threadIdx.x; c < n; c += blockDim.x) {
    const float v = at(c);
    ss += v * v;
  }
  __shared__ float part[32];
  for (int off = 16; off > 0; off /= 2) ss += __shfl_down_sync(0xffffffffu, ss, off);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x / 32] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    float t = threadIdx.x < blockDim.x / 32 ? part[threadIdx.x] : 0.0f;
    for (int off = 16; off > 0; off /= 2) t += __shfl_down_sync(0xffffffffu, t, off);
    if (threadIdx.x == 0) part[0] = rsqrtf(t / static_cast<float>(n) + eps);
  }
  __syncthreads();
  const float inv = part[0];
  for (std::int64_t c = threadIdx.x; c < n; c += blockDim.x) {
    out[row * n + c] = __float2bfloat16(at(c) * inv * __bfloat162float(w[c]));
  }
}

}  // namespace

void fill_random_bf16(__nv_bfloat16* p, std::size_t n, std::uint64_t seed, float scale, cudaStream_t s) {
  fill_bf16_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, n, seed, scale);
  CUDA_CHECK_LAUNCH();
}
void fill_random_fp8(void* p, std::size_t n, std::uint64_t seed, float scale, cudaStream_t s) {
  fill_fp8_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<__nv_fp8_e4m3*>(p), n, seed, scale);
  CUDA_CHECK_LAUNCH();
}
void fill_value_bf16(__nv_bfloat16* p, std::size_t n, float v, cudaStream_t s) {
  fill_value_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, n, v);
  CUDA_CHECK_LAUNCH();
}
void sum_bf16(__nv_bfloat16* out, const PtrList& in, std::size_t n, cudaStream_t s) {
  if (in.count < 1 || in.count > 16) throw std::invalid_argument("sum_bf16: 1 to 16 inputs");
  auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  bool vec = n % 8 == 0 && aligned(out);
  for (int j = 0; j < in.count; ++j) vec = vec && aligned(in.p[j]);
  if (vec) {
    const std::size_t vecs = n / 8;
    const std::size_t b = (vecs + kThreads - 1) / kThreads;
    sum_vec_kernel<<<static_cast<int>(b < 4096 ? b : 4096), kThreads, 0, s>>>(reinterpret_cast<uint4*>(out), in, vecs);
  } else {
    sum_kernel<<<blocks_for(n), kThreads, 0, s>>>(out, in, n);
  }
  CUDA_CHECK_LAUNCH();
}
void accumulate_f32(float* acc, const __nv_bfloat16* x, std::size_t n, cudaStream_t s) {
  acc_kernel<<<blocks_for(n), kThreads, 0, s>>>(acc, x, n);
  CUDA_CHECK_LAUNCH();
}
void accumulate_f32_from_f32(float* acc, const float* x, std::size_t n, cudaStream_t s) {
  acc_f32_kernel<<<blocks_for(n), kThreads, 0, s>>>(acc, x, n);
  CUDA_CHECK_LAUNCH();
}
void f32_to_bf16(__nv_bfloat16* out, const float* in, std::size_t n, cudaStream_t s) {
  f32_to_bf16_kernel<<<blocks_for(n), kThreads, 0, s>>>(out, in, n);
  CUDA_CHECK_LAUNCH();
}
void bf16_to_f32(float* out, const __nv_bfloat16* in, std::size_t n, cudaStream_t s) {
  bf16_to_f32_kernel<<<blocks_for(n), kThreads, 0, s>>>(out, in, n);
  CUDA_CHECK_LAUNCH();
}

double relative_error(const __nv_bfloat16* out, const float* ref, std::size_t n, cudaStream_t s) {
  double* sums = nullptr;
  CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&sums), 2 * sizeof(double), s));
  CUDA_CHECK(cudaMemsetAsync(sums, 0, 2 * sizeof(double), s));
  rel_error_kernel<<<blocks_for(n) < 1024 ? blocks_for(n) : 1024, kThreads, 0, s>>>(out, ref, n, sums);
  CUDA_CHECK_LAUNCH();
  double h[2] = {0, 0};
  CUDA_CHECK(cudaMemcpyAsync(h, sums, sizeof h, cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaFreeAsync(sums, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  return h[1] > 0 ? std::sqrt(h[0] / h[1]) : std::nan("");
}

void sm_copy(void* dst, const void* src, std::size_t bytes, int ctas, int iters, cudaStream_t s) {
  // More than half of an SM's shared memory per CTA: at most one CTA per SM, so `ctas` CTAs hold
  // exactly `ctas` SMs (what the simulator's comm kernels model).
  int dev = 0, smem = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  const int want = smem / 2 + 1024;
  CUDA_CHECK(cudaFuncSetAttribute(sm_copy_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, want));
  sm_copy_kernel<<<ctas, 512, want, s>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src), bytes / 16, iters);
  CUDA_CHECK_LAUNCH();
}

int sms_reached_by_clusters(int cluster, int blocks, std::uint64_t hold_ns, cudaStream_t s) {
  if (cluster < 1 || blocks < 1) throw std::invalid_argument("sms_reached_by_clusters: cluster and blocks must be positive");
  const int grid = (blocks + cluster - 1) / cluster * cluster;
  int dev = 0, smem = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  const int want = smem / 2 + 1024;  // more than half an SM's: one CTA per SM
  CUDA_CHECK(cudaFuncSetAttribute(smid_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, want));
  if (cluster > 8) CUDA_CHECK(cudaFuncSetAttribute(smid_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  int* ids = nullptr;
  CUDA_CHECK(cudaMallocAsync(&ids, sizeof(int) * static_cast<std::size_t>(grid), s));
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(grid));
  cfg.blockDim = dim3(32);
  cfg.dynamicSmemBytes = static_cast<std::size_t>(want);
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(cluster);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  CUDA_CHECK(cudaLaunchKernelEx(&cfg, smid_kernel, ids, hold_ns));
  CUDA_CHECK_LAUNCH();
  std::vector<int> host(static_cast<std::size_t>(grid));
  CUDA_CHECK(cudaMemcpyAsync(host.data(), ids, sizeof(int) * host.size(), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaFreeAsync(ids, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  std::sort(host.begin(), host.end());
  return static_cast<int>(std::unique(host.begin(), host.end()) - host.begin());
}

void gemv_bf16(__nv_bfloat16* y, const __nv_bfloat16* W, const __nv_bfloat16* x, std::int64_t rows, std::int64_t cols,
               cudaStream_t s) {
  int dev = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const std::int64_t blocks = (rows + 7) / 8;
  gemv_kernel<<<static_cast<int>(blocks < sms * 16 ? blocks : sms * 16), 256, 0, s>>>(y, W, x, rows, cols);
  CUDA_CHECK_LAUNCH();
}

void empty_kernel(cudaStream_t s) {
  empty<<<1, 32, 0, s>>>();
  CUDA_CHECK_LAUNCH();
}

void sleep_on_stream(std::uint64_t ns, cudaStream_t s) {
  sleep_kernel<<<1, 1, 0, s>>>(ns);
  CUDA_CHECK_LAUNCH();
}

void wait_counter(unsigned int* counter, unsigned int target, cudaStream_t s) {
  wait_kernel<<<1, 1, 0, s>>>(counter, target);
  CUDA_CHECK_LAUNCH();
}

void rmsnorm_reordered(__nv_bfloat16* out, const __nv_bfloat16* reordered, const int* slot_of_tile,
                       const __nv_bfloat16* weight, std::int64_t rows, std::int64_t n, float eps, cudaStream_t s) {
  rmsnorm_kernel<true><<<static_cast<unsigned>(rows), 256, 0, s>>>(out, reordered, slot_of_tile, weight, rows, n, eps);
  CUDA_CHECK_LAUNCH();
}

void rmsnorm_rowmajor(__nv_bfloat16* out, const __nv_bfloat16* x, const __nv_bfloat16* weight, std::int64_t rows,
                      std::int64_t n, float eps, cudaStream_t s) {
  rmsnorm_kernel<false><<<static_cast<unsigned>(rows), 256, 0, s>>>(out, x, nullptr, weight, rows, n, eps);
  CUDA_CHECK_LAUNCH();
}

}  // namespace overlap::cuda
