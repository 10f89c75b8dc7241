#include "core/mpi_launch.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace eaglesim {

namespace {
int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : 0;
}
}  // namespace

bool launched_by_mpi() {
  return env_int("OMPI_COMM_WORLD_SIZE") > 1 || env_int("PMI_SIZE") > 1 || env_int("PMIX_SIZE") > 1 ||
         env_int("MPI_LOCALNRANKS") > 1;
}

void require_single_process(const std::string& command, const std::string& why) {
  if (launched_by_mpi())
    throw InputError(fmt::format("{} {}: start it without mpirun (under mpirun only `run --backend cuda` and "
                                 "`fidelity` split their work over the processes)",
                                 command, why));
}

}  // namespace eaglesim
