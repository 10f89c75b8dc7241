#pragma once
// Multi-process replay (`mpirun -np N eaglesim run --backend cuda ...`): one rank per process.
// Initialises MPI once, finalised at exit (whether this is an MPI launch at all: core/mpi_launch),
// and offers the few collectives the replay needs on the host: a barrier that gives up when the
// run is aborted, a broadcast (NCCL unique id) and allgathers (results to rank 0, the
// custom allreduce's CUDA IPC handles).
// Only rank 0 keeps stdout and writes output files, so the report is printed and written once.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace eaglesim::cuda {

// True when this build can run multi-process (EAGLESIM_HAVE_MPI).
bool mpi_built();

class MpiWorld {
 public:
  static MpiWorld& get();  // initialises MPI on first use; throws DeviceError without MPI
  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  // Processes of the job on this node (MPI_COMM_TYPE_SHARED); size() when all share one node.
  int local_size() const { return local_size_; }
  // Returns false when `aborted` turned true (or timeout_s passed) before all processes arrived.
  bool barrier(double timeout_s, const std::function<bool()>& aborted);
  void broadcast(void* data, std::size_t bytes, int root);
  // Concatenation of every process's `mine` (all of equal length), in rank order.
  std::vector<double> allgather(const std::vector<double>& mine);
  // Every process's `bytes` bytes at `mine`, concatenated in rank order (CUDA IPC handles).
  std::vector<char> allgather_bytes(const void* mine, std::size_t bytes);

 private:
  MpiWorld();
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
};

}  // namespace eaglesim::cuda
