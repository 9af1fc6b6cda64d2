// gemm_sm: a cuBLASLt GEMM confined to k SMs with a CUDA green context (multiples of the device's
// minimum partition, 8 on Hopper), so the simulator's sm_count-dependent predictions can be checked
// on one GPU.
#include <algorithm>
#include <exception>

#include "calibrate/core/calibration_plan.hpp"
#include "calibrate/cuda/driver.hpp"
#include "kernels/common/buffers.hpp"
#include "kernels/common/green_context.hpp"
#include "kernels/gemm/cublaslt_gemm.hpp"
#include "kernels/ops/ops.hpp"

namespace overlap::calibrate {

void bench_gemm_sm(Driver& d) {
  if (!d.wants(bench::gemm_sm)) return;
  const auto res = cuda::device_sm_resource(d.device());
  std::vector<int> counts = sm_partition_counts(d.sm_count(), std::max(1, res.min_partition));
  if (d.options().quick) counts = {counts.front(), counts[counts.size() / 2], counts.back()};
  for (const GemmConfig& g : gemm_sm_shapes()) {
    cuda::DeviceBuffer<__nv_bfloat16> a(g.m * g.k), b(g.k * g.n), out(g.m * g.n);
    cuda::fill_random_bf16(a.get(), a.size(), 31, 1.0f, d.stream());
    cuda::fill_random_bf16(b.get(), b.size(), 32, 1.0f, d.stream());
    CUDA_CHECK(cudaStreamSynchronize(d.stream()));
    cuda::LtGemm gemm(d.lt(), g.m, g.n, g.k, g.dtype);
    // The algorithm the heuristic chose (the same plan runs in every partition): the tile shape
    // behind each row's wave count.
    const auto& info = gemm.info();
    // The SMs the partition can give to the kernel's clusters (a cluster's CTAs share a GPC): on
    // the H100 of 2026-11-23 partitions of 104-128 SMs ran as if about 92 were busy. The cluster
    // size the algorithm names, else 2 (what cuBLAS's Hopper kernels run with AUTO); not timed.
    const int cluster = info.cluster_m * info.cluster_n > 0 ? info.cluster_m * info.cluster_n : 2;
    // A probe that cannot run (a driver refusing clusters in a green context) is recorded, not fatal:
    // the row keeps its timing and validate its granted SMs.
    auto reach = [&](cudaStream_t st, int sms, nlohmann::json& o) {
      o["cluster_probe"] = cluster;
      try {
        o["sms_reached"] = cuda::sms_reached_by_clusters(1, 4 * sms, 20000, st);
        o["cluster_sms_reached"] = cuda::sms_reached_by_clusters(cluster, 4 * sms, 20000, st);
      } catch (const std::exception& e) {
        (void)cudaGetLastError();
        o["cluster_probe_error"] = e.what();
      }
    };
    for (int k : counts) {
      if (k == d.sm_count()) {
        // The whole GPU: the primary context (a green context cannot hold every SM on every part).
        nlohmann::json reached;
        reach(d.stream(), k, reached);
        d.measure(bench::gemm_sm, {{"m", g.m}, {"n", g.n}, {"k", g.k}, {"dtype", g.dtype}, {"sms", k}},
                  [&] { gemm.run(a.get(), b.get(), out.get(), d.stream()); },
                  [&](const SampleStats&, nlohmann::json& o) {
                    o["sms_granted"] = k;
                    o.update(nlohmann::json(info));
                    o.update(reached);
                  });
        continue;
      }
      cuda::SmPartitions parts(d.device(), 1, k);
      parts[0].make_current();
      cudaStream_t s = parts[0].make_stream();
      const int granted = parts[0].sms();
      nlohmann::json reached;
      reach(s, granted, reached);
      d.measure(bench::gemm_sm, {{"m", g.m}, {"n", g.n}, {"k", g.k}, {"dtype", g.dtype}, {"sms", granted}},
                [&] { gemm.run(a.get(), b.get(), out.get(), s); },
                [&](const SampleStats&, nlohmann::json& o) {
                  o["sms_granted"] = granted;
                  o["sms_asked"] = k;
                  o.update(nlohmann::json(info));
                  o.update(reached);
                },
                s, d.options().quick ? 5 : 10);
      CUDA_CHECK(cudaStreamSynchronize(s));
      cuda::SmPartitions::make_primary_current(d.device());
    }
  }
}

}  // namespace overlap::calibrate
