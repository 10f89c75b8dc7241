#pragma once
// The L2 emptied of everything a timed kernel could find there, by reading a buffer larger than
// it (cuda::L2ReadFlush, for the GEMM tuner's cold-L2 timing). Reads, not writes: a flush that
// writes (a memset) leaves the L2 full of dirty lines, which the next kernel pays to write back
// to HBM while it runs; after this one every line is clean and is dropped for free.
// 16-byte loads that skip L1 (ld.global.cg: the lines land in L2, where they are wanted),
// grid-stride. The loaded words are folded into one value per thread, stored only when it
// differs from the buffer's known content (all zeros): never, but the compiler cannot know it,
// so the loads stay.
#include <cstddef>

#include <cuda_runtime.h>

namespace eaglesim::kernels::l2flush {

__global__ void read_flush_kernel(const uint4* __restrict__ buffer, std::size_t count, unsigned* sink) {
  unsigned folded = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const uint4 v = __ldcg(buffer + i);
    folded |= v.x | v.y | v.z | v.w;
  }
  if (folded != 0) *sink = folded;
}

}  // namespace eaglesim::kernels::l2flush
