#include "cuda/nccl_comm_group.hpp"

#include <cstdlib>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/errors.hpp"
#include "cuda/cuda_check.hpp"

namespace eaglesim::cuda {

namespace {
ncclDataType_t replay_nccl_type(DType dtype) {
  switch (dtype) {
    case DType::bf16: return ncclBfloat16;
    case DType::fp16: return ncclFloat16;
    case DType::fp32: return ncclFloat32;
    case DType::fp8: return ncclFloat8e4m3;
    case DType::int4: break;
  }
  throw InputError("NCCL allreduce: int4 is not an allreduce type");
}
}  // namespace

void NcclRankComm::allreduce(const void* in, void* out, std::size_t count, DType dtype, cudaStream_t stream) {
  EAGLESIM_NCCL_CHECK(ncclAllReduce(in, out, count, replay_nccl_type(dtype), ncclSum, comm_, stream));
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

NcclCommGroup::NcclCommGroup(const CommGroupConfig& config) {
  const int n = config.ranks;
  if (n < 1 || static_cast<int>(config.devices.size()) != n)
    throw InputError(fmt::format("nccl: {} ranks need {} devices, got {}", n, n, config.devices.size()));
  apply_nccl_options(config.nccl);
  std::vector<ncclComm_t> comms(n, nullptr);
  EAGLESIM_NCCL_CHECK(ncclCommInitAll(comms.data(), n, config.devices.data()));
  for (int r = 0; r < n; ++r) ranks_.push_back(std::make_unique<NcclRankComm>(comms[r], r, n, config.devices[r]));
}

NcclCommGroup::NcclCommGroup(const CommGroupConfig& config, const ncclUniqueId& id, int world_rank, int world_size) {
  if (config.devices.size() != 1) throw InputError("nccl (MPI mode): one device per process");
  apply_nccl_options(config.nccl);
  EAGLESIM_CUDA_CHECK(cudaSetDevice(config.devices[0]));
  ncclComm_t comm = nullptr;
  EAGLESIM_NCCL_CHECK(ncclCommInitRank(&comm, world_size, id, world_rank));
  ranks_.push_back(std::make_unique<NcclRankComm>(comm, world_rank, world_size, config.devices[0]));
}

NcclCommGroup::~NcclCommGroup() {
  if (aborted_) return;  // aborted communicators are already freed
  for (auto& r : ranks_) {
    cudaSetDevice(r->device());
    ncclCommDestroy(r->comm());
  }
}

RankComm& NcclCommGroup::rank(int r) {
  if (r < 0 || r >= static_cast<int>(ranks_.size()))
    throw InputError(fmt::format("nccl: rank {} out of range (group has {})", r, ranks_.size()));
  return *ranks_[r];
}

void NcclCommGroup::abort() {
  std::lock_guard<std::mutex> lock(abort_mutex_);
  if (aborted_) return;
  aborted_ = true;
  for (auto& r : ranks_) {
    // ncclCommAbort makes the comm's kernels (also inside a CUDA graph) return, so a rank
    // stuck in an allreduce whose peer never arrives gets its stream back.
    cudaSetDevice(r->device());
    ncclResult_t res = ncclCommAbort(r->comm());
    if (res != ncclSuccess) spdlog::warn("ncclCommAbort on rank {}: {}", r->rank(), ncclGetErrorString(res));
  }
}

std::string NcclCommGroup::async_error() {
  std::lock_guard<std::mutex> lock(abort_mutex_);  // never query a comm that abort() is freeing
  if (aborted_) return "";
  for (auto& r : ranks_) {
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(r->comm(), &state) == ncclSuccess && state != ncclSuccess && state != ncclInProgress)
      return fmt::format("NCCL reported an asynchronous error on rank {}: {}", r->rank(), ncclGetErrorString(state));
  }
  return "";
}

}  // namespace eaglesim::cuda
