#include "kernels/gemm/signal_gemm.hpp"

#include <cutlass/cutlass.h>
#include <cutlass/gemm/device/gemm.h>
#include <cutlass/gemm/kernel/default_gemm.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>

#include "kernels/common/check.hpp"

namespace overlap::cuda {
namespace {

using ElementIn = cutlass::bfloat16_t;
using ElementOut = cutlass::bfloat16_t;
using Layout = cutlass::layout::RowMajor;
using EpilogueOp = cutlass::epilogue::thread::LinearCombination<ElementOut, 8, float, float>;
// One instantiation only (CI compile time): the Sm80 multistage tensor-op mainloop that
// FlashOverlap's published kernels use, with the epilogue's scatter iterator (ScatterD) so one
// per-CTA row-index table places the tile for every layout.
using Kernel = cutlass::gemm::kernel::DefaultGemm<
    ElementIn, Layout, 8, ElementIn, Layout, 8, ElementOut, Layout, float, cutlass::arch::OpClassTensorOp,
    cutlass::arch::Sm80, cutlass::gemm::GemmShape<128, 128, 32>, cutlass::gemm::GemmShape<64, 64, 32>,
    cutlass::gemm::GemmShape<16, 8, 16>, EpilogueOp, cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<1>, 4,
    false, cutlass::arch::OpMultiplyAdd, cutlass::gemm::SharedMemoryClearOption::kNone, false, false,
    /*ScatterD=*/true>::GemmKernel;
using Mma = Kernel::Mma;
using Epilogue = Kernel::Epilogue;
static_assert(Mma::Shape::kM == kSignalTile && Mma::Shape::kN == kSignalTile, "tile size");

struct Params {
  Mma::IteratorA::Params params_a;
  Mma::IteratorB::Params params_b;
  Epilogue::OutputTileIterator::Params params_d;
  const ElementIn* a;
  const ElementIn* b;
  ElementOut* d;
  int m, n, k;
  int tiles_m, tiles_n, swizzle;
  GemmLayout layout;
  const int* group_end;
  int groups;
  int rs_parts;
  unsigned int* counters;
  unsigned long long* tile_end_ns;
  PublishFence fence;
};

__device__ __forceinline__ void tile_of_slot(int slot, int tiles_m, int tiles_n, int swizzle, int* tm, int* tn) {
  const int band = slot / (swizzle * tiles_n);
  const int rows = min(swizzle, tiles_m - band * swizzle);
  const int idx = slot - band * swizzle * tiles_n;
  *tn = idx / rows;
  *tm = band * swizzle + idx % rows;
}

__device__ __forceinline__ unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void __launch_bounds__(Kernel::kThreadCount) signal_gemm_kernel(Params p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  auto& shared = *reinterpret_cast<Kernel::SharedStorage*>(smem_raw);
  __shared__ int row_index[kSignalTile];

  const int slot = blockIdx.x;
  int tm = 0, tn = 0;
  tile_of_slot(slot, p.tiles_m, p.tiles_n, p.swizzle, &tm, &tn);
  const int thread_idx = threadIdx.x;
  const int warp_idx = cutlass::canonical_warp_idx_sync();
  const int lane_idx = threadIdx.x % 32;

  Mma::IteratorA it_a(p.params_a, const_cast<ElementIn*>(p.a), {p.m, p.k}, thread_idx, {tm * kSignalTile, 0});
  Mma::IteratorB it_b(p.params_b, const_cast<ElementIn*>(p.b), {p.k, p.n}, thread_idx, {0, tn * kSignalTile});
  Mma mma(shared.main_loop, thread_idx, warp_idx, lane_idx);
  Mma::FragmentC acc;
  acc.clear();
  const int k_iters = (p.k + Mma::Shape::kK - 1) / Mma::Shape::kK;
  mma(k_iters, acc, it_a, it_b, acc);

  // Where each of the tile's 128 rows goes: a row index in units of the output's leading dimension.
  int group = 0;
  if (p.groups > 0) {
    while (group < p.groups - 1 && slot >= p.group_end[group]) ++group;
  }
  ElementOut* base = p.d;
  for (int r = threadIdx.x; r < kSignalTile; r += blockDim.x) {
    if (p.layout == GemmLayout::row_major) {
      row_index[r] = tm * kSignalTile + r;
    } else if (p.layout == GemmLayout::tile_major) {
      row_index[r] = slot * kSignalTile + r;
    } else {
      const int first = group == 0 ? 0 : p.group_end[group - 1];
      const int g_tiles = p.group_end[group] - first;
      const int sub = kSignalTile / p.rs_parts;
      const int j = r / sub;
      row_index[r] = first * kSignalTile + j * (g_tiles * sub) + (slot - first) * sub + r % sub;
    }
  }
  if (p.layout == GemmLayout::row_major) base += static_cast<long long>(tn) * kSignalTile;
  __syncthreads();

  Epilogue::OutputTileIterator it_d(p.params_d, base, {kSignalTile, kSignalTile}, thread_idx, {0, 0}, row_index);
  Epilogue::OutputTileIterator it_c(p.params_d, nullptr, {kSignalTile, kSignalTile}, thread_idx, {0, 0}, row_index);
  Epilogue epilogue(shared.epilogue, thread_idx, warp_idx, lane_idx);
  EpilogueOp out_op(EpilogueOp::Params(1.0f, 0.0f));
  epilogue(out_op, it_d, acc, it_c);

  if (p.counters || p.tile_end_ns) {
    // The CTA barrier orders every thread's tile stores before thread 0's gpu-scope release
    // (cumulative, PTX memory model), so a waiter that sees the count sees the data. A
    // __threadfence in each of the 128 threads cost 4.3 % of the GEMM on an H100 (first run,
    // 2026-11-22); the published FlashOverlap kernel has no fence at all (facts.md). The release
    // waits for the stores to reach L2 while the CTA holds its SM: with one CTA per SM that is
    // 0.7-1.7 % of the GEMM; with two, the other CTA uses the SM meanwhile (calibrate signal_gemm).
    __syncthreads();
    if (threadIdx.x == 0) {
      if (p.counters) {
        unsigned int* c = &p.counters[group];
        if (p.fence == PublishFence::release_red) {
          asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(c) : "memory");
        } else if (p.fence == PublishFence::acq_rel_fence) {
          asm volatile("fence.acq_rel.gpu;\n\tred.relaxed.gpu.global.add.u32 [%0], 1;" ::"l"(c) : "memory");
        } else {
          asm volatile("red.relaxed.gpu.global.add.u32 [%0], 1;" ::"l"(c) : "memory");
        }
      }
      if (p.tile_end_ns) p.tile_end_ns[slot] = globaltimer_ns();
    }
  }
}

}  // namespace

void TileOrder::tile_of(int slot, int* tm, int* tn) const {
  const int band = slot / (swizzle * tiles_n);
  const int rows = std::min(swizzle, tiles_m - band * swizzle);
  const int idx = slot - band * swizzle * tiles_n;
  *tn = idx / rows;
  *tm = band * swizzle + idx % rows;
}

std::vector<int> TileOrder::slot_of_tile() const {
  std::vector<int> out(static_cast<std::size_t>(tiles()));
  for (int s = 0; s < tiles(); ++s) {
    int tm = 0, tn = 0;
    tile_of(s, &tm, &tn);
    out[static_cast<std::size_t>(tm * tiles_n + tn)] = s;
  }
  return out;
}

std::vector<int> group_ends(const std::vector<int>& groups_in_waves, int wave_tiles, int tiles) {
  std::vector<int> ends;
  long long acc = 0;
  for (int g : groups_in_waves) {
    if (g < 1) throw std::invalid_argument("wave groups must be positive");
    acc += static_cast<long long>(g) * wave_tiles;
    ends.push_back(static_cast<int>(std::min<long long>(acc, tiles)));
  }
  const long long waves = (tiles + wave_tiles - 1) / wave_tiles;
  long long sum = 0;
  for (int g : groups_in_waves) sum += g;
  if (sum != waves) {
    throw std::invalid_argument("wave groups sum to " + std::to_string(sum) + " waves; the GEMM has " + std::to_string(waves));
  }
  return ends;
}

void signal_gemm(const SignalGemmArgs& a, cudaStream_t stream) {
  if (a.m % kSignalTile || a.n % kSignalTile || a.k % kSignalTile || a.m <= 0 || a.n <= 0 || a.k <= 0) {
    throw std::invalid_argument("signal_gemm: m, n, k must be positive multiples of 128");
  }
  if (a.layout == GemmLayout::tile_major_rs && (a.rs_parts < 1 || kSignalTile % a.rs_parts || !a.group_end)) {
    throw std::invalid_argument("signal_gemm: tile_major_rs needs group ends and rs_parts dividing 128");
  }
  if (a.counters && !a.group_end) throw std::invalid_argument("signal_gemm: counters need group ends");
  Params p{};
  p.params_a = Mma::IteratorA::Params(Layout(a.k));
  p.params_b = Mma::IteratorB::Params(Layout(a.n));
  p.params_d = Epilogue::OutputTileIterator::Params(Layout(a.layout == GemmLayout::row_major ? a.n : kSignalTile));
  p.a = reinterpret_cast<const ElementIn*>(a.a);
  p.b = reinterpret_cast<const ElementIn*>(a.b);
  p.d = reinterpret_cast<ElementOut*>(a.d);
  p.m = a.m;
  p.n = a.n;
  p.k = a.k;
  p.tiles_m = a.m / kSignalTile;
  p.tiles_n = a.n / kSignalTile;
  p.swizzle = a.swizzle < 1 ? 1 : a.swizzle;
  p.layout = a.layout;
  p.group_end = a.group_end;
  p.groups = a.groups;
  p.rs_parts = a.rs_parts;
  p.counters = a.counters;
  p.tile_end_ns = a.tile_end_ns;
  p.fence = a.fence;
  // ctas_per_sm CTAs per SM, fixed by the dynamic shared memory asked for: over half an SM's for
  // one (FlashOverlap's big-tile kernels: a wave is exactly as many tiles as SMs), a third plus the
  // driver's 1 KB per-block reserve for two (a wave of 2 x SMs tiles). The simulator's
  // gpu.gemm_ctas_per_sm says the same.
  if (a.ctas_per_sm < 1 || a.ctas_per_sm > 2) throw std::invalid_argument("signal_gemm: ctas_per_sm must be 1 or 2");
  int dev = 0, per_sm = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  const int smem_one = std::max(static_cast<int>(sizeof(Kernel::SharedStorage)), per_sm / 2 + 1024);
  const int smem = std::max(static_cast<int>(sizeof(Kernel::SharedStorage)), per_sm / (a.ctas_per_sm + 1) + 1024);
  // The dynamic shared-memory limit is raised once per context (green contexts are contexts too).
  static thread_local std::set<CUcontext> configured;
  CUcontext ctx = nullptr;
  CU_CHECK(cuCtxGetCurrent(&ctx));
  if (configured.insert(ctx).second) {
    CUDA_CHECK(cudaFuncSetAttribute(signal_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_one));
  }
  signal_gemm_kernel<<<p.tiles_m * p.tiles_n, Kernel::kThreadCount, smem, stream>>>(p);
  CUDA_CHECK_LAUNCH();
}

}  // namespace overlap::cuda
