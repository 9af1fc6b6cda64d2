#include "kernels/comm/bootstrap.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "kernels/common/check.hpp"

namespace overlap::cuda {
namespace {

int env_int(std::initializer_list<const char*> names, int fallback) {
  for (const char* n : names) {
    if (const char* v = std::getenv(n)) return std::atoi(v);
  }
  return fallback;
}

}  // namespace

ProcessRank process_rank_from_env() {
  ProcessRank pr;
  pr.rank = env_int({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}, 0);
  pr.size = env_int({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}, 1);
  pr.local_rank = env_int({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}, pr.rank);
  return pr;
}

ncclUniqueId exchange_nccl_id(const ProcessRank& pr, const std::string& dir, const std::string& tag, int timeout_s) {
  namespace fs = std::filesystem;
  const fs::path file = fs::path(dir) / ("nccl-id-" + tag);
  ncclUniqueId id{};
  if (pr.rank == 0) {
    NCCL_CHECK(ncclGetUniqueId(&id));
    fs::create_directories(dir);
    const fs::path tmp = file.string() + ".tmp" + std::to_string(::getpid());
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(&id), sizeof id);
    }
    fs::rename(tmp, file);
    return id;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(file, std::ios::binary);
    if (in && in.read(reinterpret_cast<char*>(&id), sizeof id)) return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error("rank " + std::to_string(pr.rank) + ": no NCCL id at " + file.string() + " after " +
                           std::to_string(timeout_s) + " s (is --bootstrap-dir shared by every rank?)");
}

std::string nccl_version_string() {
  int v = 0;
  ncclGetVersion(&v);
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
}

}  // namespace overlap::cuda
