// overlap-bench-schemes: runs a scheme configuration list (calibrate/configs/*.json) with the
// reference kernels and writes DIR/schemes.json (+ the virtual nodes' profiles) for
// `overlap-sim validate`.
//
//   overlap-bench-schemes --config FILE [--out DIR] [--only ID,...] [--reps N] [--warmup N]
//                         [--profile-schema 1|2] [--bootstrap-dir DIR]
//
// One GPU (no launcher variables): every run on VIRTUAL RANKS, T green-context partitions of
// floor(SMs / T / 8) x 8 SMs; before the runs of a (T, link) node the runner measures that node
// (its GEMM on one partition, rank-to-rank pulls, its own collectives, launch gaps, shared HBM
// streaming) and writes profile_virtual_t<T>_<link>.yaml from it, so the simulator predicts the
// machine that was measured. Under mpirun (one process per GPU): the runs whose tp equals the
// process count, with NCCL collectives and, for async TP and CommFuse with transport copy_engine,
// copy-engine pulls from peer memory (CUDA IPC; every rank on one host); their profile is the host's
// calibration (../profile.yaml).
// Every run is checked against its reference (relative error printed) before it is timed.
#include <cublas_v2.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "calibrate/core/calibration_plan.hpp"
#include "calibrate/core/profile_writer.hpp"
#include "calibrate/cuda/schemes/bench_schemes.hpp"
#include "cost_model/atomic_file.hpp"
#include "cost_model/input_error.hpp"
#include "kernels/comm/bootstrap.hpp"
#include "kernels/common/check.hpp"
#include "kernels/common/green_context.hpp"

namespace {

namespace cal = overlap::calibrate;
namespace cu = overlap::cuda;
using nlohmann::json;

struct Options {
  std::string config, out;
  std::vector<std::string> only;
  int reps = -1, warmup = -1;
  int profile_schema = 2;
  std::string bootstrap_dir = "/tmp/overlap-bench-schemes";
};

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--config") o.config = next();
    else if (a == "--out") o.out = next();
    else if (a == "--only") {
      std::stringstream ss(next());
      for (std::string s; std::getline(ss, s, ',');) o.only.push_back(s);
    } else if (a == "--reps") o.reps = std::stoi(next());
    else if (a == "--warmup") o.warmup = std::stoi(next());
    else if (a == "--profile-schema") o.profile_schema = std::stoi(next());
    else if (a == "--bootstrap-dir") o.bootstrap_dir = next();
    else if (a == "-h" || a == "--help") {
      std::printf("usage: overlap-bench-schemes --config FILE [--out DIR] [--only ID,...] [--reps N] [--warmup N]\n"
                  "                             [--profile-schema 1|2] [--bootstrap-dir DIR]\n");
      return false;
    } else throw std::invalid_argument("unknown argument '" + a + "'");
  }
  if (o.config.empty()) throw std::invalid_argument("--config FILE is required");
  return true;
}

// The GPU, host and library versions every result carries.
json run_environment(const cal::Driver& d, const Options& o) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, d.device()));
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  const auto sm = cu::device_sm_resource(d.device());
  return json{{"fixture", false}, {"gpu_name", prop.name}, {"host", host}, {"async_engine_count", prop.asyncEngineCount},
              {"l2_bytes", prop.l2CacheSize},
              {"min_sm_partition", sm.min_partition}, {"physical_sm_count", prop.multiProcessorCount},
              {"nccl_version", cu::nccl_version_string()}, {"world_size", d.process().size},
              {"results_dir", cal::results_dir_name(prop.name, host)}, {"config", o.config}};
}

// Real node: NCCL, one process per GPU; the runs whose tp is the process count. Returns the number
// of runs that failed their check or did not run.
int run_on_nodes(cal::Driver& d, const Options& o, const std::vector<cal::SchemeRunConfig>& runs, cublasHandle_t cublas,
                 cal::SchemeRunSet& out) {
  const auto& pr = d.process();
  out.host = "nodes";
  out.profile = "../profile.yaml";
  const ncclUniqueId id = cu::exchange_nccl_id(pr, o.bootstrap_dir, "schemes");
  ncclComm_t comm;
  NCCL_CHECK(ncclCommInitRank(&comm, pr.size, id, pr.rank));
  auto node = cu::make_nccl_node(comm, pr.rank, pr.size, d.sm_count());
  int failed = 0;
  for (const auto& c : runs) {
    // A run refused before its first collective (a transport this node lacks) is refused by every
    // rank alike, so the others go on; a failure inside a collective ends the job.
    try {
      out.runs.push_back(cal::run_scheme(d, *node, c, cublas, comm));
      failed += !out.runs.back().passed;
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "overlap-bench-schemes: rank %d: %s refused: %s\n", pr.rank, c.id.c_str(), e.what());
      ++failed;
    }
  }
  NCCL_CHECK(ncclCommDestroy(comm));
  return failed;
}

// One virtual node: measured first (its profile written beside schemes.json), then its runs.
int run_virtual_node(cal::Driver& d, const Options& o, int T, const std::string& link,
                     const std::vector<cal::SchemeRunConfig>& node_runs, cublasHandle_t cublas, cal::SchemeRunSet& out) {
  const int physical_sms = out.environment["physical_sm_count"].get<int>();
  const int sms = cu::virtual_rank_sms(physical_sms, T, std::max(1, out.environment["min_sm_partition"].get<int>()));
  cal::progress("# virtual node", std::to_string(T) + " ranks x " + std::to_string(sms) + " SMs, link " + link);
  auto node = cu::make_virtual_node(d.device(), T, sms, link, 512u << 20);
  const std::string profile = "profile_virtual_t" + std::to_string(T) + "_" + link + ".yaml";
  json node_env = cal::measure_virtual_node(d, *node, link, node_runs);
  cal::VirtualNodeRecord record{profile, T, link, node->rank_sms(), std::move(node_env), d.take_measurements()};
  cal::ProfileOptions po;
  po.schema = o.profile_schema;
  // With the physical GPU's GEMM full-rate limit, PCIe and memory-kernel rates when its
  // calibration sits in the parent folder (calibrate/results/<gpu>-<host>/schemes), exactly as
  // overlap-calibrate-profile --schemes writes it again.
  overlap::write_file_atomically(o.out + "/" + profile, cal::write_virtual_node_profile_yaml(record, o.out + "/..", po));
  out.virtual_nodes.push_back(std::move(record));
  int failed = 0;
  for (const auto& c : node_runs) {
    try {
      cal::SchemeRunResult r = cal::run_scheme(d, *node, c, cublas, nullptr);
      r.profile = profile;
      failed += !r.passed;
      out.runs.push_back(std::move(r));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "overlap-bench-schemes: %s failed: %s\n", c.id.c_str(), e.what());
      ++failed;
      cudaGetLastError();
    }
  }
  return failed;
}

int run_list(const Options& given, const cal::SchemeConfigList& list) {
  Options o = given;
  const auto pr = cu::process_rank_from_env();
  cal::DriverOptions dopt;
  dopt.warmup = o.warmup >= 0 ? o.warmup : list.warmup;
  dopt.reps = o.reps > 0 ? o.reps : list.repetitions;
  dopt.bootstrap_dir = o.bootstrap_dir;
  dopt.profile_schema = o.profile_schema;
  cal::Driver d(dopt, pr);
  cal::SchemeRunSet out;
  out.environment = run_environment(d, o);
  d.environment() = out.environment;
  if (o.out.empty()) o.out = "calibrate/results/" + out.environment["results_dir"].get<std::string>() + "/schemes";
  std::error_code ec;
  std::filesystem::create_directories(o.out, ec);  // a missing directory is reported by the write
  cublasHandle_t cublas;
  if (cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
  std::vector<cal::SchemeRunConfig> runs;
  for (const auto& c : list.runs) {
    if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), c.id) == o.only.end()) continue;
    if (pr.size > 1 && c.ranks != pr.size) continue;
    runs.push_back(c);
  }
  int failed = 0;
  if (pr.size > 1) {
    failed = run_on_nodes(d, o, runs, cublas, out);
    if (pr.rank != 0) return failed ? 1 : 0;
  } else {
    out.host = "virtual";
    std::map<std::pair<int, std::string>, std::vector<cal::SchemeRunConfig>> by_node;
    for (const auto& c : runs) by_node[{c.ranks, c.link}].push_back(c);
    for (const auto& [key, node_runs] : by_node) failed += run_virtual_node(d, o, key.first, key.second, node_runs, cublas, out);
  }
  overlap::write_file_atomically(o.out + "/schemes.json", cal::scheme_runs_document(out).dump(1) + "\n");
  std::printf("# wrote %s/schemes.json: %zu runs, %d failed their check or did not run\n", o.out.c_str(), out.runs.size(), failed);
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    if (!parse(argc, argv, o)) return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "overlap-bench-schemes: %s\n", e.what());
    return 2;
  }
  cal::SchemeConfigList list;
  try {
    list = cal::load_scheme_config_list(o.config);
  } catch (const overlap::InputError& e) {
    std::fprintf(stderr, "overlap-bench-schemes: error: %s\n", e.what());
    return 2;
  }
  try {
    return run_list(o, list);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "overlap-bench-schemes: error: %s\n", e.what());
    return 1;
  }
}
