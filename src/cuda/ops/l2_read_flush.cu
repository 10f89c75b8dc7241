#include "cuda/ops/l2_read_flush.hpp"

#include <algorithm>

#include "cuda/runtime/cuda_check.hpp"
#include "l2_read_flush.cuh"

namespace eaglesim::cuda {

namespace k = eaglesim::kernels::l2flush;

namespace {
constexpr unsigned kBlock = 256;
// Blocks per SM: enough loads in flight to hold HBM's bandwidth.
constexpr int kBlocksPerSm = 8;
}  // namespace

std::size_t current_l2_bytes() {
  int device = 0, l2 = 0;
  EAGLESIM_CUDA_CHECK(cudaGetDevice(&device));
  EAGLESIM_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  return static_cast<std::size_t>(std::max(l2, 1 << 20));
}

L2ReadFlush::L2ReadFlush() : L2ReadFlush(2 * current_l2_bytes()) {}

L2ReadFlush::L2ReadFlush(std::size_t bytes) {
  int device = 0, sms = 0;
  EAGLESIM_CUDA_CHECK(cudaGetDevice(&device));
  EAGLESIM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::size_t words = (std::max<std::size_t>(bytes, 16) + 15) / 16;
  buffer_ = DeviceBuffer::zeroed(device, words * 16);
  sink_ = DeviceBuffer::zeroed(device, sizeof(unsigned));
  grid_ = static_cast<unsigned>(
      std::max<std::size_t>(1, std::min<std::size_t>((words + kBlock - 1) / kBlock, std::size_t(kBlocksPerSm) * sms)));
}

void L2ReadFlush::launch(cudaStream_t stream) const {
  k::read_flush_kernel<<<grid_, kBlock, 0, stream>>>(buffer_.as<uint4>(), buffer_.bytes() / 16, sink_.as<unsigned>());
  EAGLESIM_CUDA_CHECK_LAUNCH();
}

}  // namespace eaglesim::cuda
