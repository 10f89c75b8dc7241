#include "cuda/runtime/cuda_check.hpp"

#include <fmt/format.h>

namespace eaglesim::cuda {

namespace {
std::string where(const char* file, int line) {
  std::string f = file;
  auto pos = f.find("src/");
  return fmt::format("{}:{}", pos == std::string::npos ? f : f.substr(pos), line);
}
}  // namespace

void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  throw DeviceError(fmt::format("CUDA error {} ({}) in {} at {}", cudaGetErrorName(err),
                                cudaGetErrorString(err), call, where(file, line)));
}

void throw_cublas_error(cublasStatus_t st, const char* call, const char* file, int line) {
  throw DeviceError(fmt::format("cuBLASLt error {} in {} at {}", cublasLtGetStatusName(st), call,
                                where(file, line)));
}

void throw_nccl_error(ncclResult_t res, const char* call, const char* file, int line) {
  throw DeviceError(fmt::format("NCCL error {} ({}) in {} at {}", static_cast<int>(res),
                                ncclGetErrorString(res), call, where(file, line)));
}

}  // namespace eaglesim::cuda
