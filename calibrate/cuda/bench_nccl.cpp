// nccl: all-reduce, reduce-scatter, all-gather and all-to-all over 1 KiB .. 1 GiB on every rank of
// an mpirun job (one process per GPU), nccl-tests style: S is the full array size, algbw = S / t,
// busbw = algbw x the nccl-tests factor (calibrate/core/calibration_plan.hpp). Then
// interference_nccl: the GEMM beside a large all-reduce running on another stream.
#include <algorithm>

#include "calibrate/core/calibration_plan.hpp"
#include "calibrate/cuda/driver.hpp"
#include "kernels/common/buffers.hpp"
#include "kernels/common/timing.hpp"
#include "kernels/gemm/cublaslt_gemm.hpp"
#include "kernels/ops/ops.hpp"

namespace overlap::calibrate {

void bench_nccl(Driver& d) {
  const auto& pr = d.process();
  if (pr.size < 2 || !d.wants(bench::nccl)) return;
  const ncclUniqueId id = cuda::exchange_nccl_id(pr, d.options().bootstrap_dir, "calibrate");
  ncclComm_t comm;
  NCCL_CHECK(ncclCommInitRank(&comm, pr.size, id, pr.rank));
  const int n = pr.size;
  const auto sizes = transfer_sizes();
  const std::size_t max_bytes = static_cast<std::size_t>(sizes.back());
  cuda::DeviceBuffer<unsigned char> send(max_bytes), recv(max_bytes);
  CUDA_CHECK(cudaMemsetAsync(send.get(), 0, max_bytes, d.stream()));
  cuda::fill_random_bf16(reinterpret_cast<__nv_bfloat16*>(send.get()), max_bytes / 2, 61 + pr.rank, 1.0f, d.stream());
  cudaStream_t s = d.stream();
  for (const char* prim : {"all_reduce", "reduce_scatter", "all_gather", "all_to_all"}) {
    const std::string p = prim;
    const int step = d.options().quick ? 4 : 1;
    for (std::size_t i = 0; i < sizes.size(); i += step) {
      const std::int64_t S = sizes[i];
      const std::size_t elems = static_cast<std::size_t>(S) / 2;  // bf16
      if (elems % n != 0) continue;
      const std::size_t per = elems / n;
      auto run = [&] {
        if (p == "all_reduce") NCCL_CHECK(ncclAllReduce(send.get(), recv.get(), elems, ncclBfloat16, ncclSum, comm, s));
        if (p == "reduce_scatter") NCCL_CHECK(ncclReduceScatter(send.get(), recv.get(), per, ncclBfloat16, ncclSum, comm, s));
        if (p == "all_gather") NCCL_CHECK(ncclAllGather(send.get(), recv.get(), per, ncclBfloat16, comm, s));
        if (p == "all_to_all") {
          NCCL_CHECK(ncclGroupStart());
          for (int r = 0; r < n; ++r) {
            NCCL_CHECK(ncclSend(send.get() + r * per * 2, per, ncclBfloat16, r, comm, s));
            NCCL_CHECK(ncclRecv(recv.get() + r * per * 2, per, ncclBfloat16, r, comm, s));
          }
          NCCL_CHECK(ncclGroupEnd());
        }
      };
      const double factor = busbw_factor(p, n);
      d.measure(bench::nccl, {{"primitive", p}, {"bytes", S}, {"ranks", n}, {"dtype", "bf16"}}, run,
                [&](const SampleStats& st, nlohmann::json& o) {
                  const double algbw = S / st.median / 1e3;
                  o = {{"algbw_gbps", algbw}, {"busbw_gbps", algbw * factor}};
                },
                nullptr, S >= (256 << 20) ? 10 : 0);
    }
  }
  if (d.wants(bench::interference_nccl)) {
    const GemmConfig g{8192, 8192, 4096, "bf16"};
    cuda::DeviceBuffer<__nv_bfloat16> a(g.m * g.k), b(g.k * g.n), out(g.m * g.n);
    cuda::fill_random_bf16(a.get(), a.size(), 71, 1.0f, s);
    cuda::fill_random_bf16(b.get(), b.size(), 72, 1.0f, s);
    cuda::LtGemm gemm(d.lt(), g.m, g.n, g.k, g.dtype);
    auto run_gemm = [&] { gemm.run(a.get(), b.get(), out.get(), s); };
    const double alone = median_of(cuda::time_on_stream_us(s, 5, 20, run_gemm));
    cudaStream_t side;
    CUDA_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    const std::size_t elems = (256u << 20) / 2;
    d.measure(bench::interference_nccl,
              {{"m", g.m}, {"n", g.n}, {"k", g.k}, {"dtype", g.dtype}, {"collective", "all_reduce"}, {"bytes", elems * 2}, {"ranks", n}},
              [&] {
                NCCL_CHECK(ncclAllReduce(send.get(), recv.get(), elems, ncclBfloat16, ncclSum, comm, side));
                run_gemm();
              },
              [&](const SampleStats& st, nlohmann::json& o) {
                o = {{"alone_us", alone}, {"slowdown", st.median / alone}, {"tile_m", gemm.info().tile_m}, {"tile_n", gemm.info().tile_n}};
              },
              nullptr, 10);
    CUDA_CHECK(cudaStreamSynchronize(side));
    CUDA_CHECK(cudaStreamDestroy(side));
  }
  CUDA_CHECK(cudaStreamSynchronize(s));
  NCCL_CHECK(ncclCommDestroy(comm));
}

}  // namespace overlap::calibrate
