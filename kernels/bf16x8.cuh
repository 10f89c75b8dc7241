#pragma once
// Eight bf16 values in one 16-byte vector (uint4), converted to and from fp32: the unit in which
// the replay's memory-bound kernels (row_norm.cuh, pointwise_bf16.cuh) load and store, so that
// every load is one 16-byte transaction per thread and the arithmetic is fp32.
// Hardware: sm_80+ (bf16 conversions).
#include <cuda_bf16.h>

namespace eaglesim::kernels::replay {

using bf16 = __nv_bfloat16;

constexpr int kBf16PerVector = 8;

__device__ __forceinline__ void to_floats(const uint4& v, float (&f)[kBf16PerVector]) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
  for (int i = 0; i < kBf16PerVector / 2; ++i) {
    const float2 p = __bfloat1622float2(h[i]);
    f[2 * i] = p.x;
    f[2 * i + 1] = p.y;
  }
}

// Rounded to nearest even, as a bf16 store of an fp32 result is everywhere else.
__device__ __forceinline__ uint4 from_floats(const float (&f)[kBf16PerVector]) {
  uint4 v;
  __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&v);
#pragma unroll
  for (int i = 0; i < kBf16PerVector / 2; ++i) h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
  return v;
}

// f(a[j], b[j]) for the 8 element pairs of two vectors, in fp32, rounded once to bf16.
template <typename F>
__device__ __forceinline__ uint4 combine(const uint4& a, const uint4& b, F f) {
  float fa[kBf16PerVector], fb[kBf16PerVector];
  to_floats(a, fa);
  to_floats(b, fb);
#pragma unroll
  for (int j = 0; j < kBf16PerVector; ++j) fa[j] = f(fa[j], fb[j]);
  return from_floats(fa);
}

__device__ __forceinline__ uint4 load_vector(const bf16* p) { return *reinterpret_cast<const uint4*>(p); }
__device__ __forceinline__ void store_vector(bf16* p, const uint4& v) { *reinterpret_cast<uint4*>(p) = v; }

}  // namespace eaglesim::kernels::replay
