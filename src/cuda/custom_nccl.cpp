#include "cuda/custom_nccl.hpp"

#include <exception>

#include "cuda/custom_check.hpp"

namespace eaglesim::cuda {

NcclComms::NcclComms(const std::vector<int>& devices) : comms_(devices.size(), nullptr) {
  check_nccl(ncclCommInitAll(comms_.data(), static_cast<int>(devices.size()), devices.data()), "ncclCommInitAll");
}

NcclComms::NcclComms(int device, const ncclUniqueId& id, int rank, int ranks) : comms_(1, nullptr) {
  DeviceGuard guard(device);
  check_nccl(ncclCommInitRank(&comms_[0], ranks, id, rank), "ncclCommInitRank");
}

NcclComms::~NcclComms() {
  for (ncclComm_t c : comms_)
    if (c) aborted_ ? (void)0 : (void)ncclCommDestroy(c);
}

void NcclComms::abort() {
  if (aborted_) return;
  aborted_ = true;
  for (ncclComm_t c : comms_)
    if (c) ncclCommAbort(c);
}

NcclGroup::NcclGroup() { check_nccl(ncclGroupStart(), "ncclGroupStart"); }
NcclGroup::~NcclGroup() noexcept(false) {
  ncclResult_t rc = ncclGroupEnd();
  if (!std::uncaught_exceptions()) check_nccl(rc, "ncclGroupEnd");
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::bf16: return ncclBfloat16;
    case DType::fp16: return ncclFloat16;
    case DType::fp32: return ncclFloat32;
    default: break;
  }
  throw DeviceError(std::string("NCCL allreduce: unsupported dtype ") + to_string(t));
}

}  // namespace eaglesim::cuda
