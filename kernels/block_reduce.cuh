#pragma once
// Deterministic sums over a warp and over a thread block, for the row reductions of the RMSNorm
// kernels (the fused allreduce + RMSNorm and the replay's row norms).
// Key choice: a fixed butterfly over the warp and a fixed order over the warps, so every thread
// gets the same bits, and every rank of a fused allreduce computes the same norm.
// Hardware: any CUDA GPU.

namespace eaglesim::kernels {

// Sum over one warp; every lane gets the same bits (butterfly: each step adds two equal-group
// values, and a + b == b + a exactly).
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over the block; every thread gets the result. Deterministic (fixed shuffle tree).
__device__ __forceinline__ float block_sum(float v, float* scratch /* >= 32 floats */) {
  v = warp_sum(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // scratch may still be read from the previous row
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) / 32;
  return warp_sum(lane < warps ? scratch[lane] : 0.f);
}

}  // namespace eaglesim::kernels
