#pragma once
// Random fills for replay buffers (weights, KV caches, activations). Purpose: replayed ops must
// see realistic, non-zero data (zeros can run measurably faster than random data on tensor
// cores and hide unwritten outputs). A counter-based hash (splitmix64) keeps fills
// deterministic per seed without per-thread RNG state. Grid-stride loops; any size.
#include <cstdint>

#include <cuda_bf16.h>
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

__global__ void fill_bf16_kernel(__nv_bfloat16* p, std::size_t n, std::uint64_t seed, float scale) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16(scale * hash_uniform(seed, i));
}

__global__ void fill_fp8_kernel(__nv_fp8_e4m3* p, std::size_t n, std::uint64_t seed, float scale) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = __nv_fp8_e4m3(scale * hash_uniform(seed, i));
}

__global__ void fill_f32_kernel(float* p, std::size_t n, std::uint64_t seed, float scale) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = scale * hash_uniform(seed, i);
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
