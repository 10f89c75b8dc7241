// The custom allreduce group: registered peer buffers + control blocks per rank, the strategy's
// kernel found by name (p2p_allreduce_kernel.cuh), and the NCCL fallback for oversize messages.
#include "cuda/comm/custom_comm.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>

#include "comm/strategy_facts.hpp"
#include "core/errors.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/comm/custom_log.hpp"
#include "cuda/runtime/device_guard.hpp"
#include "cuda/runtime/mpi_world.hpp"
#include "cuda/comm/nccl_comms.hpp"
#include "cuda/comm/p2p_allreduce_kernel.cuh"
#include "cuda/comm/peer_memory.hpp"

#include "fused_allreduce_rmsnorm.cuh"

namespace eaglesim::cuda {

namespace {

using kernels::kThreads;
using kernels::RankArgs;

template <typename T>
void launch_residual_rmsnorm(const void* sum, const FusedNormArgs& f, int limit, cudaStream_t s) {
  kernels::FusedRows rows{f.tokens, f.hidden, f.eps, false};
  rows.aligned = aligned16(sum) && aligned16(f.residual) && aligned16(f.weight) && aligned16(f.normed) &&
                 (f.hidden * sizeof(T)) % 16 == 0;
  const int grid = static_cast<int>(std::min<std::size_t>(f.tokens, static_cast<std::size_t>(limit)));
  launch_comm(kernels::residual_rmsnorm<T>, dim3(grid), dim3(kThreads), s, static_cast<const T*>(sum), rows,
              static_cast<T*>(f.residual), static_cast<const T*>(f.weight), static_cast<T*>(f.normed));
}

// The NCCL element type of an oversize message: only the dtypes our kernels take (bf16, fp16,
// fp32), so that a dtype fails the same way whatever the message size.
ncclDataType_t fallback_type(DType t) {
  if (t != DType::bf16 && t != DType::fp16 && t != DType::fp32)
    throw DeviceError(std::string("NCCL allreduce: unsupported dtype ") + to_string(t));
  return nccl_type(t);
}

class Group;

class Rank final : public RankComm {
 public:
  // `local`: this process's index of the rank (its GPU, args, NCCL fallback); `rank`: its rank
  // in the group (the same in threads mode).
  Rank(Group& group, int local, int rank) : group_(group), local_(local), rank_(rank) {}
  std::string strategy() const override;
  int rank() const override { return rank_; }
  int ranks() const override;
  void allreduce(const void* in, void* out, std::size_t count, DType dtype, cudaStream_t stream) override;
  bool supports_fused() const override;
  void allreduce_residual_rmsnorm(const void* in, const FusedNormArgs& args, DType dtype,
                                  cudaStream_t stream) override;
  std::size_t max_bytes() const override;

 private:
  void note_fallback(std::size_t bytes);
  Group& group_;
  int local_;
  int rank_;
  std::atomic<bool> noted_{false};
};

// The group size: the processes of the MPI job in processes mode, else config.ranks.
int group_ranks(const CommGroupConfig& config) {
  return config.processes ? MpiWorld::get().size() : config.ranks;
}

// Processes mode maps the peers' buffers through CUDA IPC, which reaches the GPUs of this node
// only: a job spread over nodes cannot run our kernels (every process sees the same and throws,
// before any collective, so none waits for another).
void require_one_node(const std::string& strategy) {
  const MpiWorld& world = MpiWorld::get();
  if (world.local_size() != world.size())
    throw DeviceError(strategy + " needs every rank on one node (it maps the peers' buffers through CUDA IPC), but " +
                      std::to_string(world.local_size()) + " of this MPI job's " + std::to_string(world.size()) +
                      " processes run on this node: use " + nccl_strategy() + " across nodes");
}

// The CUDA IPC handles one process publishes for its rank's buffers.
struct RankHandles {
  IpcHandle data, signal;
};

class Group final : public CustomCommGroup {
 public:
  explicit Group(const CommGroupConfig& config, const P2pAllreduceKernel& kernel)
      : config_(config), kernel_(kernel), words_(1 + group_ranks(config)) {
    if (config.processes) require_one_node(config.strategy);
    if (fuses_norm()) {
      fused_ = config.fused;
      // Every rank must run the same fused kernel: in processes mode, rank 0's options.
      if (config.processes) {
        std::uint64_t settings[3] = {fused_.chunk_units, fused_.push ? 1u : 0u, fused_.cluster ? 1u : 0u};
        MpiWorld::get().broadcast(settings, sizeof(settings), 0);
        fused_.chunk_units = static_cast<std::size_t>(settings[0]);
        fused_.push = settings[1] != 0;
        fused_.cluster = settings[2] != 0;
      }
    }
    const int n = config_.ranks = group_ranks(config);
    devices_ = config.devices;
    if (config.processes) {
      if (devices_.size() != 1)
        throw InputError(config.strategy + " (one process per rank): one GPU per process, got " +
                         std::to_string(devices_.size()));
      ranks_here_ = {MpiWorld::get().rank()};
    } else {
      if (devices_.empty())
        for (int r = 0; r < n; ++r) devices_.push_back(r);
      for (int r = 0; r < n; ++r) ranks_here_.push_back(r);
    }
    int have = 0;
    EAGLESIM_CUDA_CHECK(cudaGetDeviceCount(&have));
    for (int d : devices_)
      if (d < 0 || d >= have)
        throw DeviceError(config.strategy + ": GPU " + std::to_string(d) + " requested but " + std::to_string(have) +
                          " visible");
    // Threads mode: peers' plain pointers work once peer access is on. Processes mode: the IPC
    // mappings below enable it (cudaIpcMemLazyEnablePeerAccess).
    if (!config.processes) enable_peer_access(devices_);

    limit_ = kernels::kMaxBlocks;
    for (int d : devices_) {
      int sms = 0;
      EAGLESIM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d));
      limit_ = std::min(limit_, sms);  // same on every rank: grids must match across ranks
    }
    if (config.processes) limit_ = static_cast<int>(fewest_over_processes(limit_));
    if (fuses_norm()) {
      std::string why = fused_.cluster ? "" : "cluster row sync not asked for";
      for (int d : devices_)
        if (fused_.cluster && !(kernel_.runs_row_clusters && kernel_.runs_row_clusters(d))) {
          fused_.cluster = false;
          why = "GPU " + std::to_string(d) + " is below sm_90 or the build holds no sm_90 code for it";
        }
      // Every rank must launch the same kernel: clusters only when every process can.
      if (config.processes && fewest_over_processes(fused_.cluster ? 1 : 0) == 0 && fused_.cluster) {
        why = "a GPU of another process is below sm_90 or has no sm_90 code";
        fused_.cluster = false;
      }
      note_fused_row_sync(fused_.push, fused_.cluster, why);
    }
    slot_bytes_ = kernel_.slot_bytes(n, config.max_bytes, fused_.push);
    for (int d : devices_) {
      data_.push_back(DeviceBuffer::zeroed(d, 2 * slot_bytes_));
      signals_.push_back(DeviceBuffer::zeroed(d, sizeof(kernels::Signal)));
    }
    std::vector<char*> buffers(n);
    std::vector<kernels::Signal*> signals(n);
    if (config.processes) {
      map_peer_buffers(buffers, signals);
    } else {
      for (int r = 0; r < n; ++r) {
        buffers[r] = static_cast<char*>(data_[r].get());
        signals[r] = static_cast<kernels::Signal*>(signals_[r].get());
      }
    }
    for (int r : ranks_here_) {
      RankArgs a{};
      for (int p = 0; p < n; ++p) {
        a.buffers[p] = buffers[p];
        a.signals[p] = signals[p];
      }
      a.rank = r;
      a.slot_bytes = slot_bytes_;
      a.abort_word = words_.device_ptr(0);
      a.error = words_.device_ptr(1 + r);
      a.timeout_ns = static_cast<unsigned long long>(std::max(0.001, config.timeout_s) * 1e9);
      args_.push_back(a);
    }
    if (config.processes) {
      auto& world = MpiWorld::get();
      ncclUniqueId id{};
      if (world.rank() == 0) EAGLESIM_NCCL_CHECK(ncclGetUniqueId(&id));
      world.broadcast(&id, sizeof(id), 0);
      nccl_ = std::make_unique<NcclComms>(devices_[0], id, world.rank(), n);
    } else {
      nccl_ = std::make_unique<NcclComms>(devices_);
    }
    for (std::size_t l = 0; l < ranks_here_.size(); ++l)
      ranks_.push_back(std::make_unique<Rank>(*this, static_cast<int>(l), ranks_here_[l]));
  }

  ~Group() override {
    for (int d : devices_) {
      DeviceGuard g(d);
      cudaDeviceSynchronize();  // kernels exit by themselves (bounded spin) before we free
    }
    // Processes mode: a peer may still be reading this rank's buffers; wait for every process
    // to get here (or give up on an aborted group / after the timeout) before freeing them.
    if (config_.processes)
      MpiWorld::get().barrier(std::max(1.0, config_.timeout_s), [this] { return aborted(); });
  }

  RankComm& rank(int r) override { return *ranks_.at(r); }
  int ranks() const override { return config_.ranks; }

  void abort() override {
    words_.host()[0] = 1;
    nccl_->abort();
  }

  std::string failure() const override {
    std::string msg;
    for (int r : ranks_here_) {
      const unsigned code = words_.host()[1 + r];
      if (code == kernels::kErrTimeout)
        msg += (msg.empty() ? "" : "; ") + config_.strategy + " rank " + std::to_string(r) +
               ": timed out after " + std::to_string(config_.timeout_s) + " s waiting for a peer";
      else if (code == kernels::kErrAborted)
        msg += (msg.empty() ? "" : "; ") + config_.strategy + " rank " + std::to_string(r) + ": aborted";
    }
    if (msg.empty() && words_.host()[0]) msg = config_.strategy + ": group aborted";
    return msg;
  }

  bool aborted() const { return words_.host()[0] != 0; }
  const CommGroupConfig& config() const { return config_; }
  const P2pAllreduceKernel& kernel() const { return kernel_; }
  bool fuses_norm() const { return kernel_.allreduce_residual_rmsnorm != nullptr; }
  int device(int local) const { return devices_[local]; }
  const RankArgs& args(int local) const { return args_[local]; }
  int limit() const { return limit_; }
  const FusedKernelOptions& fused_options() const { return fused_; }
  bool fused_row_clusters() const override { return fuses_norm() && fused_.cluster; }
  bool fused_push() const override { return fuses_norm() && fused_.push; }
  ncclComm_t nccl(int local) const { return nccl_->at(local); }
  // Largest row-padded fused message / plain message the slots take.
  std::size_t capacity() const { return config_.max_bytes; }

 private:
  // The smallest of `mine` over the MPI job's processes.
  static std::size_t fewest_over_processes(std::size_t mine) {
    const std::vector<double> all = MpiWorld::get().allgather({static_cast<double>(mine)});
    return static_cast<std::size_t>(*std::min_element(all.begin(), all.end()));
  }

  // Processes mode: publish this rank's buffers' IPC handles, map every peer's.
  void map_peer_buffers(std::vector<char*>& buffers, std::vector<kernels::Signal*>& signals) {
    const int me = ranks_here_[0], n = config_.ranks;
    const RankHandles mine{export_ipc_handle(data_[0]), export_ipc_handle(signals_[0])};
    // Every process has its buffers allocated and zero-filled (the memset finished) before this
    // exchange, so no peer can signal into a buffer that is not ready yet.
    {
      DeviceGuard guard(devices_[0]);
      EAGLESIM_CUDA_CHECK(cudaDeviceSynchronize());
    }
    const std::vector<char> all = MpiWorld::get().allgather_bytes(&mine, sizeof(mine));
    peer_maps_.reserve(2 * static_cast<std::size_t>(n));
    for (int p = 0; p < n; ++p) {
      if (p == me) {
        buffers[p] = static_cast<char*>(data_[0].get());
        signals[p] = static_cast<kernels::Signal*>(signals_[0].get());
        continue;
      }
      RankHandles h;
      std::memcpy(&h, all.data() + p * sizeof(RankHandles), sizeof(RankHandles));
      buffers[p] = static_cast<char*>(peer_maps_.emplace_back(devices_[0], h.data).get());
      signals[p] = static_cast<kernels::Signal*>(peer_maps_.emplace_back(devices_[0], h.signal).get());
    }
  }

  CommGroupConfig config_;
  const P2pAllreduceKernel& kernel_;
  std::vector<int> devices_;     // per local rank
  std::vector<int> ranks_here_;  // the group ranks this process drives, per local rank
  MappedHostWords words_;        // [0] abort, [1 + r] error code of rank r
  std::vector<DeviceBuffer> data_, signals_;  // per local rank
  std::vector<IpcMapping> peer_maps_;         // processes mode: the peers' data and signals
  std::vector<RankArgs> args_;                // per local rank
  std::unique_ptr<NcclComms> nccl_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  int limit_ = 1;
  std::size_t slot_bytes_ = 0;
  // The fused kernel's options, as every rank runs them (cluster off where a GPU cannot).
  FusedKernelOptions fused_;
};

std::string Rank::strategy() const { return group_.config().strategy; }
int Rank::ranks() const { return group_.ranks(); }
std::size_t Rank::max_bytes() const { return group_.capacity(); }
bool Rank::supports_fused() const { return group_.fuses_norm(); }

void Rank::note_fallback(std::size_t bytes) {
  if (!noted_.exchange(true)) note_nccl_fallback(strategy(), rank_, bytes, max_bytes());
}

void Rank::allreduce(const void* in, void* out, std::size_t count, DType dtype, cudaStream_t stream) {
  if (group_.aborted()) throw DeviceError(group_.failure().empty() ? strategy() + ": aborted" : group_.failure());
  if (count == 0) return;
  DeviceGuard guard(group_.device(local_));
  const std::size_t bytes = count * element_bytes(dtype);
  if (bytes > max_bytes()) {
    note_fallback(bytes);
    EAGLESIM_NCCL_CHECK(ncclAllReduce(in, out, count, fallback_type(dtype), ncclSum, group_.nccl(local_), stream));
    return;
  }
  group_.kernel().allreduce(dtype, ranks(), group_.args(local_), in, out, count, group_.limit(), stream);
  EAGLESIM_CUDA_CHECK(cudaGetLastError());
}

void Rank::allreduce_residual_rmsnorm(const void* in, const FusedNormArgs& f, DType dtype, cudaStream_t stream) {
  if (!supports_fused()) {
    RankComm::allreduce_residual_rmsnorm(in, f, dtype, stream);
    return;
  }
  if (group_.aborted()) throw DeviceError(group_.failure().empty() ? strategy() + ": aborted" : group_.failure());
  if (f.tokens == 0 || f.hidden == 0) return;
  DeviceGuard guard(group_.device(local_));
  const std::size_t count = f.tokens * f.hidden;
  // Rows are padded to whole 16-byte units in the registered slot.
  const std::size_t row_bytes = round_up(f.hidden * element_bytes(dtype), 16);
  if (f.tokens * row_bytes > max_bytes()) {
    note_fallback(count * element_bytes(dtype));
    // NCCL sums into `normed` (same shape), then the residual + RMSNorm kernel reads it there;
    // each thread reads an element of the sum before it writes that element of the output.
    EAGLESIM_NCCL_CHECK(
        ncclAllReduce(in, f.normed, count, fallback_type(dtype), ncclSum, group_.nccl(local_), stream));
    switch (dtype) {
      case DType::bf16: launch_residual_rmsnorm<__nv_bfloat16>(f.normed, f, group_.limit(), stream); break;
      case DType::fp16: launch_residual_rmsnorm<__half>(f.normed, f, group_.limit(), stream); break;
      case DType::fp32: launch_residual_rmsnorm<float>(f.normed, f, group_.limit(), stream); break;
      default: throw DeviceError(std::string("fused: unsupported dtype ") + to_string(dtype));
    }
    EAGLESIM_CUDA_CHECK(cudaGetLastError());
    return;
  }
  group_.kernel().allreduce_residual_rmsnorm(dtype, ranks(), group_.args(local_), in, f, group_.limit(),
                                             group_.fused_options(), stream);
  EAGLESIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void CustomCommGroup::throw_if_failed() const {
  const std::string f = failure();
  if (!f.empty()) throw DeviceError(f);
}

std::unique_ptr<CustomCommGroup> make_custom_comm_group(const CommGroupConfig& config) {
  const StrategyFacts* facts = find_strategy_facts(config.strategy);
  const P2pAllreduceKernel* kernel =
      facts && facts->runtime == StrategyRuntime::own_kernel ? find_p2p_allreduce_kernel(config.strategy) : nullptr;
  if (!kernel) {
    std::string known;
    for (const StrategyFacts& f : strategy_table())
      if (f.runtime == StrategyRuntime::own_kernel && find_p2p_allreduce_kernel(f.name))
        known += (known.empty() ? "" : ", ") + std::string(f.name);
    throw InputError("custom allreduce: unknown strategy '" + config.strategy + "' (known: " + known + ")");
  }
  const int ranks = group_ranks(config);
  if (ranks != 2 && ranks != 4 && ranks != 8)
    throw InputError(config.strategy + ": supports 2, 4 or 8 ranks, got " + std::to_string(ranks) +
                     (config.processes ? " processes" : ""));
  if (!config.processes && !config.devices.empty() && static_cast<int>(config.devices.size()) != config.ranks)
    throw InputError(config.strategy + ": " + std::to_string(config.devices.size()) + " devices for " +
                     std::to_string(config.ranks) + " ranks");
  if (config.max_bytes == 0) throw InputError(config.strategy + ": max_bytes must be positive");
  return std::make_unique<Group>(config, *kernel);
}

std::unique_ptr<CommGroup> create_custom_comm_group(const CommGroupConfig& config) {
  return make_custom_comm_group(config);
}

}  // namespace eaglesim::cuda
