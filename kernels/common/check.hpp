#pragma once
// Error checks for every CUDA, driver, cuBLAS and NCCL call (METHOD.md: "check every CUDA call's
// return code and the last error after each launch: exit code 0 proves nothing"). A failure throws
// std::runtime_error naming the call, file and line; the programs print it and exit 1.
#include <cuda.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace overlap::cuda {

[[noreturn]] inline void fail_call(const char* what, const std::string& detail, const char* file, int line) {
  throw std::runtime_error(std::string(what) + " failed: " + detail + " (" + file + ":" + std::to_string(line) + ")");
}

inline void check_cuda(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess) fail_call(what, cudaGetErrorString(e), file, line);
}

inline void check_cu(CUresult e, const char* what, const char* file, int line) {
  if (e != CUDA_SUCCESS) {
    const char* s = nullptr;
    cuGetErrorString(e, &s);
    fail_call(what, s ? s : ("CUresult " + std::to_string(static_cast<int>(e))), file, line);
  }
}

}  // namespace overlap::cuda

#define CUDA_CHECK(call) ::overlap::cuda::check_cuda((call), #call, __FILE__, __LINE__)
#define CU_CHECK(call) ::overlap::cuda::check_cu((call), #call, __FILE__, __LINE__)
// After a kernel launch: the launch error now (bad configuration), not the kernel's fault later.
#define CUDA_CHECK_LAUNCH() ::overlap::cuda::check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
