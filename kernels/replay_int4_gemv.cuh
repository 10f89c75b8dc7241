#pragma once
// Weight-only int4 GEMM for few rows (m <= 16): y[m, n] = x[m, k] . dequant(W)[n, k]^T.
// Purpose: cuBLASLt has no int4 weights, and a verify step's GEMMs are pure weight streaming,
// so replaying an int4 layer means reading exactly its packed bytes. Layout (our own, close to
// group-quantised int4 checkpoints): W row n holds k/2 bytes, two weights per byte (low nibble
// first), value = (nibble - 8) * scale; one bf16 scale per group of 32 weights along k.
// Key optimisations: a warp streams ROWS weight rows with 16-byte loads (32 weights per lane
// per step, fully coalesced), so each x chunk fetched (L1-resident: x is tiny) serves ROWS
// rows; fp32 accumulation; m is a template bound so accumulators stay in registers.
// Requirements: k % 32 == 0, 16-byte aligned pointers. Hardware: sm_80+.
#include <cstdint>

#include <cuda_bf16.h>

namespace eaglesim::kernels::replay {

constexpr int kInt4Group = 32;
constexpr int kInt4WarpsPerBlock = 8;
constexpr int kInt4RowsPerWarp = 2;

template <int MT>
__global__ void __launch_bounds__(kInt4WarpsPerBlock * 32) int4_gemv_kernel(
    const __nv_bfloat16* __restrict__ x, const std::uint8_t* __restrict__ w, const __nv_bfloat16* __restrict__ scales,
    __nv_bfloat16* __restrict__ y, int m, int n, int k) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row0 = (blockIdx.x * kInt4WarpsPerBlock + warp) * kInt4RowsPerWarp;
  if (row0 >= n) return;
  const int groups = k / kInt4Group;
  float acc[kInt4RowsPerWarp][MT];
#pragma unroll
  for (int r = 0; r < kInt4RowsPerWarp; ++r)
#pragma unroll
    for (int t = 0; t < MT; ++t) acc[r][t] = 0.f;

  for (int g = lane; g < groups; g += 32) {
    float wf[kInt4RowsPerWarp][kInt4Group];
#pragma unroll
    for (int r = 0; r < kInt4RowsPerWarp; ++r) {
      const int row = min(row0 + r, n - 1);  // clamp keeps loads in bounds; result discarded
      const uint4 packed = reinterpret_cast<const uint4*>(w + static_cast<std::int64_t>(row) * (k / 2))[g];
      const float s = __bfloat162float(scales[static_cast<std::int64_t>(row) * groups + g]);
      const std::uint8_t* b = reinterpret_cast<const std::uint8_t*>(&packed);
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        wf[r][2 * j] = (static_cast<int>(b[j] & 0xF) - 8) * s;
        wf[r][2 * j + 1] = (static_cast<int>(b[j] >> 4) - 8) * s;
      }
    }
#pragma unroll
    for (int t = 0; t < MT; ++t) {
      if (t < m) {
        const uint4* xv = reinterpret_cast<const uint4*>(x + static_cast<std::int64_t>(t) * k + g * kInt4Group);
#pragma unroll
        for (int c = 0; c < kInt4Group / 8; ++c) {
          uint4 raw = xv[c];
          const __nv_bfloat162* x2 = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const float2 f = __bfloat1622float2(x2[j]);
#pragma unroll
            for (int r = 0; r < kInt4RowsPerWarp; ++r) {
              acc[r][t] = fmaf(f.x, wf[r][c * 8 + 2 * j], acc[r][t]);
              acc[r][t] = fmaf(f.y, wf[r][c * 8 + 2 * j + 1], acc[r][t]);
            }
          }
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kInt4RowsPerWarp; ++r)
#pragma unroll
    for (int t = 0; t < MT; ++t) {
      float v = acc[r][t];
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      if (lane == 0 && t < m && row0 + r < n) y[static_cast<std::int64_t>(t) * n + row0 + r] = __float2bfloat16(v);
    }
}

}  // namespace eaglesim::kernels::replay
