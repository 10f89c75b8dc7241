#pragma once
// One of our allreduce kernels as the CUDA side of a strategy's plug-in. Registered under the
// strategy's name (its spec, comm/strategy_spec.hpp, says StrategyRuntime::own_kernel), it sizes
// the registered buffer's slots and launches one allreduce; the custom comm group
// (custom_comm.cu) owns the buffers, signals, the NCCL fallback and the checks, and finds the
// kernel by name. The built-in kernels are registered in p2p_allreduce_kernels.cu; a new one
// registers from its own file (docs/strategies.md). nvcc only: the launchers reach kernels/.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/dtype.hpp"
#include "core/errors.hpp"
#include "cuda/comm/rank_comm.hpp"
#include "cuda/runtime/cuda_check.hpp"

#include "ar_common.cuh"

namespace eaglesim::cuda {

struct P2pAllreduceKernel {
  std::string_view strategy;  // the spec's name
  // Bytes of one parity slot of the registered buffer for messages up to max_bytes on `ranks`
  // ranks; `fused_push`: the fused kernel pushes its split rows into every rank's receive area.
  std::size_t (*slot_bytes)(int ranks, std::size_t max_bytes, bool fused_push) = nullptr;
  // One allreduce of `count` elements in at most `limit` blocks.
  void (*allreduce)(DType dtype, int ranks, const kernels::RankArgs& args, const void* in, void* out,
                    std::size_t count, int limit, cudaStream_t stream) = nullptr;
  // A kernel that also applies the residual add + RMSNorm after the sum (the fused strategy);
  // null for a plain allreduce.
  void (*allreduce_residual_rmsnorm)(DType dtype, int ranks, const kernels::RankArgs& args, const void* in,
                                     const FusedNormArgs& norm, int limit, const FusedKernelOptions& options,
                                     cudaStream_t stream) = nullptr;
  // Whether `device` can run the row sync through thread-block clusters; null: never.
  bool (*runs_row_clusters)(int device) = nullptr;
};

// nullptr when no kernel is registered under the name.
const P2pAllreduceKernel* find_p2p_allreduce_kernel(std::string_view strategy);
// Adds a kernel defined outside the library (a test, a plug-in), before the first group is made;
// a repeated name is a std::logic_error.
void register_p2p_allreduce_kernel(const P2pAllreduceKernel& kernel);
// The names with a registered kernel.
std::vector<std::string> p2p_allreduce_kernel_names();

// ---------------------------------------------------------------- helpers for the launchers

constexpr std::size_t round_up(std::size_t v, std::size_t to) { return (v + to - 1) / to * to; }

// One parity slot for messages up to max_bytes, +256: room for the padding of the last 16-byte
// unit and of fused rows.
constexpr std::size_t padded_slot_bytes(std::size_t max_bytes) { return round_up(max_bytes, 256) + 256; }

inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

inline int grid_for(std::size_t work_units, int limit) {
  const std::size_t blocks = (work_units + kernels::kThreads - 1) / kernels::kThreads;
  return static_cast<int>(std::clamp<std::size_t>(blocks, 1, static_cast<std::size_t>(limit)));
}

// Launches one of our allreduce kernels, as thread-block clusters of `cluster` blocks when
// cluster > 1 (the grid is whole clusters).
template <typename... Params, typename... Args>
void launch_comm_clustered(unsigned cluster, void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t s,
                           Args&&... args) {
  cudaLaunchAttribute attrs[1]{};
  unsigned n = 0;
  if (cluster > 1) {
    attrs[n].id = cudaLaunchAttributeClusterDimension;
    attrs[n++].val.clusterDim = {cluster, 1, 1};
  }
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.stream = s;
  config.attrs = attrs;
  config.numAttrs = n;
  EAGLESIM_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

template <typename... Params, typename... Args>
void launch_comm(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t s, Args&&... args) {
  launch_comm_clustered(1, kernel, grid, block, s, std::forward<Args>(args)...);
}

// dtype x rank-count dispatch onto a launcher template: Fn<T, N>::run(args...).
template <template <typename, int> class Fn, typename... Args>
void dispatch(DType dtype, int ranks, Args&&... args) {
  auto by_ranks = [&](auto tag) {
    using T = decltype(tag);
    switch (ranks) {
      case 2: Fn<T, 2>::run(args...); return;
      case 4: Fn<T, 4>::run(args...); return;
      case 8: Fn<T, 8>::run(args...); return;
    }
    throw DeviceError("custom allreduce: unsupported rank count " + std::to_string(ranks));
  };
  switch (dtype) {
    case DType::bf16: by_ranks(__nv_bfloat16{}); return;
    case DType::fp16: by_ranks(__half{}); return;
    case DType::fp32: by_ranks(float{}); return;
    default: break;
  }
  throw DeviceError(std::string("custom allreduce: unsupported dtype ") + to_string(dtype) +
                    " (bf16, fp16 or fp32)");
}

}  // namespace eaglesim::cuda
