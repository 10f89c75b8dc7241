#pragma once
// Random fills for device buffers: the replay's weights, KV caches and activations, and
// bench-comm's inputs. Purpose: replayed ops must see realistic, non-zero data (zeros can run
// measurably faster than random data on tensor cores and hide unwritten outputs), and an
// allreduce checked against a host reference must sum values that are not all alike. A
// counter-based hash (splitmix64) keeps fills deterministic per seed without per-thread RNG
// state. Grid-stride loops; any size.
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace eaglesim::kernels::replay {

__device__ __forceinline__ std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1).
__device__ __forceinline__ float hash_uniform(std::uint64_t seed, std::uint64_t i) {
  std::uint32_t bits = static_cast<std::uint32_t>(splitmix64(seed ^ (i * 0xD1B54A32D192ED03ull)) >> 40);
  return static_cast<float>(bits) * (2.0f / 16777216.0f) - 1.0f;
}

// A float rounded to the element type (round to nearest; fp8 saturates to its finite range).
template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half(v); }
template <>
__device__ __forceinline__ __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float v) { return __nv_fp8_e4m3(v); }
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }

// Uniform values in [-scale, scale) of element type T.
template <typename T>
__global__ void fill_uniform_kernel(T* p, std::size_t n, std::uint64_t seed, float scale) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = from_float<T>(scale * hash_uniform(seed, i));
}

// Raw random bytes (packed int4 weights: every nibble pattern is a valid value).
__global__ void fill_bytes_kernel(std::uint8_t* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<std::uint8_t>(splitmix64(seed ^ (i * 0xD1B54A32D192ED03ull)) >> 56);
}

// Token ids in [0, rows) for the embedding gather.
__global__ void fill_ids_kernel(int* p, std::size_t n, std::uint64_t seed, int rows) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<int>(splitmix64(seed ^ i) % static_cast<std::uint64_t>(rows));
}

}  // namespace eaglesim::kernels::replay
