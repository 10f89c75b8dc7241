#pragma once
// The NCCL strategy: one NCCL communicator per rank (nccl_comms.hpp). Threads mode: one process
// drives every GPU. MPI mode: each process owns one rank, the unique id travels by MPI.
// Allreduces are plain ncclAllReduce calls (sum), which CUDA graphs capture.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nccl.h>

#include "cuda/comm/nccl_comms.hpp"
#include "cuda/comm/rank_comm.hpp"

namespace eaglesim::cuda {

class NcclRankComm final : public RankComm {
 public:
  NcclRankComm(std::string strategy, ncclComm_t comm, int rank, int ranks)
      : strategy_(std::move(strategy)), comm_(comm), rank_(rank), ranks_(ranks) {}
  std::string strategy() const override { return strategy_; }
  int rank() const override { return rank_; }
  int ranks() const override { return ranks_; }
  void allreduce(const void* in, void* out, std::size_t count, DType dtype, cudaStream_t stream) override;
  std::size_t max_bytes() const override { return SIZE_MAX; }

 private:
  std::string strategy_;
  ncclComm_t comm_;  // owned by the group's NcclComms
  int rank_, ranks_;
};

class NcclCommGroup final : public CommGroup {
 public:
  // Threads mode: every rank of the job lives in this process.
  explicit NcclCommGroup(const CommGroupConfig& config);
  // MPI mode: this process holds the single rank `world_rank` of `world_size`.
  NcclCommGroup(const CommGroupConfig& config, const ncclUniqueId& id, int world_rank, int world_size);

  RankComm& rank(int r) override;
  int ranks() const override { return static_cast<int>(ranks_.size()); }
  void abort() override { comms_->abort(); }
  // Non-empty when NCCL reports an asynchronous error on some rank (polled by the watchdog).
  std::string async_error() { return comms_->async_error(); }

 private:
  std::string strategy_;
  std::unique_ptr<NcclComms> comms_;
  std::vector<std::unique_ptr<NcclRankComm>> ranks_;
};

// Applies --nccl-algo/--nccl-proto/--nccl-channels as NCCL environment variables (read by NCCL
// when a communicator is created) and keeps NVLink SHARP (NVLS) off unless the user set it.
void apply_nccl_options(const NcclOptions& opts);

}  // namespace eaglesim::cuda
