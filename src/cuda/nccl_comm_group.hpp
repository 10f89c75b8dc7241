#pragma once
// The "nccl" strategy: one NCCL communicator per rank. Threads mode: one process drives every
// GPU (ncclCommInitAll). MPI mode: each process owns one rank, the unique id travels by MPI.
// Allreduces are plain ncclAllReduce calls (sum), which CUDA graphs capture.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nccl.h>

#include "cuda/rank_comm.hpp"

namespace eaglesim::cuda {

class NcclRankComm final : public RankComm {
 public:
  NcclRankComm(ncclComm_t comm, int rank, int ranks, int device) : comm_(comm), rank_(rank), ranks_(ranks), device_(device) {}
  std::string strategy() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int ranks() const override { return ranks_; }
  void allreduce(const void* in, void* out, std::size_t count, DType dtype, cudaStream_t stream) override;
  std::size_t max_bytes() const override { return SIZE_MAX; }
  ncclComm_t comm() const { return comm_; }
  int device() const { return device_; }

 private:
  ncclComm_t comm_;
  int rank_, ranks_, device_;
};

class NcclCommGroup final : public CommGroup {
 public:
  // Threads mode: every rank of the job lives in this process.
  explicit NcclCommGroup(const CommGroupConfig& config);
  // MPI mode: this process holds the single rank `world_rank` of `world_size`.
  NcclCommGroup(const CommGroupConfig& config, const ncclUniqueId& id, int world_rank, int world_size);
  ~NcclCommGroup() override;

  RankComm& rank(int r) override;
  int ranks() const override { return static_cast<int>(ranks_.size()); }
  void abort() override;
  // Non-empty when NCCL reports an asynchronous error on some rank (polled by the watchdog).
  std::string async_error();

 private:
  std::vector<std::unique_ptr<NcclRankComm>> ranks_;
  std::mutex abort_mutex_;
  std::atomic<bool> aborted_{false};
};

// Applies --nccl-algo/--nccl-proto/--nccl-channels as NCCL environment variables (read by NCCL
// when a communicator is created) and keeps NVLink SHARP (NVLS) off unless the user set it.
void apply_nccl_options(const NcclOptions& opts);

}  // namespace eaglesim::cuda
