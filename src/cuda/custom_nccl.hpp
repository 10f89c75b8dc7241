#pragma once
// One NCCL communicator per local GPU (ncclCommInitAll), for the custom strategies' fallback on
// oversize messages and for bench-comm's nccl column; with one process per rank (MPI), the one
// communicator of this process's rank, from a unique id its caller shared. When one host thread drives several
// ranks, wrap the per-rank calls in ncclGroupStart/ncclGroupEnd (NcclGroup below).
#include <vector>

#include <nccl.h>

#include "core/dtype.hpp"

namespace eaglesim::cuda {

class NcclComms {
 public:
  explicit NcclComms(const std::vector<int>& devices);
  // Processes mode: rank `rank` of `ranks` on `device`; every process passes the same `id`.
  NcclComms(int device, const ncclUniqueId& id, int rank, int ranks);
  ~NcclComms();
  NcclComms(const NcclComms&) = delete;
  NcclComms& operator=(const NcclComms&) = delete;
  ncclComm_t at(int local) const { return comms_.at(local); }  // by this process's GPU index
  int size() const { return static_cast<int>(comms_.size()); }
  // ncclCommAbort on every communicator (stops kernels stuck waiting for a dead peer).
  void abort();

 private:
  std::vector<ncclComm_t> comms_;
  bool aborted_ = false;
};

// RAII ncclGroupStart/End.
class NcclGroup {
 public:
  NcclGroup();
  ~NcclGroup() noexcept(false);
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;
};

ncclDataType_t nccl_type(DType t);  // DeviceError for dtypes NCCL cannot sum (fp8, int4)

}  // namespace eaglesim::cuda
