// overlap-calibrate: measures on a GPU everything the simulator assumes and writes the profile it
// loads (design.md "Calibration and validation").
//
//   overlap-calibrate [--out DIR] [--quick] [--only gemm,transfer,...] [--warmup N] [--reps N]
//                     [--profile-schema 2] [--link-class nvlink|pcie] [--bootstrap-dir DIR]
//
// Single GPU: every benchmark but the multi-GPU ones. Under mpirun (one process per GPU, e.g.
// `mpirun -np 8 overlap-calibrate --out DIR`): every rank runs the NCCL sweep, then rank 0 runs the
// rest (peer-to-peer included) and writes DIR/{measurements.json, environment.json, profile.yaml}.
// A benchmark that fails is reported and recorded under environment.json "errors"; the others run.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>

#include "cost_model/atomic_file.hpp"
#include "calibrate/core/profile_writer.hpp"
#include "calibrate/cuda/driver.hpp"
#include "kernels/common/check.hpp"

namespace {

using overlap::calibrate::Driver;
using overlap::calibrate::DriverOptions;

void usage(FILE* f) {
  std::fprintf(f,
               "usage: overlap-calibrate [--out DIR] [--quick] [--only BENCH,...] [--warmup N] [--reps N]\n"
               "                         [--profile-schema 2] [--link-class NAME] [--bootstrap-dir DIR]\n"
               "benchmarks: gemm gemm_tile gemm_waves gemm_sm interference_sm_copy interference_copy_engine\n"
               "            transfer launch hbm_stream nccl interference_nccl signal_gemm gemm_backward grouped_gemm\n");
}

bool parse(int argc, char** argv, DriverOptions& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--out") {
      o.out_dir = next();
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--only") {
      std::stringstream ss(next());
      for (std::string b; std::getline(ss, b, ',');) o.only.push_back(b);
    } else if (a == "--warmup") {
      o.warmup = std::stoi(next());
    } else if (a == "--reps") {
      o.reps = std::stoi(next());
    } else if (a == "--profile-schema") {
      o.profile_schema = std::stoi(next());
    } else if (a == "--link-class") {
      o.link_class = next();
    } else if (a == "--bootstrap-dir") {
      o.bootstrap_dir = next();
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return false;
    } else {
      throw std::invalid_argument("unknown argument '" + a + "'");
    }
  }
  if (o.warmup < 0 || o.reps < 1 || o.profile_schema != 2) {
    throw std::invalid_argument("--warmup >= 0, --reps >= 1, --profile-schema 2");
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  DriverOptions options;
  try {
    if (!parse(argc, argv, options)) return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "overlap-calibrate: %s\n", e.what());
    usage(stderr);
    return 2;
  }
  try {
    const auto pr = overlap::cuda::process_rank_from_env();
    Driver d(options, pr);
    d.environment() = overlap::calibrate::read_environment(d.device(), pr, options.link_class);
    if (options.out_dir.empty()) options.out_dir = "calibrate/results/" + d.environment()["results_dir"].get<std::string>();
    if (pr.rank == 0) {
      std::printf("# overlap-calibrate: %s, %d SMs, driver %s, runtime %s, cuBLASLt %s, NCCL %s, %d rank(s)\n# out: %s\n",
                  d.environment()["gpu_name"].get<std::string>().c_str(), d.sm_count(),
                  d.environment()["driver_version"].get<std::string>().c_str(),
                  d.environment()["cuda_runtime_version"].get<std::string>().c_str(),
                  d.environment()["cublaslt_version"].get<std::string>().c_str(),
                  d.environment()["nccl_version"].get<std::string>().c_str(), pr.size, options.out_dir.c_str());
      std::printf("%-26s %-58s %s\n", "# benchmark", "configuration", "median time, spread (max/min), derived");
    }
    nlohmann::json errors = nlohmann::json::array();
    auto guarded = [&](const char* name, void (*fn)(Driver&)) {
      try {
        fn(d);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "overlap-calibrate: rank %d: %s failed: %s\n", pr.rank, name, e.what());
        errors.push_back({{"benchmark", name}, {"error", e.what()}});
        cudaGetLastError();
      }
    };
    guarded("nccl", overlap::calibrate::bench_nccl);  // every rank, in step
    if (pr.rank != 0) return errors.empty() ? 0 : 1;
    guarded("gemm", overlap::calibrate::bench_gemm);
    guarded("gemm_sm", overlap::calibrate::bench_gemm_sm);
    guarded("interference", overlap::calibrate::bench_interference);
    guarded("transfer", overlap::calibrate::bench_transfer);
    guarded("p2p", overlap::calibrate::bench_p2p);
    guarded("launch", overlap::calibrate::bench_launch);
    guarded("hbm_stream", overlap::calibrate::bench_hbm);
    guarded("signal_gemm", overlap::calibrate::bench_signal_gemm);
    guarded("gemm_backward", overlap::calibrate::bench_gemm_backward);
    guarded("grouped_gemm", overlap::calibrate::bench_grouped_gemm);
    if (!errors.empty()) d.environment()["errors"] = errors;
    overlap::calibrate::write_measurement_dir(options.out_dir, d.measurements());
    std::printf("# wrote %s/measurements.json (%zu measurements) and environment.json\n", options.out_dir.c_str(),
                d.measurements().measurements.size());
    try {
      overlap::calibrate::ProfileOptions po;
      po.schema = options.profile_schema;
      overlap::write_file_atomically(options.out_dir + "/profile.yaml",
                                   overlap::calibrate::write_profile_yaml(d.measurements(), po));
      std::printf("# wrote %s/profile.yaml (schema %d)\n", options.out_dir.c_str(), po.schema);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "overlap-calibrate: profile.yaml not written: %s\n", e.what());
      return 1;
    }
    return errors.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "overlap-calibrate: error: %s\n", e.what());
    return 1;
  }
}
