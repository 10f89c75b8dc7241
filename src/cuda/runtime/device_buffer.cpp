#include "cuda/runtime/device_buffer.hpp"

#include <utility>

#include <cuda_runtime.h>

#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/device_guard.hpp"

namespace eaglesim::cuda {

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  EAGLESIM_CUDA_CHECK(cudaGetDevice(&device_));
  if (bytes_ > 0) EAGLESIM_CUDA_CHECK(cudaMalloc(&ptr_, bytes_));
}

DeviceBuffer DeviceBuffer::zeroed(int device, std::size_t bytes) {
  DeviceGuard guard(device);
  DeviceBuffer b;
  b.bytes_ = bytes;
  b.device_ = device;
  EAGLESIM_CUDA_CHECK(cudaMalloc(&b.ptr_, bytes));
  EAGLESIM_CUDA_CHECK(cudaMemset(b.ptr_, 0, bytes));  // on failure, `b` frees what it holds
  return b;
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), device_(o.device_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    release();
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    device_ = o.device_;
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (!ptr_) return;
  QuietDeviceGuard guard(device_);
  cudaFree(ptr_);  // no throw from a destructor; a failed free is not actionable
  ptr_ = nullptr;
}

}  // namespace eaglesim::cuda
