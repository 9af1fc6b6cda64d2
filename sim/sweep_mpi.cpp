// MPI for sweeps (sim/sweep_mpi.hpp).
#include "sim/sweep_mpi.hpp"

#include <cstdlib>
#include <stdexcept>

#ifdef OVERLAP_WITH_MPI
#include <mpi.h>
#endif

namespace overlap::sim {


bool launched_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

#ifdef OVERLAP_WITH_MPI

bool built_with_mpi() { return true; }

SweepWorld::SweepWorld() {
  if (!launched_by_mpirun()) return;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // Only the main thread calls MPI; worker threads only simulate.
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    joined_ = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
  MPI_Comm_size(local, &local_size_);
  MPI_Comm_free(&local);
}

SweepWorld::~SweepWorld() {
  if (joined_) MPI_Finalize();
}

std::vector<std::string> SweepWorld::gather(const std::string& mine) const {
  if (size_ <= 1) return {mine};
  // Sizes first (as long long: a rank's rows can exceed 2 GiB only in absurd sweeps, refused below).
  if (mine.size() > static_cast<std::size_t>(2147483647)) throw std::length_error("a rank's sweep rows exceed 2 GiB");
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<std::size_t>(size_), 0);
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> displs(static_cast<std::size_t>(size_), 0);
  long long total = 0;
  for (int r = 0; r < size_; ++r) {
    displs[static_cast<std::size_t>(r)] = static_cast<int>(total);
    total += lens[static_cast<std::size_t>(r)];
  }
  if (rank_ == 0 && total > 2147483647LL) throw std::length_error("the sweep's rows exceed 2 GiB");
  std::string all(rank_ == 0 ? static_cast<std::size_t>(total) : 0, '\0');
  MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (rank_ != 0) return out;
  for (int r = 0; r < size_; ++r)
    out.push_back(all.substr(static_cast<std::size_t>(displs[static_cast<std::size_t>(r)]),
                             static_cast<std::size_t>(lens[static_cast<std::size_t>(r)])));
  return out;
}

void SweepWorld::broadcast(std::string& value) const {
  if (size_ <= 1) return;
  unsigned long long len = value.size();
  MPI_Bcast(&len, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  value.resize(static_cast<std::size_t>(len));
  if (len > 0) MPI_Bcast(value.data(), static_cast<int>(len), MPI_CHAR, 0, MPI_COMM_WORLD);
}

void SweepWorld::barrier() const {
  if (size_ > 1) MPI_Barrier(MPI_COMM_WORLD);
}

void SweepWorld::abort(int code) const {
  if (size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

#else

bool built_with_mpi() { return false; }

SweepWorld::SweepWorld() { local_size_ = 1; }
SweepWorld::~SweepWorld() = default;
std::vector<std::string> SweepWorld::gather(const std::string& mine) const { return {mine}; }
void SweepWorld::broadcast(std::string&) const {}
void SweepWorld::barrier() const {}
void SweepWorld::abort(int code) const { std::exit(code); }

#endif

}  // namespace overlap::sim
