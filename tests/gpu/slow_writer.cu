#include "slow_writer.hpp"

#include <cuda_runtime.h>

namespace eaglesim::test {
namespace {

constexpr int kMaxSegments = 16;
struct Segments {
  CopySegment s[kMaxSegments];
  int n = 0;
};

__global__ void slow_writer_kernel(const Segments segs, unsigned long long delay_ns) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < delay_ns);
  const std::size_t tid = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (int k = 0; k < segs.n; ++k) {
    unsigned char* d = static_cast<unsigned char*>(segs.s[k].dst);
    const unsigned char* src = static_cast<const unsigned char*>(segs.s[k].src);
    for (std::size_t i = tid; i < segs.s[k].bytes; i += stride) d[i] = src[i];
  }
}

}  // namespace

int launch_slow_writer(const std::vector<CopySegment>& segments, double delay_us, CUstream_st* stream) {
  if (segments.size() > static_cast<std::size_t>(kMaxSegments)) return static_cast<int>(cudaErrorInvalidValue);
  Segments s;
  for (const auto& seg : segments) s.s[s.n++] = seg;
  slow_writer_kernel<<<8, 256, 0, stream>>>(s, static_cast<unsigned long long>(delay_us * 1e3));
  return static_cast<int>(cudaGetLastError());
}

}  // namespace eaglesim::test
