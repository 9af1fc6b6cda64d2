#pragma once
// A command whose work spreads over the ranks of an mpirun job (sweep, plan): one process when not
// launched by mpirun, and the same verdict on every rank when it is.
#include <functional>
#include <ostream>
#include <string>

#include "sim/sweep_mpi.hpp"

namespace overlap::tools {

// Runs `body` on this process's world. Refuses an mpirun launch of a build without MPI (every rank
// would do the whole `work`, e.g. "sweep", "search"). Under mpirun an error on any rank is reported
// once, by rank 0, and no rank leaves before it has (mpirun stops the job when one exits non-zero):
// every rank then throws QuietExit with the same code.
void run_on_mpi_world(const std::string& work, const std::function<void(sim::SweepWorld&)>& body,
                      std::ostream& err);

}  // namespace overlap::tools
