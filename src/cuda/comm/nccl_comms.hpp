#pragma once
// The one owner of NCCL communicators: the `nccl` strategy's group (nccl_comm_group.hpp), the
// custom strategies' fallback for oversize messages and bench-comm's nccl column all hold theirs
// here. Threads mode: one communicator per local GPU (ncclCommInitAll). Processes mode (one
// process per rank, MPI): the one communicator of this process's rank, from a unique id its
// caller shared. When one host thread drives several ranks, wrap the per-rank calls in
// ncclGroupStart/ncclGroupEnd (NcclGroup below).
#include <mutex>
#include <string>
#include <vector>

#include <nccl.h>

#include "core/dtype.hpp"

namespace eaglesim::cuda {

class NcclComms {
 public:
  // Threads mode: rank r on devices[r].
  explicit NcclComms(const std::vector<int>& devices);
  // Processes mode: rank `rank` of `ranks` on `device`; every process passes the same `id`.
  NcclComms(int device, const ncclUniqueId& id, int rank, int ranks);
  ~NcclComms();
  NcclComms(const NcclComms&) = delete;
  NcclComms& operator=(const NcclComms&) = delete;

  ncclComm_t at(int local) const { return comms_.at(local); }  // by this process's GPU index
  int device(int local) const { return devices_.at(local); }
  int rank(int local) const { return ranks_.at(local); }        // the rank in the group
  int size() const { return static_cast<int>(comms_.size()); }
  // ncclCommAbort on every communicator (makes their kernels return, also inside a CUDA graph,
  // so a rank stuck in an allreduce whose peer never arrives gets its stream back). Safe to call
  // from several threads (the watchdog and a failing rank) and more than once.
  void abort();
  // Non-empty when NCCL reports an asynchronous error on some rank (polled by the watchdog);
  // empty once aborted.
  std::string async_error();

 private:
  std::vector<ncclComm_t> comms_;
  std::vector<int> devices_, ranks_;  // per local communicator
  std::mutex mutex_;                  // abort() vs async_error(): never query a freed comm
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

// The NCCL element type of an allreduce buffer; InputError for int4, which no allreduce carries.
ncclDataType_t nccl_type(DType t);

}  // namespace eaglesim::cuda
