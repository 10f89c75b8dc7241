#pragma once
// Move-only owner of one cudaMalloc allocation on the current device (replay scratch, weights).
#include <cstddef>
#include <utility>

#include <cuda_runtime.h>

#include "cuda/cuda_check.hpp"

namespace eaglesim::cuda {

class ReplayBuffer {
 public:
  ReplayBuffer() = default;
  explicit ReplayBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0) EAGLESIM_CUDA_CHECK(cudaMalloc(&ptr_, bytes_));
  }
  ~ReplayBuffer() {
    if (ptr_) cudaFree(ptr_);  // no throw from a destructor; a failed free is not actionable
  }
  ReplayBuffer(const ReplayBuffer&) = delete;
  ReplayBuffer& operator=(const ReplayBuffer&) = delete;
  ReplayBuffer(ReplayBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  ReplayBuffer& operator=(ReplayBuffer&& o) noexcept {
    if (this != &o) {
      if (ptr_) cudaFree(ptr_);
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const { return static_cast<T*>(ptr_); }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace eaglesim::cuda
