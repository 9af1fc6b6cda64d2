// The environment a calibration ran in (GPU, driver, CUDA, NCCL versions, clocks as
// read, never changed). Clocks here are the device's reported peak; calibrate/run.sh also saves
// nvidia-smi's current clocks before and after the run beside the results.
#include <unistd.h>

#include <ctime>

#include "calibrate/core/calibration_plan.hpp"
#include "calibrate/cuda/driver.hpp"
#include "kernels/common/check.hpp"
#include "kernels/common/green_context.hpp"
#include "kernels/gemm/cublaslt_gemm.hpp"

namespace overlap::calibrate {

nlohmann::json read_environment(int device, const cuda::ProcessRank& pr, const std::string& link_class) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  int driver = 0, runtime = 0, clock_khz = 0, mem_khz = 0, gpus = 0;
  CUDA_CHECK(cudaDriverGetVersion(&driver));
  CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device));
  CUDA_CHECK(cudaGetDeviceCount(&gpus));
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  char date[64] = {0};
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); };
  nlohmann::json env{{"fixture", false},
                     {"gpu_name", prop.name},
                     {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
                     {"sm_count", prop.multiProcessorCount},
                     {"clock_mhz", clock_khz / 1000.0},
                     {"memory_clock_mhz", mem_khz / 1000.0},
                     {"hbm_bytes", static_cast<double>(prop.totalGlobalMem)},
                     {"l2_bytes", prop.l2CacheSize},
                     {"async_engine_count", prop.asyncEngineCount},
                     {"driver_version", version(driver)},
                     {"cuda_runtime_version", version(runtime)},
                     {"cublaslt_version", cuda::cublaslt_version_string()},
                     {"nccl_version", cuda::nccl_version_string()},
                     {"host", host},
                     {"date_utc", date},
                     {"gpu_count", gpus},
                     {"world_size", pr.size},
                     {"p2p_link_class", link_class},
                     {"results_dir", results_dir_name(prop.name, host)}};
  try {
    const auto sm = cuda::device_sm_resource(device);
    env["min_sm_partition"] = sm.min_partition;
    env["sm_coscheduled_alignment"] = sm.coscheduled_alignment;
  } catch (const std::exception& e) {
    env["green_context_error"] = e.what();
  }
  return env;
}

}  // namespace overlap::calibrate
