#pragma once
// bf16 for the kernel emulators (tools/*_emulate.cpp): cuda_bf16.h's types and conversions as
// the kernels use them, in host C++ with the device's rounding (to nearest even; a NaN stays a
// quiet NaN), so an emulated kernel rounds exactly where the GPU does.
#include <cstdint>
#include <cstring>

struct __nv_bfloat16 {
  std::uint16_t x;
};
struct __nv_bfloat162 {
  __nv_bfloat16 x, y;
};
inline float __bfloat162float(__nv_bfloat16 b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b.x) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline __nv_bfloat16 __float2bfloat16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {0x7fc0};
  u += 0x7fffu + ((u >> 16) & 1u);
  return {static_cast<std::uint16_t>(u >> 16)};
}
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return {__float2bfloat16(a), __float2bfloat16(b)}; }
