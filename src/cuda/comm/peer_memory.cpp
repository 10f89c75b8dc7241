#include "cuda/comm/peer_memory.hpp"

#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include <cuda_runtime.h>

#include "comm/strategy_facts.hpp"
#include "core/errors.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/device_guard.hpp"

namespace eaglesim::cuda {

void enable_peer_access(const std::vector<int>& devices) {
  // Pairs this process already enabled: enabling twice is an API error (harmless, but it shows
  // up in compute-sanitizer's report), and peer access stays on for the process's lifetime.
  static std::mutex mutex;
  static std::set<std::pair<int, int>> enabled;
  std::lock_guard<std::mutex> lock(mutex);
  for (int i : devices) {
    DeviceGuard guard(i);
    for (int j : devices) {
      if (i == j || enabled.count({i, j})) continue;
      int can = 0;
      EAGLESIM_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, i, j));
      if (!can)
        throw DeviceError("GPU " + std::to_string(i) + " cannot access GPU " + std::to_string(j) +
                          " peer-to-peer; the custom allreduce strategies need P2P (use " + nccl_strategy() + ")");
      cudaError_t rc = cudaDeviceEnablePeerAccess(j, 0);
      if (rc == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError();  // clear the sticky-free "already enabled" status
      } else {
        EAGLESIM_CUDA_CHECK(rc);
      }
      enabled.insert({i, j});
    }
  }
}

IpcHandle export_ipc_handle(const DeviceBuffer& buffer) {
  DeviceGuard guard(buffer.device());
  cudaIpcMemHandle_t h;
  EAGLESIM_CUDA_CHECK(cudaIpcGetMemHandle(&h, buffer.get()));
  IpcHandle out{};
  static_assert(sizeof(h) == sizeof(IpcHandle), "cudaIpcMemHandle_t is 64 bytes");
  std::memcpy(out.data(), &h, sizeof(h));
  return out;
}

IpcMapping::IpcMapping(int device, const IpcHandle& handle) : device_(device) {
  DeviceGuard guard(device);
  cudaIpcMemHandle_t h;
  std::memcpy(&h, handle.data(), sizeof(h));
  EAGLESIM_CUDA_CHECK(cudaIpcOpenMemHandle(&ptr_, h, cudaIpcMemLazyEnablePeerAccess));
}

IpcMapping::~IpcMapping() {
  if (!ptr_) return;
  QuietDeviceGuard guard(device_);
  cudaIpcCloseMemHandle(ptr_);
}

IpcMapping::IpcMapping(IpcMapping&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), device_(o.device_) {}

MappedHostWords::MappedHostWords(std::size_t words) : count_(words) {
  void* p = nullptr;
  EAGLESIM_CUDA_CHECK(cudaHostAlloc(&p, words * sizeof(unsigned), cudaHostAllocMapped | cudaHostAllocPortable));
  std::memset(p, 0, words * sizeof(unsigned));
  words_ = static_cast<volatile unsigned*>(p);
}

MappedHostWords::~MappedHostWords() {
  if (words_) cudaFreeHost(const_cast<unsigned*>(words_));
}

unsigned* MappedHostWords::device_ptr(std::size_t index) const {
  void* d = nullptr;
  EAGLESIM_CUDA_CHECK(cudaHostGetDevicePointer(&d, const_cast<unsigned*>(words_ + index), 0));
  return static_cast<unsigned*>(d);
}

}  // namespace eaglesim::cuda
