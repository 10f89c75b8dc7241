#include "cuda/runtime/mpi_world.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include "core/errors.hpp"
#include "io/atomic_file.hpp"

#ifdef EAGLESIM_HAVE_MPI
#include <mpi.h>
#endif

namespace eaglesim::cuda {

#ifdef EAGLESIM_HAVE_MPI

bool mpi_built() { return true; }

MpiWorld::MpiWorld() {
  int provided = 0;
  // The rank's replay thread makes the MPI calls, never two threads at once: SERIALIZED suffices.
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
    throw DeviceError("MPI_Init_thread failed");
  if (provided < MPI_THREAD_SERIALIZED) throw DeviceError("this MPI library cannot be called from a worker thread");
  std::atexit([] {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  });
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &local_rank_);
  MPI_Comm_size(local, &local_size_);
  MPI_Comm_free(&local);
  if (rank_ != 0) {
    // One report: the other ranks write no output files (atomic_file.hpp), and their stdout goes
    // nowhere (their logs stay on stderr).
    set_output_files_written(false);
    std::fflush(stdout);
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
      ::dup2(devnull, STDOUT_FILENO);
      ::close(devnull);
    }
  }
}

MpiWorld& MpiWorld::get() {
  static MpiWorld world;
  return world;
}

bool MpiWorld::barrier(double timeout_s, const std::function<bool()>& aborted) {
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    int done = 0;
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return true;
    if ((aborted && aborted()) || std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void MpiWorld::broadcast(void* data, std::size_t bytes, int root) {
  MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD);
}

std::vector<double> MpiWorld::allgather(const std::vector<double>& mine) {
  std::vector<double> all(mine.size() * static_cast<std::size_t>(size_));
  MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(), static_cast<int>(mine.size()),
                MPI_DOUBLE, MPI_COMM_WORLD);
  return all;
}

std::vector<char> MpiWorld::allgather_bytes(const void* mine, std::size_t bytes) {
  std::vector<char> all(bytes * static_cast<std::size_t>(size_));
  MPI_Allgather(mine, static_cast<int>(bytes), MPI_BYTE, all.data(), static_cast<int>(bytes), MPI_BYTE,
                MPI_COMM_WORLD);
  return all;
}

#else

bool mpi_built() { return false; }
MpiWorld::MpiWorld() {
  throw DeviceError("this eaglesim was built without MPI: run one process per node and pick GPUs with " +
                    setting_name(Setting::ranks));
}
MpiWorld& MpiWorld::get() {
  static MpiWorld world;
  return world;
}
bool MpiWorld::barrier(double, const std::function<bool()>&) { return true; }
void MpiWorld::broadcast(void*, std::size_t, int) {}
std::vector<double> MpiWorld::allgather(const std::vector<double>& mine) { return mine; }
std::vector<char> MpiWorld::allgather_bytes(const void* mine, std::size_t bytes) {
  const char* p = static_cast<const char*>(mine);
  return {p, p + bytes};
}

#endif

}  // namespace eaglesim::cuda
