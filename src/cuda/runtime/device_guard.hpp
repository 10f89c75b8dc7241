#pragma once
// Switching the current GPU for a scope. Code that drives several GPUs from one host thread (the
// custom allreduce group's setup, bench-comm) must not leave the switch behind for its caller.
#include <cuda_runtime.h>

#include "cuda/runtime/cuda_check.hpp"

namespace eaglesim::cuda {

// Makes `device` current for the scope and restores the previous device afterwards.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    EAGLESIM_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) EAGLESIM_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

// The same for destructors and teardown paths, which must not throw: failures are ignored (a
// device that cannot be made current cannot free anything either).
class QuietDeviceGuard {
 public:
  explicit QuietDeviceGuard(int device) noexcept {
    cudaGetDevice(&previous_);
    cudaSetDevice(device);
  }
  ~QuietDeviceGuard() { cudaSetDevice(previous_); }
  QuietDeviceGuard(const QuietDeviceGuard&) = delete;
  QuietDeviceGuard& operator=(const QuietDeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace eaglesim::cuda
