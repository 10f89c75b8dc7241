#pragma once
// Whether this process is one of several started by an MPI launcher (mpirun -np N, srun with
// PMI/PMIx), read from the launcher's environment so that it works in builds without MPI too.
// Only `run --backend cuda` and `fidelity` split their work over such processes; every other
// command does its whole job in one process and refuses an MPI launch rather than repeat it N
// times at once (N copies of the same table on stdout, N processes writing the same files; for
// calibrate and bench-comm, N processes timing the same GPUs against each other).
#include <string>

namespace eaglesim {

// True when started with more than one process (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_SIZE or
// MPI_LOCALNRANKS above 1).
bool launched_by_mpi();
// InputError naming `command` and `why` (what makes it a one-process job) when launched_by_mpi().
void require_single_process(const std::string& command, const std::string& why);

// The two reasons, as the commands pass them.
inline constexpr const char* kDrivesEveryGpu =
    "drives every GPU of this machine from one process (pick the GPUs with --ranks)";  // calibrate, bench-comm
inline constexpr const char* kNoGpuWork =
    "uses no GPU and does all its work in one process";  // gen, inspect, import, sweep, run --backend sim

}  // namespace eaglesim
