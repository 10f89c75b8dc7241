// The built-in P2P allreduce kernels, each registered under its strategy's name: the reference
// (bench-comm's baseline), one-shot pull and push, two-shot, fp8 quant and the fused one-shot +
// residual add + RMSNorm; and the registry the custom comm group looks them up in.
#include <deque>
#include <mutex>
#include <stdexcept>

#include "comm/fused_split_plan.hpp"
#include "cuda/comm/p2p_allreduce_kernel.cuh"
#include "cuda/runtime/device_guard.hpp"

#include "fused_allreduce_rmsnorm.cuh"
#include "fused_allreduce_rmsnorm_push.cuh"
#include "oneshot_allreduce.cuh"
#include "quant_allreduce.cuh"
#include "reference_allreduce.cuh"
#include "twoshot_allreduce.cuh"

namespace eaglesim::cuda {

namespace {

using kernels::kThreads;
using kernels::RankArgs;

// ---------------------------------------------------------------- plain allreduces

// The launch of one kernel template per (T, N); `Launch` names the kernel's grid and arguments.
template <typename T, int N>
struct ReferenceLaunch {
  static void run(const RankArgs& a, const void* in, void* out, std::size_t count, int limit, cudaStream_t s) {
    launch_comm(kernels::reference_allreduce<T, N>, dim3(grid_for(count, limit)), dim3(kThreads), s, a,
                static_cast<const T*>(in), static_cast<T*>(out), count);
  }
};

template <typename T, int N>
struct OneshotPullLaunch {
  static void run(const RankArgs& a, const void* in, void* out, std::size_t count, int limit, cudaStream_t s) {
    launch_comm(kernels::oneshot_pull<T, N>, dim3(grid_for(kernels::units_of<T>(count), limit)), dim3(kThreads), s,
                a, static_cast<const T*>(in), static_cast<T*>(out), count, aligned16(in), aligned16(out));
  }
};

template <typename T, int N>
struct OneshotPushLaunch {
  static void run(const RankArgs& a, const void* in, void* out, std::size_t count, int limit, cudaStream_t s) {
    launch_comm(kernels::oneshot_push<T, N>, dim3(grid_for(kernels::units_of<T>(count), limit)), dim3(kThreads), s,
                a, static_cast<const T*>(in), static_cast<T*>(out), count, aligned16(in), aligned16(out));
  }
};

template <typename T, int N>
struct TwoshotLaunch {
  static void run(const RankArgs& a, const void* in, void* out, std::size_t count, int limit, cudaStream_t s) {
    const std::size_t units = kernels::units_of<T>(count);
    launch_comm(kernels::twoshot<T, N>, dim3(grid_for((units + N - 1) / N, limit)), dim3(kThreads), s, a,
                static_cast<const T*>(in), static_cast<T*>(out), count, aligned16(in), aligned16(out));
  }
};

template <typename T, int N>
struct QuantLaunch {
  static void run(const RankArgs& a, const void* in, void* out, std::size_t count, int limit, cudaStream_t s) {
    launch_comm(kernels::quant_allreduce<T, N>,
                dim3(grid_for(kernels::quant_data_bytes(count) / kernels::kQuantPerThread, limit)), dim3(kThreads), s,
                a, static_cast<const T*>(in), static_cast<T*>(out), count, aligned16(in), aligned16(out));
  }
};

// The allreduce entry of a registration: dtype x rank count onto Launch<T, N>.
template <template <typename, int> class Launch>
void allreduce_with(DType dtype, int ranks, const RankArgs& a, const void* in, void* out, std::size_t count, int limit,
                    cudaStream_t s) {
  dispatch<Launch>(dtype, ranks, a, in, out, count, limit, s);
}

std::size_t one_slot(int, std::size_t max_bytes, bool) { return padded_slot_bytes(max_bytes); }
// Every rank writes its input into all peers' receive areas.
std::size_t slot_per_rank(int ranks, std::size_t max_bytes, bool) { return padded_slot_bytes(max_bytes) * ranks; }
// The reduce-scatter's partial sums beside the inputs.
std::size_t two_slots(int, std::size_t max_bytes, bool) { return padded_slot_bytes(max_bytes) * 2; }
// Smallest element is 2 bytes: at most max_bytes/2 elements, 1 byte each + scales.
std::size_t quant_slot(int, std::size_t max_bytes, bool) {
  const std::size_t data = kernels::quant_data_bytes(max_bytes / 2 + 1);
  return round_up(data + data / kernels::kQuantGroup * sizeof(float), 256) + 256;
}

// ---------------------------------------------------------------- allreduce + residual add + RMSNorm

// The host plan (comm/fused_split_plan.hpp) in the kernels' terms.
kernels::FusedSplit plan_split(std::size_t tokens, std::size_t row_units, int limit, std::size_t target) {
  const FusedSplitPlan plan = plan_fused_split(tokens, row_units, limit, target, kThreads);
  kernels::FusedSplit sp;
  sp.chunks = plan.chunks;
  sp.chunk_units = plan.chunk_units;
  return sp;
}

// One launch of the row-split kernel with U units per thread: as clusters of sp.chunks blocks
// (one cluster per row) when `cluster` allows it and the row fits a portable cluster, else
// with the global-memory rendezvous.
template <typename T, int N, int U>
void launch_fused_split(const RankArgs& a, const T* x, const kernels::FusedRows& rows, const kernels::FusedSplit& sp,
                        T* res, const T* w, T* y, int threads, bool cluster, cudaStream_t s) {
  using kernels::RowSync;
  const int grid = static_cast<int>(rows.tokens) * sp.chunks;  // <= limit by plan_split
  if (!cluster || sp.chunks > kernels::kMaxClusterChunks) {
    launch_comm(kernels::fused_allreduce_rmsnorm_split<T, N, U, RowSync::rendezvous>, dim3(grid), dim3(threads), s,
                a, x, rows, sp, res, w, y);
    return;
  }
  // grid = tokens * chunks: whole clusters of sp.chunks blocks.
  launch_comm_clustered(static_cast<unsigned>(sp.chunks),
                        kernels::fused_allreduce_rmsnorm_split<T, N, U, RowSync::cluster>, dim3(grid), dim3(threads), s,
                        a, x, rows, sp, res, w, y);
}

// The block for `units` 16-byte units at `per_thread` units per thread, whole warps: sized to
// the row (or chunk) so that no thread idles through the whole call.
int threads_for(std::size_t units, std::size_t per_thread) {
  const std::size_t t = (units + per_thread - 1) / per_thread;
  return static_cast<int>(std::max<std::size_t>(32, (t + 31) / 32 * 32));
}

// Rows split over several blocks: pushed when asked for and the block fits, else pulled with
// U = 1, 2 or 4 units per thread.
template <typename T, int N>
void launch_fused_rows_split(const RankArgs& a, const T* x, const kernels::FusedRows& rows,
                             const kernels::FusedSplit& sp, T* res, const T* w, T* y, std::size_t row_units,
                             const FusedKernelOptions& o, cudaStream_t s) {
  const std::size_t cu = sp.chunk_units;
  // Push: one unit of the own chunk per thread, and the whole row in kPushRowUnitsPerThread
  // units per thread (the sum of squares of the row).
  const int push_threads = std::max(threads_for(cu, 1), threads_for(row_units, kernels::kPushRowUnitsPerThread));
  if (o.push && push_threads <= kThreads) {
    launch_comm(kernels::fused_allreduce_rmsnorm_push<T, N>, dim3(static_cast<int>(rows.tokens) * sp.chunks),
                dim3(push_threads), s, a, x, rows, sp, res, w, y);
    return;
  }
  if (cu <= kThreads)
    launch_fused_split<T, N, 1>(a, x, rows, sp, res, w, y, threads_for(cu, 1), o.cluster, s);
  else if (cu <= 2 * kThreads)
    launch_fused_split<T, N, 2>(a, x, rows, sp, res, w, y, threads_for(cu, 2), o.cluster, s);
  else
    launch_fused_split<T, N, 4>(a, x, rows, sp, res, w, y, threads_for(cu, 4), o.cluster, s);
}

template <typename T, int N>
struct FusedLaunch {
  static void run(const RankArgs& a, const void* in, const FusedNormArgs& f, int limit, const FusedKernelOptions& o,
                  cudaStream_t s) {
    kernels::FusedRows rows{f.tokens, f.hidden, f.eps, false};
    rows.aligned = aligned16(in) && aligned16(f.residual) && aligned16(f.weight) && aligned16(f.normed) &&
                   (f.hidden * sizeof(T)) % 16 == 0;
    const int grid = static_cast<int>(std::min<std::size_t>(f.tokens, static_cast<std::size_t>(limit)));
    const T* x = static_cast<const T*>(in);
    T* res = static_cast<T*>(f.residual);
    const T* w = static_cast<const T*>(f.weight);
    T* y = static_cast<T*>(f.normed);
    // Rows that fit in registers (U units per thread) take the register-resident kernels.
    const std::size_t row_units = kernels::units_of<T>(f.hidden);
    const kernels::FusedSplit sp = plan_split(f.tokens, row_units, limit, o.chunk_units);
    if (sp.chunks > 1) {
      launch_fused_rows_split<T, N>(a, x, rows, sp, res, w, y, row_units, o, s);
      return;
    }
    if (row_units <= kThreads)
      launch_comm(kernels::fused_allreduce_rmsnorm_regs<T, N, 1>, dim3(grid), dim3(threads_for(row_units, 1)), s, a,
                  x, rows, res, w, y);
    else if (row_units <= 2 * kThreads)
      launch_comm(kernels::fused_allreduce_rmsnorm_regs<T, N, 2>, dim3(grid), dim3(threads_for(row_units, 2)), s, a,
                  x, rows, res, w, y);
    else if (row_units <= 4 * kThreads)
      launch_comm(kernels::fused_allreduce_rmsnorm_regs<T, N, 4>, dim3(grid), dim3(threads_for(row_units, 4)), s, a,
                  x, rows, res, w, y);
    else
      launch_comm(kernels::fused_allreduce_rmsnorm<T, N>, dim3(grid), dim3(kThreads), s, a, x, rows, res, w, y);
  }
};

void fused_allreduce_rmsnorm(DType dtype, int ranks, const RankArgs& a, const void* in, const FusedNormArgs& f,
                             int limit, const FusedKernelOptions& o, cudaStream_t s) {
  dispatch<FusedLaunch>(dtype, ranks, a, in, f, limit, o, s);
}

// A pushing fused group writes its split rows into N receive areas, as oneshot_push does.
std::size_t fused_slot(int ranks, std::size_t max_bytes, bool push) {
  return push ? padded_slot_bytes(max_bytes) * ranks : padded_slot_bytes(max_bytes);
}

// Whether `device` runs the cluster row sync: compute capability 9.0+ AND the binary holds
// sm_90+ code for it (a build for older architectures only would run the kernel from JIT-ed
// older PTX, whose cluster path traps). Every instantiation comes from this file, compiled for
// the same architectures, so one representative kernel answers for all.
bool runs_cluster_code(int device) {
  DeviceGuard guard(device);
  int major = 0;
  EAGLESIM_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  if (major < 9) return false;
  cudaFuncAttributes attrs{};
  EAGLESIM_CUDA_CHECK(cudaFuncGetAttributes(
      &attrs, kernels::fused_allreduce_rmsnorm_split<__nv_bfloat16, 2, 1, kernels::RowSync::cluster>));
  return attrs.ptxVersion >= 90;
}

// ---------------------------------------------------------------- the registry

P2pAllreduceKernel plain(std::string_view strategy, std::size_t (*slot)(int, std::size_t, bool),
                         void (*allreduce)(DType, int, const RankArgs&, const void*, void*, std::size_t, int,
                                           cudaStream_t)) {
  P2pAllreduceKernel k;
  k.strategy = strategy;
  k.slot_bytes = slot;
  k.allreduce = allreduce;
  return k;
}

std::vector<P2pAllreduceKernel> builtin_kernels() {
  // A plain allreduce on the fused strategy (no norm after it) is the one-shot pull.
  P2pAllreduceKernel fused = plain("fused", fused_slot, allreduce_with<OneshotPullLaunch>);
  fused.allreduce_residual_rmsnorm = fused_allreduce_rmsnorm;
  fused.runs_row_clusters = runs_cluster_code;
  return {
      plain("reference", one_slot, allreduce_with<ReferenceLaunch>),
      plain("oneshot", one_slot, allreduce_with<OneshotPullLaunch>),
      plain("oneshot_push", slot_per_rank, allreduce_with<OneshotPushLaunch>),
      plain("twoshot", two_slots, allreduce_with<TwoshotLaunch>),
      plain("quant", quant_slot, allreduce_with<QuantLaunch>),
      fused,
  };
}

struct KernelRegistry {
  std::mutex mutex;
  std::deque<P2pAllreduceKernel> kernels;  // a deque: registering keeps found kernels in place
  KernelRegistry() {
    for (const P2pAllreduceKernel& k : builtin_kernels()) kernels.push_back(k);
  }
};

KernelRegistry& kernel_registry() {
  static KernelRegistry r;
  return r;
}

}  // namespace

const P2pAllreduceKernel* find_p2p_allreduce_kernel(std::string_view strategy) {
  KernelRegistry& r = kernel_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const P2pAllreduceKernel& k : r.kernels)
    if (k.strategy == strategy) return &k;
  return nullptr;
}

void register_p2p_allreduce_kernel(const P2pAllreduceKernel& kernel) {
  if (kernel.strategy.empty() || !kernel.slot_bytes || !kernel.allreduce)
    throw std::logic_error("register_p2p_allreduce_kernel: a kernel needs a strategy name, slot_bytes and allreduce");
  KernelRegistry& r = kernel_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const P2pAllreduceKernel& k : r.kernels)
    if (k.strategy == kernel.strategy)
      throw std::logic_error("register_p2p_allreduce_kernel(\"" + std::string(kernel.strategy) +
                             "\"): the name is taken");
  r.kernels.push_back(kernel);
}

std::vector<std::string> p2p_allreduce_kernel_names() {
  KernelRegistry& r = kernel_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> out;
  for (const P2pAllreduceKernel& k : r.kernels) out.emplace_back(k.strategy);
  return out;
}

}  // namespace eaglesim::cuda
