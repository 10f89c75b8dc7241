#pragma once
// Every CUDA runtime, cuBLASLt and NCCL call is checked: a failure becomes a DeviceError
// (exit 3) naming the call, the file and line, and the library's own error string.
#include <string>

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include "core/errors.hpp"

namespace eaglesim::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t st, const char* call, const char* file, int line);
[[noreturn]] void throw_nccl_error(ncclResult_t res, const char* call, const char* file, int line);

}  // namespace eaglesim::cuda

#define EAGLESIM_CUDA_CHECK(call)                                                        \
  do {                                                                                   \
    cudaError_t eaglesim_err_ = (call);                                                  \
    if (eaglesim_err_ != cudaSuccess)                                                    \
      ::eaglesim::cuda::throw_cuda_error(eaglesim_err_, #call, __FILE__, __LINE__);      \
  } while (0)

// After a kernel launch: catches bad launch configurations at the launch site.
#define EAGLESIM_CUDA_CHECK_LAUNCH() EAGLESIM_CUDA_CHECK(cudaGetLastError())

#define EAGLESIM_CUBLAS_CHECK(call)                                                      \
  do {                                                                                   \
    cublasStatus_t eaglesim_st_ = (call);                                                \
    if (eaglesim_st_ != CUBLAS_STATUS_SUCCESS)                                           \
      ::eaglesim::cuda::throw_cublas_error(eaglesim_st_, #call, __FILE__, __LINE__);     \
  } while (0)

#define EAGLESIM_NCCL_CHECK(call)                                                        \
  do {                                                                                   \
    ncclResult_t eaglesim_res_ = (call);                                                 \
    if (eaglesim_res_ != ncclSuccess && eaglesim_res_ != ncclInProgress)                 \
      ::eaglesim::cuda::throw_nccl_error(eaglesim_res_, #call, __FILE__, __LINE__);      \
  } while (0)
