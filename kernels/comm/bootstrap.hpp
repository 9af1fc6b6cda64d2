#pragma once
// Multi-process start-up for real nodes, the way nccl-tests runs under mpirun: one process per GPU,
// rank and size from the launcher's environment (OpenMPI OMPI_COMM_WORLD_*, PMI_*, Slurm SLURM_*),
// the NCCL unique id passed from rank 0 through a file in a directory every rank sees (so the
// programs need no MPI library to build; `mpirun -np 8 prog ...` on one host, /tmp shared).
#include <nccl.h>

#include <string>

namespace overlap::cuda {

struct ProcessRank {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
};

// From the environment; size 1 when no launcher variables are set.
ProcessRank process_rank_from_env();

// Rank 0 creates the id and writes it (atomically) to DIR/nccl-id-<tag>; the others wait for it
// (up to `timeout_s`). Throws on timeout.
ncclUniqueId exchange_nccl_id(const ProcessRank& pr, const std::string& dir, const std::string& tag, int timeout_s = 120);

std::string nccl_version_string();

#define NCCL_CHECK(call)                                                                                      \
  do {                                                                                                        \
    ncclResult_t r_ = (call);                                                                                 \
    if (r_ != ncclSuccess) ::overlap::cuda::fail_call(#call, ncclGetErrorString(r_), __FILE__, __LINE__);    \
  } while (0)

}  // namespace overlap::cuda
