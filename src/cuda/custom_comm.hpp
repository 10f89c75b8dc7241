#pragma once
// Our own allreduce strategies (kernels/), behind the RankComm/CommGroup interface of
// rank_comm.hpp. create_comm_group() (owned by the replay backend) hands every strategy other
// than `nccl` to create_custom_comm_group().
//
// Strategies: oneshot (pull), oneshot_push, twoshot, fused (oneshot + residual + RMSNorm),
// quant (fp8 e4m3 on the wire), reference (the plain kernel, for tests).
// Supported: 2, 4 or 8 ranks, either in one process (threads mode: one thread per GPU, peers'
// buffers reached through P2P pointers) or one process per rank under mpirun (processes mode,
// CommGroupConfig::processes: the peers' buffers mapped through CUDA IPC, so one node); bf16 /
// fp16 / fp32, any element count (including odd sizes and unaligned pointers), P2P between
// every pair of GPUs.
// fused spreads each of a few long rows over several blocks (EAGLESIM_FUSED_CHUNK_UNITS, read
// at group creation, overrides the split target for tuning: 16-byte units per block, 0 = one
// block per row). Split rows are pulled and the row's blocks then combine their sums of squares
// through a global-memory rendezvous, or with EAGLESIM_FUSED_CLUSTER=1 (read at group creation)
// through one thread-block cluster per row on sm_90+ (both give bitwise-identical results).
// EAGLESIM_FUSED_PUSH=1 pushes them instead (each block writes its chunk into every rank's
// receive area; after a barrier over the row every block reads the whole row locally and
// computes the row's sum of squares itself, no row sync). Both alternatives measured slower on
// H200 NVLink.
// Messages larger than max_bytes() go through NCCL (logged once per rank). Drive each rank from
// its own thread (as the replay backend does) when oversize messages can occur: the fused
// strategy's fallback enqueues a residual/RMSNorm kernel after its ncclAllReduce, and an NCCL
// group around the calls (needed when ONE thread drives several NCCL ranks) would defer the
// NCCL part past that kernel.
#include <memory>
#include <string>
#include <vector>

#include "cuda/rank_comm.hpp"

namespace eaglesim::cuda {

bool is_custom_strategy(const std::string& name);
std::vector<std::string> custom_strategy_names();

class CustomCommGroup : public CommGroup {
 public:
  // Empty while healthy; otherwise which rank gave up and why (timeout waiting for a peer, or
  // abort()). Readable while kernels run (host-mapped words): use it after a failed sync.
  virtual std::string failure() const = 0;
  // Throws DeviceError with failure() when a rank has given up.
  void throw_if_failed() const;
  // True when this is a `fused` group whose split rows sync through thread-block clusters (every
  // GPU sm_90+, EAGLESIM_FUSED_CLUSTER=1); rows of more than 8 chunks still use the
  // rendezvous. For tests and benchmark labels.
  virtual bool fused_row_clusters() const = 0;
  // True when this is a `fused` group whose split rows use the push kernel
  // (EAGLESIM_FUSED_PUSH=1; the default pulls, then syncs the row). For tests and labels.
  virtual bool fused_push() const = 0;
};

std::unique_ptr<CustomCommGroup> make_custom_comm_group(const CommGroupConfig& config);

// The entry point create_comm_group() calls for non-nccl strategies. Throws InputError for an
// unknown strategy or unsupported rank count, DeviceError for missing GPUs or P2P.
std::unique_ptr<CommGroup> create_custom_comm_group(const CommGroupConfig& config);

}  // namespace eaglesim::cuda
