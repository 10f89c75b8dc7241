#pragma once
// The replay's streaming point-wise kernels over bf16:
//   residual add:  residual[i] = residual[i] + x[i]                      (n elements, flat)
//   SiLU * mul:    out[t, h] = silu(gate_up[t, h]) * gate_up[t, W + h]   (gate_up [rows, 2W])
// Purpose: the memory-bound glue between a decoder layer's GEMMs, at the HBM rate.
// Key choices:
//   * 16-byte loads: each thread handles U vectors of 8 elements (U = 1, 2 or 4, chosen by the
//     host so the grid still has several blocks per SM: src/cuda/ops/elementwise_plan.hpp) and
//     issues all of its loads before its first arithmetic, so U x 2 loads are in flight;
//   * SiLU * mul runs on a 2D grid (x over a row's vectors, y over rows), so no element pays a
//     division or modulo to find its row; rows beyond the grid's 65535 are strided over;
//   * widths that are not a multiple of 8 (or unaligned pointers) take scalar loads: the
//     residual add its last n % 8 elements (the tail), SiLU * mul whole rows;
//   * fp32 arithmetic, one rounding to bf16 per result (silu(g) is not rounded before the
//     multiplication).
// Hardware: sm_80+ (bf16).
#include <cstddef>

#include "bf16x8.cuh"
#include "grid_dependency.cuh"

namespace eaglesim::kernels::replay {

constexpr int kPointwiseThreads = 256;
// Two resident blocks per SM at least: leaves ptxas up to 128 registers, which U = 4 needs to hold
// its 8 vectors without spilling (a bound on the threads alone let it cap itself at 64 and spill).
constexpr int kPointwiseMinBlocksPerSm = 2;

__device__ __forceinline__ float silu(float g) { return g / (1.f + __expf(-g)); }

// `vectors` 16-byte vectors of the body (0 when a pointer is not 16-byte aligned), then the
// elements [8 * vectors, n) one by one over the whole grid. Grid: vectors / (256 U), rounded up
// (at least one block).
template <int U>
__global__ void __launch_bounds__(kPointwiseThreads, kPointwiseMinBlocksPerSm)
    residual_add_kernel(bf16* __restrict__ residual, const bf16* __restrict__ x, std::size_t vectors, std::size_t n) {
  wait_for_previous_grid();  // early start: nothing is touched before the kernel ahead completes
  allow_next_grid_launch();
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x * U + threadIdx.x;
  uint4 r[U], v[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const std::size_t i = first + static_cast<std::size_t>(u) * blockDim.x;
    if (i < vectors) {
      r[u] = load_vector(residual + i * kBf16PerVector);
      v[u] = load_vector(x + i * kBf16PerVector);
    }
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const std::size_t i = first + static_cast<std::size_t>(u) * blockDim.x;
    if (i < vectors)
      store_vector(residual + i * kBf16PerVector, combine(r[u], v[u], [](float a, float b) { return a + b; }));
  }
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = vectors * kBf16PerVector + static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride)
    residual[i] = __float2bfloat16(__bfloat162float(residual[i]) + __bfloat162float(x[i]));
}

// PACKED: a unit is a 16-byte vector (width % 8 == 0, pointers aligned), else one element.
// Grid: x = a row's units / (256 U) rounded up, y = min(rows, 65535).
template <int U, bool PACKED>
__global__ void __launch_bounds__(kPointwiseThreads, kPointwiseMinBlocksPerSm)
    silu_mul_kernel(const bf16* __restrict__ gate_up, bf16* __restrict__ out, int rows, int width) {
  wait_for_previous_grid();  // early start: nothing is touched before the kernel ahead completes
  allow_next_grid_launch();
  const int units = PACKED ? width / kBf16PerVector : width;
  const int first = static_cast<int>(blockIdx.x * blockDim.x) * U + static_cast<int>(threadIdx.x);
  for (int row = blockIdx.y; row < rows; row += gridDim.y) {
    const bf16* gate = gate_up + static_cast<std::size_t>(row) * 2 * static_cast<std::size_t>(width);
    const bf16* up = gate + width;
    bf16* o = out + static_cast<std::size_t>(row) * static_cast<std::size_t>(width);
    if (PACKED) {
      uint4 g[U], p[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = first + u * static_cast<int>(blockDim.x);
        if (i < units) {
          g[u] = load_vector(gate + i * kBf16PerVector);
          p[u] = load_vector(up + i * kBf16PerVector);
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = first + u * static_cast<int>(blockDim.x);
        if (i < units)
          store_vector(o + i * kBf16PerVector, combine(g[u], p[u], [](float a, float b) { return silu(a) * b; }));
      }
    } else {
      float g[U], p[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = first + u * static_cast<int>(blockDim.x);
        if (i < units) {
          g[u] = __bfloat162float(gate[i]);
          p[u] = __bfloat162float(up[i]);
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = first + u * static_cast<int>(blockDim.x);
        if (i < units) o[i] = __float2bfloat16(silu(g[u]) * p[u]);
      }
    }
  }
}

}  // namespace eaglesim::kernels::replay
