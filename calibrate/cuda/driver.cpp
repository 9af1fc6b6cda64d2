#include "calibrate/cuda/driver.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "kernels/common/check.hpp"
#include "kernels/common/timing.hpp"

namespace overlap::calibrate {

Driver::Driver(DriverOptions options, cuda::ProcessRank pr) : options_(std::move(options)), pr_(pr) {
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  if (count < 1) throw std::runtime_error("no CUDA device");
  device_ = pr_.size > 1 ? pr_.local_rank % count : 0;
  CUDA_CHECK(cudaSetDevice(device_));
  CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  if (cublasLtCreate(&lt_) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasLtCreate failed");
}

std::vector<Measurement> Driver::take_measurements() {
  std::vector<Measurement> taken = std::move(set_.measurements);
  set_.measurements.clear();
  return taken;
}

bool Driver::wants(const std::string& benchmark) const {
  return options_.only.empty() || std::find(options_.only.begin(), options_.only.end(), benchmark) != options_.only.end();
}

const Measurement& Driver::record(const std::string& benchmark, nlohmann::json config, const std::vector<double>& samples,
                                  nlohmann::json derived) {
  Measurement m;
  m.benchmark = benchmark;
  m.config = std::move(config);
  m.time_us = summarize(samples);
  m.derived = std::move(derived);
  // When the samples ended, in Unix ms: lines the row up with run.sh's clocks.csv samples (the SM
  // clock as read under load; never set).
  m.derived["end_unix_ms"] = static_cast<double>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  if (pr_.rank == 0) {
    std::printf("%-26s %-58s median %11.3f us  spread %6.3f  %s\n", benchmark.c_str(), m.config.dump().c_str(),
                m.time_us.median, m.time_us.spread, m.derived.empty() ? "" : m.derived.dump().c_str());
    std::fflush(stdout);
  }
  set_.measurements.push_back(std::move(m));
  return set_.measurements.back();
}

const Measurement& Driver::measure(const std::string& benchmark, nlohmann::json config, const std::function<void()>& run,
                                   const std::function<void(const SampleStats&, nlohmann::json&)>& derive,
                                   cudaStream_t stream, int reps) {
  const auto samples = cuda::time_on_stream_us(stream ? stream : stream_, options_.warmup, reps > 0 ? reps : options_.reps, run);
  nlohmann::json derived = nlohmann::json::object();
  if (derive) derive(summarize(samples), derived);
  return record(benchmark, std::move(config), samples, std::move(derived));
}

}  // namespace overlap::calibrate
