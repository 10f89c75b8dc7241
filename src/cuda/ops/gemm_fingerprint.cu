#include "cuda/ops/gemm_fingerprint.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <cuda_bf16.h>
#include <fmt/format.h>

#include "cuda/runtime/cuda_check.hpp"

namespace eaglesim::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kValues = 5;  // the four projections, then the sum of squares
// Rounding moves a projection by ~0.003 of the output's norm (one standard deviation, bf16 output,
// an fp32 or bf16 split-K reduction); these bounds are many deviations away from that and far
// below what a wrong product moves them by.
constexpr double kProjectionTolerance = 0.05;  // of the reference's norm
constexpr double kSumSquaresTolerance = 0.02;  // of the reference's sum of squares

// A 64-bit mix of the element index: its low four bits are the element's signs in the four projections.
__device__ __forceinline__ std::uint64_t mix(std::uint64_t i) {
  i ^= i >> 33;
  i *= 0xff51afd7ed558ccdULL;
  i ^= i >> 33;
  i *= 0xc4ceb9fe1a85ec53ULL;
  i ^= i >> 33;
  return i;
}

__global__ void fingerprint_kernel(const __nv_bfloat16* __restrict__ y, std::size_t n, double* __restrict__ out) {
  double acc[kValues] = {0, 0, 0, 0, 0};
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const double v = __bfloat162float(y[i]);
    const std::uint64_t h = mix(i);
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[j] += (h >> j & 1) ? v : -v;
    acc[4] += v * v;
  }
#pragma unroll
  for (int j = 0; j < kValues; ++j)
    for (int offset = 16; offset > 0; offset >>= 1) acc[j] += __shfl_down_sync(0xffffffffu, acc[j], offset);
  __shared__ double warp_sums[kThreads / 32][kValues];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0)
    for (int j = 0; j < kValues; ++j) warp_sums[warp][j] = acc[j];
  __syncthreads();
  if (threadIdx.x < kValues) {
    double s = 0;
    for (int w = 0; w < kThreads / 32; ++w) s += warp_sums[w][threadIdx.x];
    atomicAdd(out + threadIdx.x, s);
  }
}

}  // namespace

GemmFingerprint fingerprint_bf16(const void* y, std::size_t count, double* scratch, cudaStream_t stream) {
  EAGLESIM_CUDA_CHECK(cudaMemsetAsync(scratch, 0, kValues * sizeof(double), stream));
  if (count > 0) {
    const std::size_t blocks = std::min<std::size_t>((count + kThreads - 1) / kThreads, 1024);
    fingerprint_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        static_cast<const __nv_bfloat16*>(y), count, scratch);
    EAGLESIM_CUDA_CHECK_LAUNCH();
  }
  double host[kValues];
  EAGLESIM_CUDA_CHECK(cudaMemcpyAsync(host, scratch, sizeof(host), cudaMemcpyDeviceToHost, stream));
  EAGLESIM_CUDA_CHECK(cudaStreamSynchronize(stream));
  GemmFingerprint f;
  for (int j = 0; j < 4; ++j) f.projection[j] = host[j];
  f.sum_squares = host[4];
  return f;
}

std::string fingerprint_mismatch(const GemmFingerprint& got, const GemmFingerprint& reference) {
  if (!std::isfinite(got.sum_squares)) return "output not finite";
  const double tiny = 1e-30;
  if (std::abs(got.sum_squares - reference.sum_squares) > kSumSquaresTolerance * reference.sum_squares + tiny)
    return fmt::format("sum of squares {:.6g}, the reference's {:.6g}", got.sum_squares, reference.sum_squares);
  const double norm = std::sqrt(reference.sum_squares);
  for (int j = 0; j < 4; ++j) {
    const double off = std::abs(got.projection[j] - reference.projection[j]);
    if (off > kProjectionTolerance * norm + tiny)
      return fmt::format("projection {} off by {:.3g} of the output's norm", j, off / std::max(norm, tiny));
  }
  return {};
}

}  // namespace eaglesim::cuda
