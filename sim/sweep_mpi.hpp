#pragma once
// A sweep beyond one machine: `mpirun -np N overlap-sim sweep ...` (OpenMPI; design.md "Calibration"
// uses mpirun the same way). Points are dealt round-robin to the ranks; each rank evaluates its share
// on its own threads and sends the finished rows to rank 0, which writes exactly what a single
// process writes. MPI is optional: built only when CMake finds it (OVERLAP_WITH_MPI), and used only
// when the program was started by mpirun; otherwise this is one process of rank 0.
#include <string>
#include <vector>

namespace overlap::sim {

class SweepWorld {
 public:
  // Joins the MPI job when started by mpirun (and built with MPI); a single process otherwise.
  SweepWorld();
  ~SweepWorld();  // MPI_Finalize when joined
  SweepWorld(const SweepWorld&) = delete;
  SweepWorld& operator=(const SweepWorld&) = delete;

  bool distributed() const { return size_ > 1; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Processes of this job on this machine (to share its cores), 1 for a single process.
  int local_size() const { return local_size_; }

  // Every rank's `mine`, in rank order, on rank 0 (empty elsewhere).
  std::vector<std::string> gather(const std::string& mine) const;
  // Rank 0's `value` on every rank.
  void broadcast(std::string& value) const;
  // Returns when every rank has called it.
  void barrier() const;
  // Ends every process of the job (after an error on one rank only).
  [[noreturn]] void abort(int code) const;

 private:
  int rank_ = 0;
  int size_ = 1;
  int local_size_ = 1;
  bool joined_ = false;
};

// True when the environment says this process was started by an MPI launcher (OpenMPI, PMIx, PMI).
bool launched_by_mpirun();
// Whether this build can join an MPI job.
bool built_with_mpi();

}  // namespace overlap::sim
