#pragma once
// A cold L2 before a timed kernel (the GEMM tuner, lt_gemm.cpp): one kernel that reads a zeroed
// buffer of a given size, by default twice the current device's L2, so that what the timed
// kernel reads comes from HBM, as a replayed step's weights do, and the lines it evicts are clean
// (kernels/l2_read_flush.cuh says why reads and not a memset). Stream-ordered and capturable.
#include <cstddef>

#include <cuda_runtime.h>

#include "cuda/runtime/device_buffer.hpp"

namespace eaglesim::cuda {

// The current device's L2 cache in bytes.
std::size_t current_l2_bytes();

class L2ReadFlush {
 public:
  // Twice the current device's L2.
  L2ReadFlush();
  // `bytes` rounded up to 16 (the loads' width), on the current device.
  explicit L2ReadFlush(std::size_t bytes);

  std::size_t bytes() const { return buffer_.bytes(); }
  // Enqueues the reads; checks the launch.
  void launch(cudaStream_t stream) const;
  // The buffer and the word the kernel would store to were it to read anything but zeros (tests
  // check that both stay zero: the flush writes nothing).
  const DeviceBuffer& buffer() const { return buffer_; }
  const DeviceBuffer& sink() const { return sink_; }

 private:
  DeviceBuffer buffer_, sink_;
  unsigned grid_ = 1;
};

}  // namespace eaglesim::cuda
