#include "cuda/comm/nccl_comms.hpp"

#include <exception>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/errors.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/device_guard.hpp"

namespace eaglesim::cuda {

NcclComms::NcclComms(const std::vector<int>& devices)
    : comms_(devices.size(), nullptr), devices_(devices), ranks_(devices.size()) {
  for (std::size_t r = 0; r < devices.size(); ++r) ranks_[r] = static_cast<int>(r);
  EAGLESIM_NCCL_CHECK(ncclCommInitAll(comms_.data(), static_cast<int>(devices.size()), devices.data()));
}

NcclComms::NcclComms(int device, const ncclUniqueId& id, int rank, int ranks)
    : comms_(1, nullptr), devices_{device}, ranks_{rank} {
  DeviceGuard guard(device);
  EAGLESIM_NCCL_CHECK(ncclCommInitRank(&comms_[0], ranks, id, rank));
}

NcclComms::~NcclComms() {
  if (aborted_) return;  // aborted communicators are already freed
  for (std::size_t l = 0; l < comms_.size(); ++l) {
    if (!comms_[l]) continue;
    QuietDeviceGuard guard(devices_[l]);
    ncclCommDestroy(comms_[l]);
  }
}

void NcclComms::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_) return;
  aborted_ = true;
  for (std::size_t l = 0; l < comms_.size(); ++l) {
    if (!comms_[l]) continue;
    QuietDeviceGuard guard(devices_[l]);
    const ncclResult_t res = ncclCommAbort(comms_[l]);
    if (res != ncclSuccess) spdlog::warn("ncclCommAbort on rank {}: {}", ranks_[l], ncclGetErrorString(res));
  }
}

std::string NcclComms::async_error() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_) return "";
  for (std::size_t l = 0; l < comms_.size(); ++l) {
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(comms_[l], &state) == ncclSuccess && state != ncclSuccess && state != ncclInProgress)
      return fmt::format("NCCL reported an asynchronous error on rank {}: {}", ranks_[l], ncclGetErrorString(state));
  }
  return "";
}

NcclGroup::NcclGroup() { EAGLESIM_NCCL_CHECK(ncclGroupStart()); }
NcclGroup::~NcclGroup() noexcept(false) {
  const ncclResult_t rc = ncclGroupEnd();
  if (!std::uncaught_exceptions()) EAGLESIM_NCCL_CHECK(rc);
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::bf16: return ncclBfloat16;
    case DType::fp16: return ncclFloat16;
    case DType::fp32: return ncclFloat32;
    case DType::fp8: return ncclFloat8e4m3;
    case DType::int4: break;
  }
  throw InputError("NCCL allreduce: int4 is not an allreduce type");
}

}  // namespace eaglesim::cuda
