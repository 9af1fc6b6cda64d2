#include "tools/mpi_command.hpp"

#include <exception>

#include "cost_model/input_error.hpp"
#include "tools/command_errors.hpp"

namespace overlap::tools {

void run_on_mpi_world(const std::string& work, const std::function<void(sim::SweepWorld&)>& body,
                      std::ostream& err) {
  if (sim::launched_by_mpirun() && !sim::built_with_mpi())
    throw UsageError("this overlap-sim was built without MPI, so every mpirun rank would run the whole " + work +
                     "; install OpenMPI (tools/setup.sh) and rebuild, or run it without mpirun");
  sim::SweepWorld world;
  if (!world.distributed()) {
    body(world);
    return;
  }
  int code = kExitOk;
  try {
    body(world);
  } catch (const QuietExit& e) {
    code = e.code();
  } catch (const std::exception& e) {
    const bool input = dynamic_cast<const InputError*>(&e) || dynamic_cast<const UsageError*>(&e);
    code = input ? kExitUsage : kExitInternal;
    if (world.rank() == 0) err << "overlap-sim: " << (input ? "error: " : "internal error: ") << e.what() << "\n" << std::flush;
  }
  world.barrier();
  if (code != kExitOk) throw QuietExit(code);
}

}  // namespace overlap::tools
