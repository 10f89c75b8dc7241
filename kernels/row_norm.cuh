#pragma once
// RMSNorm over token rows, alone or fused with the residual add before it:
//   rmsnorm:      out[t, :] = x[t, :] * rsqrt(mean(x[t, :]^2) + eps) * w
//   add_rmsnorm:  residual[t, :] = x[t, :] + residual[t, :]       (rounded to bf16, written back)
//                 out[t, :]      = rmsnorm(residual[t, :]) * w     (of the rounded sum)
// add_rmsnorm is SGLang's and vLLM's fused_add_rmsnorm: what a decoder layer does after its
// attention and its MLP, as one kernel instead of a residual add and an RMSNorm (the sum is
// normalised from registers instead of being written and read back).
// Key choices:
//   * every element is read once and written once: a thread holds its part of the row in
//     registers (V units of 8 bf16, V = 1, 2 or 4) across the row's reduction, so the
//     normalisation does not re-read the row; the host picks V and the block size from the
//     width (src/cuda/ops/elementwise_plan.hpp), as few vectors per thread as 1024 threads allow;
//   * rows of at most 128 units go one per warp (shuffle reduction only, no __syncthreads),
//     wider rows one per block, so both many narrow rows and a few wide rows fill the GPU;
//   * 16-byte loads when the width is a multiple of 8 and every pointer is 16-byte aligned,
//     otherwise coalesced scalar loads into the same register layout (odd widths are correct);
//   * the weight's loads are issued with the row's, before the reduction, where registers
//     allow it (V <= 2), so one memory latency covers every read of the row;
//   * fp32 arithmetic; the norm of add_rmsnorm uses the residual rounded to bf16, as the
//     unfused residual add -> rmsnorm sequence and the fused allreduce kernel do.
// `out` may be `x` (each thread reads its elements before it writes them); no pointer is
// __restrict__ for that reason.
// Hardware: sm_80+ (bf16).
#include <cstddef>

#include "bf16x8.cuh"
#include "grid_dependency.cuh"
#include "block_reduce.cuh"

namespace eaglesim::kernels::replay {

// Threads per block at most (the block-per-row variant of a 32768-wide row, V = 4), and of the
// one-warp-per-row variant (4 rows per block). Separate launch bounds, so that the one-warp rows
// are not held to the 64 registers a 1024-thread block leaves each thread.
constexpr int kRowNormMaxThreads = 1024;
constexpr int kRowNormWarpRowsThreads = 128;

struct RowNormArgs {
  const bf16* x = nullptr;
  bf16* residual = nullptr;  // add_rmsnorm: read, and written with x + residual; rmsnorm: unused
  const bf16* weight = nullptr;
  bf16* out = nullptr;
  int rows = 0;
  int hidden = 0;
  float eps = 1e-5f;
};

// One thread's part of a row: V units of 8 elements, zero beyond the row's end. PACKED: unit k
// is the 16-byte vector `lane + k * lanes` (8 consecutive elements); otherwise element j of unit
// k is element `lane + (8k + j) * lanes`, so that a warp's scalar loads are coalesced too.
template <int V, bool PACKED>
struct RowSlice {
  uint4 u[V];

  // Element `at` of the row (0 beyond its end) as bf16 bits, and back: the scalar path packs
  // pairs into 32-bit words with shifts, so the slice stays in registers (a bf16 pointer into a
  // uint4 would put it on the stack).
  __device__ __forceinline__ static unsigned bits(const bf16* row, int at, int hidden) {
    return at < hidden ? static_cast<unsigned>(__bfloat16_as_ushort(row[at])) : 0u;
  }
  __device__ __forceinline__ static unsigned& word(uint4& v, int p) {
    return p == 0 ? v.x : p == 1 ? v.y : p == 2 ? v.z : v.w;
  }
  __device__ __forceinline__ static unsigned word(const uint4& v, int p) {
    return p == 0 ? v.x : p == 1 ? v.y : p == 2 ? v.z : v.w;
  }
  __device__ __forceinline__ static int scalar_at(int lane, int lanes, int k, int j) {
    return lane + (k * kBf16PerVector + j) * lanes;
  }

  __device__ __forceinline__ uint4 load_unit(const bf16* row, int hidden, int lane, int lanes, int k) const {
    if constexpr (PACKED) {
      const int at = (lane + k * lanes) * kBf16PerVector;
      return at < hidden ? load_vector(row + at) : make_uint4(0, 0, 0, 0);
    } else {
      uint4 v;
#pragma unroll
      for (int p = 0; p < kBf16PerVector / 2; ++p)
        word(v, p) = bits(row, scalar_at(lane, lanes, k, 2 * p), hidden) |
                     (bits(row, scalar_at(lane, lanes, k, 2 * p + 1), hidden) << 16);
      return v;
    }
  }

  __device__ __forceinline__ void load(const bf16* row, int hidden, int lane, int lanes) {
#pragma unroll
    for (int k = 0; k < V; ++k) u[k] = load_unit(row, hidden, lane, lanes, k);
  }

  __device__ __forceinline__ void store(bf16* row, int hidden, int lane, int lanes) const {
#pragma unroll
    for (int k = 0; k < V; ++k) {
      if constexpr (PACKED) {
        const int at = (lane + k * lanes) * kBf16PerVector;
        if (at < hidden) store_vector(row + at, u[k]);
      } else {
#pragma unroll
        for (int j = 0; j < kBf16PerVector; ++j) {
          const int at = scalar_at(lane, lanes, k, j);
          if (at < hidden)
            row[at] = __ushort_as_bfloat16(static_cast<unsigned short>(word(u[k], j / 2) >> (16 * (j % 2))));
        }
      }
    }
  }
};

// ADD: add_rmsnorm, else rmsnorm. WARP_ROWS: one row per warp (blockDim.x / 32 rows per block),
// else one row per block. Grid: rows (WARP_ROWS: rows / (blockDim.x / 32), rounded up).
template <int V, bool ADD, bool PACKED, bool WARP_ROWS>
__global__ void __launch_bounds__(WARP_ROWS ? kRowNormWarpRowsThreads : kRowNormMaxThreads)
    row_norm_kernel(RowNormArgs a) {
  __shared__ float scratch[32];
  const int lanes = WARP_ROWS ? 32 : static_cast<int>(blockDim.x);
  const int lane = WARP_ROWS ? static_cast<int>(threadIdx.x % 32) : static_cast<int>(threadIdx.x);
  const int row = WARP_ROWS ? static_cast<int>(blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32)
                            : static_cast<int>(blockIdx.x);
  if (WARP_ROWS && row >= a.rows) return;  // the whole warp: no block-wide barrier on this path
  const std::size_t offset = static_cast<std::size_t>(row) * static_cast<std::size_t>(a.hidden);
  constexpr bool kEarlyWeight = V <= 2;

  RowSlice<V, PACKED> v, w;
  // The norm's weight is no kernel's output in a step: it loads before the wait for the kernel
  // ahead (early start, cuda/ops/replay_kernels.hpp); x and the residual after it.
  if (kEarlyWeight) w.load(a.weight, a.hidden, lane, lanes);
  wait_for_previous_grid();
  allow_next_grid_launch();
  v.load(a.x + offset, a.hidden, lane, lanes);
  if (ADD) {
    // Unit by unit, so that the residual's slice need not be live next to x's all at once.
    const bf16* res = a.residual + offset;
#pragma unroll
    for (int k = 0; k < V; ++k)
      v.u[k] = combine(v.u[k], v.load_unit(res, a.hidden, lane, lanes, k), [](float x, float y) { return x + y; });
    v.store(a.residual + offset, a.hidden, lane, lanes);
  }

  float ss = 0.f;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    float f[kBf16PerVector];
    to_floats(v.u[k], f);
#pragma unroll
    for (int j = 0; j < kBf16PerVector; ++j) ss += f[j] * f[j];
  }
  ss = WARP_ROWS ? warp_sum(ss) : block_sum(ss, scratch);
  const float inv_rms = rsqrtf(ss / static_cast<float>(a.hidden) + a.eps);

  if (!kEarlyWeight) w.load(a.weight, a.hidden, lane, lanes);
#pragma unroll
  for (int k = 0; k < V; ++k)
    v.u[k] = combine(v.u[k], w.u[k], [inv_rms](float x, float weight) { return x * inv_rms * weight; });
  v.store(a.out + offset, a.hidden, lane, lanes);
}

}  // namespace eaglesim::kernels::replay
