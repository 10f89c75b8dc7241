#include "cuda/comm/nccl_comm_group.hpp"

#include <cstdlib>
#include <memory>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cuda/runtime/cuda_check.hpp"

namespace eaglesim::cuda {

void NcclRankComm::allreduce(const void* in, void* out, std::size_t count, DType dtype, cudaStream_t stream) {
  EAGLESIM_NCCL_CHECK(ncclAllReduce(in, out, count, nccl_type(dtype), ncclSum, comm_, stream));
}

void apply_nccl_options(const NcclOptions& opts) {
  // NVLS (NVLink multicast) reserves memory and only pays for large messages; verify-step
  // allreduces are tens of KiB. Respect an explicit user setting.
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  if (!opts.algo.empty()) setenv("NCCL_ALGO", opts.algo == "ring" ? "Ring" : opts.algo == "tree" ? "Tree" : opts.algo.c_str(), 1);
  if (!opts.proto.empty()) setenv("NCCL_PROTO", opts.proto.c_str(), 1);
  if (opts.channels > 0) {
    const std::string c = std::to_string(opts.channels);
    setenv("NCCL_MIN_NCHANNELS", c.c_str(), 1);
    setenv("NCCL_MAX_NCHANNELS", c.c_str(), 1);
  }
}

NcclCommGroup::NcclCommGroup(const CommGroupConfig& config) : strategy_(config.strategy) {
  const int n = config.ranks;
  if (n < 1 || static_cast<int>(config.devices.size()) != n)
    throw InputError(fmt::format("{}: {} ranks need {} devices, got {}", config.strategy, n, n, config.devices.size()));
  apply_nccl_options(config.nccl);
  comms_ = std::make_unique<NcclComms>(config.devices);
  for (int r = 0; r < n; ++r) ranks_.push_back(std::make_unique<NcclRankComm>(config.strategy, comms_->at(r), r, n));
}

NcclCommGroup::NcclCommGroup(const CommGroupConfig& config, const ncclUniqueId& id, int world_rank, int world_size)
    : strategy_(config.strategy) {
  if (config.devices.size() != 1) throw InputError(config.strategy + " (MPI mode): one device per process");
  apply_nccl_options(config.nccl);
  comms_ = std::make_unique<NcclComms>(config.devices[0], id, world_rank, world_size);
  ranks_.push_back(std::make_unique<NcclRankComm>(config.strategy, comms_->at(0), world_rank, world_size));
}

RankComm& NcclCommGroup::rank(int r) {
  if (r < 0 || r >= static_cast<int>(ranks_.size()))
    throw InputError(fmt::format("{}: rank {} out of range (group has {})", strategy_, r, ranks_.size()));
  return *ranks_[r];
}

}  // namespace eaglesim::cuda
