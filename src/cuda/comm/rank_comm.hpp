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

#include "comm/cost_model.hpp"
#include "comm/fused_split_plan.hpp"
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
  // Only where supports_fused(); the one definition for the others (rank_comm.cpp) throws
  // DeviceError naming the strategy.
  virtual void allreduce_residual_rmsnorm(const void* in, const FusedNormArgs& args, DType dtype,
                                          cudaStream_t stream);
  // Largest message the registered buffers take; larger ones fall back to NCCL (with a note).
  virtual std::size_t max_bytes() const = 0;
};

// How the fused strategy spreads a few long rows over several blocks and how the blocks of a split
// row meet (custom_comm.hpp). The defaults are what measured fastest on NVLink; the GPU tests
// also run the alternatives, which stay for links where remote reads cost more (not measured).
struct FusedKernelOptions {
  std::size_t chunk_units = kFusedChunkUnits;  // split target, 16-byte units per block; 0: one block per row
  bool push = false;     // split rows pushed to every rank and read whole locally, no row sync
  bool cluster = false;  // pulled split rows sync through thread-block clusters where every GPU
                         // runs sm_90+ code (else through a global-memory rendezvous)
};

struct CommGroupConfig {
  std::string strategy;          // a name of comm/strategy_facts.hpp's table
  int ranks = 1;
  std::vector<int> devices;      // CUDA device per rank (threads mode); this process's one GPU (processes)
  // Processes mode (custom strategies under mpirun): this process holds only rank
  // MpiWorld::rank() of MpiWorld::size() (`ranks` is ignored) and maps its peers' buffers
  // through CUDA IPC; RankComm index 0 is that rank.
  bool processes = false;
  std::size_t max_bytes = 64u << 20;
  double timeout_s = 30;
  NcclOptions nccl;
  FusedKernelOptions fused;      // the fused strategy only
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
