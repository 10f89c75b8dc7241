#pragma once
// CUDA / NCCL return-code checks for the custom allreduce code: every failure becomes a
// DeviceError naming the call, so the CLI exits 3 with a message instead of crashing.
#include <string>

#include <cuda_runtime.h>
#include <nccl.h>

#include "core/errors.hpp"

namespace eaglesim::cuda {

inline void check_cuda(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess)
    throw DeviceError(std::string(what) + ": " + cudaGetErrorName(rc) + " (" + cudaGetErrorString(rc) + ")");
}

inline void check_nccl(ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess) throw DeviceError(std::string(what) + ": " + ncclGetErrorString(rc));
}

// Makes `device` current for the scope and restores the previous device afterwards.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) check_cuda(cudaSetDevice(device), "cudaSetDevice");
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace eaglesim::cuda
