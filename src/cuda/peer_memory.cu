#include "cuda/peer_memory.hpp"

#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include <cuda_runtime.h>

#include "cuda/custom_check.hpp"

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
      check_cuda(cudaDeviceCanAccessPeer(&can, i, j), "cudaDeviceCanAccessPeer");
      if (!can)
        throw DeviceError("GPU " + std::to_string(i) + " cannot access GPU " + std::to_string(j) +
                          " peer-to-peer; the custom allreduce strategies need P2P (use nccl)");
      cudaError_t rc = cudaDeviceEnablePeerAccess(j, 0);
      if (rc == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError();  // clear the sticky-free "already enabled" status
      } else {
        check_cuda(rc, "cudaDeviceEnablePeerAccess");
      }
      enabled.insert({i, j});
    }
  }
}

DeviceBuffer::DeviceBuffer(int device, std::size_t bytes) : bytes_(bytes), device_(device) {
  DeviceGuard guard(device);
  check_cuda(cudaMalloc(&ptr_, bytes), "cudaMalloc (registered allreduce buffer)");
  cudaError_t rc = cudaMemset(ptr_, 0, bytes);
  if (rc != cudaSuccess) release();
  check_cuda(rc, "cudaMemset");
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(o.bytes_), device_(o.device_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    release();
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = o.bytes_;
    device_ = o.device_;
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (!ptr_) return;
  int previous = 0;
  cudaGetDevice(&previous);
  cudaSetDevice(device_);
  cudaFree(ptr_);
  cudaSetDevice(previous);
  ptr_ = nullptr;
}

IpcHandle export_ipc_handle(const DeviceBuffer& buffer) {
  DeviceGuard guard(buffer.device());
  cudaIpcMemHandle_t h;
  check_cuda(cudaIpcGetMemHandle(&h, buffer.get()), "cudaIpcGetMemHandle");
  IpcHandle out{};
  static_assert(sizeof(h) == sizeof(IpcHandle), "cudaIpcMemHandle_t is 64 bytes");
  std::memcpy(out.data(), &h, sizeof(h));
  return out;
}

IpcMapping::IpcMapping(int device, const IpcHandle& handle) : device_(device) {
  DeviceGuard guard(device);
  cudaIpcMemHandle_t h;
  std::memcpy(&h, handle.data(), sizeof(h));
  check_cuda(cudaIpcOpenMemHandle(&ptr_, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
}

IpcMapping::~IpcMapping() {
  if (!ptr_) return;
  int previous = 0;
  cudaGetDevice(&previous);
  cudaSetDevice(device_);
  cudaIpcCloseMemHandle(ptr_);
  cudaSetDevice(previous);
}

IpcMapping::IpcMapping(IpcMapping&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), device_(o.device_) {}

MappedHostWords::MappedHostWords(std::size_t words) : count_(words) {
  void* p = nullptr;
  check_cuda(cudaHostAlloc(&p, words * sizeof(unsigned), cudaHostAllocMapped | cudaHostAllocPortable),
             "cudaHostAlloc (mapped abort/error words)");
  std::memset(p, 0, words * sizeof(unsigned));
  words_ = static_cast<volatile unsigned*>(p);
}

MappedHostWords::~MappedHostWords() {
  if (words_) cudaFreeHost(const_cast<unsigned*>(words_));
}

unsigned* MappedHostWords::device_ptr(std::size_t index) const {
  void* d = nullptr;
  check_cuda(cudaHostGetDevicePointer(&d, const_cast<unsigned*>(words_ + index), 0), "cudaHostGetDevicePointer");
  return static_cast<unsigned*>(d);
}

}  // namespace eaglesim::cuda
