#pragma once
// Device-side allreduce interface shared by the CUDA replay backend (src/cuda/) and our own
// kernels (kernels/). One RankComm per rank (GPU); a CommGroup owns the ranks of one strategy.
// Every call is stream-ordered and may be captured into a CUDA graph once setup is done
// (buffers are registered up front, no allocation or host sync inside allreduce()).
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "comm/communicator.hpp"
#include "core/dtype.hpp"

namespace eaglesim::cuda {

// For the fused strategy: residual += allreduce(in); normed = rmsnorm(residual) * weight.
struct FusedNormArgs {
  void* residual = nullptr;      // [tokens, hidden], updated in place
  const void* weight = nullptr;  // [hidden]
  void* normed = nullptr;        // [tokens, hidden]
  std::size_t tokens = 0;
  std::size_t hidden = 0;
  float eps = 1e-5f;
};

class RankComm {
 public:
  virtual ~RankComm() = default;
  virtual std::string strategy() const = 0;
  virtual int rank() const = 0;
  virtual int ranks() const = 0;
  // out = sum over ranks of in (count elements of dtype); in and out may alias.
  virtual void allreduce(const void* in, void* out, std::size_t count, DType dtype, cudaStream_t stream) = 0;
  virtual bool supports_fused() const { return false; }
  virtual void allreduce_residual_rmsnorm(const void* in, const FusedNormArgs& args, DType dtype,
                                          cudaStream_t stream);  // default: throws
  // Largest message the registered buffers take; larger ones fall back to NCCL (with a note).
  virtual std::size_t max_bytes() const = 0;
};

struct CommGroupConfig {
  std::string strategy;          // nccl, oneshot, oneshot_push, twoshot, fused, quant, ideal
  int ranks = 1;
  std::vector<int> devices;      // CUDA device per rank (threads mode); this process's one GPU (processes)
  // Processes mode (custom strategies under mpirun): this process holds only rank
  // MpiWorld::rank() of MpiWorld::size() (`ranks` is ignored) and maps its peers' buffers
  // through CUDA IPC; RankComm index 0 is that rank.
  bool processes = false;
  std::size_t max_bytes = 64u << 20;
  double timeout_s = 30;
  NcclOptions nccl;
};

// Created once for all ranks of one process (one thread per GPU). With MPI, each process
// creates its own single-rank group via create_mpi (implemented where MPI is available).
class CommGroup {
 public:
  virtual ~CommGroup() = default;
  virtual RankComm& rank(int r) = 0;
  virtual int ranks() const = 0;
  // Abort every rank's outstanding collectives (NCCL comm abort, flag-barrier poison) after a timeout.
  virtual void abort() = 0;
};

std::unique_ptr<CommGroup> create_comm_group(const CommGroupConfig& config);

}  // namespace eaglesim::cuda
