#pragma once
// Our own allreduce strategies (kernels/), behind the RankComm/CommGroup interface of
// rank_comm.hpp: create_comm_group() hands every strategy whose kernel is ours in the strategy
// table (comm/strategy_facts.hpp: one-shot pull and push, two-shot, fused one-shot + residual +
// RMSNorm, fp8 quant, and the plain reference kernel for tests) to create_custom_comm_group().
// Supported: 2, 4 or 8 ranks, either in one process (threads mode: one thread per GPU, peers'
// buffers reached through P2P pointers) or one process per rank under mpirun (processes mode,
// CommGroupConfig::processes: the peers' buffers mapped through CUDA IPC, so one node); bf16 /
// fp16 / fp32, any element count (including odd sizes and unaligned pointers), P2P between
// every pair of GPUs.
// The fused strategy spreads each of a few long rows over several blocks
// (comm/fused_split_plan.hpp; FusedKernelOptions::chunk_units sets the target). By default the
// split rows are pulled and the row's blocks then combine their sums of squares through a
// global-memory rendezvous; FusedKernelOptions::cluster does that through one thread-block
// cluster per row on sm_90+ instead (bitwise-identical results), and FusedKernelOptions::push
// pushes the rows (each block writes its chunk into every rank's receive area; after a barrier
// over the row every block reads the whole row locally and computes the row's sum of squares
// itself, no row sync). Both alternatives measured slower on H200 NVLink (docs/results.md,
// "Allreduce kernels"); push is kept for links where remote reads are the expensive part.
// Messages larger than max_bytes() go through NCCL (logged once per rank). Drive each rank from
// its own thread (as the replay backend does) when oversize messages can occur: the fused
// strategy's fallback enqueues a residual/RMSNorm kernel after its ncclAllReduce, and an NCCL
// group around the calls (needed when ONE thread drives several NCCL ranks) would defer the
// NCCL part past that kernel.
#include <memory>
#include <string>

#include "cuda/comm/rank_comm.hpp"

namespace eaglesim::cuda {

class CustomCommGroup : public CommGroup {
 public:
  // Empty while healthy; otherwise which rank gave up and why (timeout waiting for a peer, or
  // abort()). Readable while kernels run (host-mapped words): use it after a failed sync.
  virtual std::string failure() const = 0;
  // Throws DeviceError with failure() when a rank has given up.
  void throw_if_failed() const;
  // True when this is a `fused` group whose split rows sync through thread-block clusters
  // (FusedKernelOptions::cluster and every GPU sm_90+); rows of more than 8 chunks still use the
  // rendezvous. For tests and benchmark labels.
  virtual bool fused_row_clusters() const = 0;
  // True when this is a `fused` group whose split rows use the push kernel
  // (FusedKernelOptions::push; the default pulls, then syncs the row). For tests and labels.
  virtual bool fused_push() const = 0;
};

std::unique_ptr<CustomCommGroup> make_custom_comm_group(const CommGroupConfig& config);

// The entry point create_comm_group() calls for our strategies. Throws InputError for a strategy
// that is not ours or an unsupported rank count, DeviceError for missing GPUs or P2P.
std::unique_ptr<CommGroup> create_custom_comm_group(const CommGroupConfig& config);

}  // namespace eaglesim::cuda
