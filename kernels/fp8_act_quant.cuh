#pragma once
// The activation quantisation before a W8A8 fp8 GEMM: bf16 [rows][k] -> e4m3 [rows_padded][k]
// plus fp32 scales, per token, per 1 x 128 group, or with one given scale (fp8_quant_layout.cuh
// has the rule and the scale layouts). Engines run this as its own kernel before every fp8 linear
// layer (SGLang's per_token_group_quant_fp8 for block-quantised checkpoints, vLLM's dynamic
// per-token scaled_fp8_quant for per-channel ones); the replay runs it where their traces list
// `act_quant_fp8`, so it pays what they pay.
//
// Per-group kernel: 16 lanes per group, 8 values (one 16-byte load) per lane, the group's amax
// over the 16 lanes by shuffles; grid (rows_padded, groups / 16). At the few rows of a verify
// step every row's groups are spread over several CTAs, so one row does not wait on one SM.
// Per-token (and static) kernel: one CTA per row, the amax over the row by a warp and a block
// reduction, then a second pass over the row (an L1/L2 hit) to quantise it.
// Rows past `rows` (the padding a per-group-scaled GEMM needs) are written as zeros with scale 1.
// Both start early under programmatic dependent launch and read nothing before the previous grid
// is done. Requirements: k % 8 == 0, x 16-byte and q 8-byte aligned (the launcher checks).
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "fp8_quant_layout.cuh"
#include "grid_dependency.cuh"

namespace eaglesim::kernels::fp8 {

constexpr int kQuantThreads = 256;
constexpr int kLanesPerGroup = kGroupK / 8;                      // 16 lanes x 8 values
constexpr int kGroupsPerCta = kQuantThreads / kLanesPerGroup;    // 16

struct QuantParams {
  const __nv_bfloat16* x = nullptr;  // [rows][k]
  std::uint8_t* q = nullptr;         // e4m3 [rows_padded][k]
  float* scales = nullptr;           // written (per-token, per-group); read (static: one float)
  int rows = 0, rows_padded = 0, k = 0;
};

// Eight consecutive bf16 values as floats (one 16-byte load).
__device__ __forceinline__ void load8(const __nv_bfloat16* p, float (&v)[8]) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const auto* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(h[i]);
    v[2 * i] = f.x;
    v[2 * i + 1] = f.y;
  }
}

// v * inv to e4m3 (round to nearest even, saturated to the finite range), one 8-byte store. The
// pair conversion puts its first value in the low byte, so bytes keep the values' order.
__device__ __forceinline__ void store8(std::uint8_t* p, const float (&v)[8], float inv) {
  std::uint32_t word[2];
#pragma unroll
  for (int w = 0; w < 2; ++w) {
    const __nv_fp8x2_storage_t lo =
        __nv_cvt_float2_to_fp8x2(make_float2(v[4 * w] * inv, v[4 * w + 1] * inv), __NV_SATFINITE, __NV_E4M3);
    const __nv_fp8x2_storage_t hi =
        __nv_cvt_float2_to_fp8x2(make_float2(v[4 * w + 2] * inv, v[4 * w + 3] * inv), __NV_SATFINITE, __NV_E4M3);
    word[w] = static_cast<std::uint32_t>(lo) | (static_cast<std::uint32_t>(hi) << 16);
  }
  *reinterpret_cast<uint2*>(p) = make_uint2(word[0], word[1]);
}

__device__ __forceinline__ float abs_max8(const float (&v)[8], float m) {
#pragma unroll
  for (int i = 0; i < 8; ++i) m = fmaxf(m, fabsf(v[i]));
  return m;
}

// grid (rows_padded, ceil(groups / kGroupsPerCta)), kQuantThreads threads.
__global__ void __launch_bounds__(kQuantThreads) quant_per_group_kernel(QuantParams p) {
  const int row = static_cast<int>(blockIdx.x);
  const int lane = static_cast<int>(threadIdx.x) % kLanesPerGroup;
  const int group = static_cast<int>(blockIdx.y) * kGroupsPerCta + static_cast<int>(threadIdx.x) / kLanesPerGroup;
  const int col = group * kGroupK + lane * 8;
  const bool live = row < p.rows && col < p.k;
  float v[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  wait_for_previous_grid();
  if (live) load8(p.x + static_cast<std::size_t>(row) * p.k + col, v);
  allow_next_grid_launch();
  // Every lane of the warp takes part in the shuffles (a lane past k or past the groups brings 0).
  float amax = abs_max8(v, 0.f);
#pragma unroll
  for (int o = kLanesPerGroup / 2; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  if (group >= groups_along_k(p.k)) return;
  const float scale = row < p.rows ? scale_from_amax(amax) : 1.0f;
  const float inv = 1.0f / scale;
  if (lane == 0) p.scales[group_scale_index(row, group, p.rows_padded)] = scale;
  if (col < p.k) store8(p.q + static_cast<std::size_t>(row) * p.k + col, v, inv);
}

// grid (rows), kQuantThreads threads. STATIC: the scale is p.scales[0], given.
template <bool STATIC>
__global__ void __launch_bounds__(kQuantThreads) quant_per_row_kernel(QuantParams p) {
  __shared__ float warp_max[kQuantThreads / 32];
  const int row = static_cast<int>(blockIdx.x);
  const __nv_bfloat16* xr = p.x + static_cast<std::size_t>(row) * p.k;
  std::uint8_t* qr = p.q + static_cast<std::size_t>(row) * p.k;
  const int vectors = p.k / 8;
  wait_for_previous_grid();
  float scale = 1.0f;
  if (STATIC) {
    scale = p.scales[0];
  } else {
    float amax = 0.f;
    for (int i = static_cast<int>(threadIdx.x); i < vectors; i += kQuantThreads) {
      float v[8];
      load8(xr + 8 * i, v);
      amax = abs_max8(v, amax);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = amax;
    __syncthreads();
    amax = 0.f;
#pragma unroll
    for (int w = 0; w < kQuantThreads / 32; ++w) amax = fmaxf(amax, warp_max[w]);
    scale = scale_from_amax(amax);
    if (threadIdx.x == 0) p.scales[row] = scale;
  }
  allow_next_grid_launch();
  const float inv = 1.0f / scale;
  for (int i = static_cast<int>(threadIdx.x); i < vectors; i += kQuantThreads) {
    float v[8];
    load8(xr + 8 * i, v);
    store8(qr + 8 * i, v, inv);
  }
}

}  // namespace eaglesim::kernels::fp8
