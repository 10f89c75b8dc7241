#pragma once
// Device memory that other GPUs can address, in the two modes the custom allreduce supports:
//  * threads mode (one process, one thread per GPU): enable_peer_access() between every pair,
//    then a plain DeviceBuffer's pointer is valid on every peer (unified addressing);
//  * processes mode (one process per GPU, e.g. MPI): the owner exports an IpcHandle of its
//    DeviceBuffer, ships the 64 bytes to the peers (over MPI or a file), and each peer maps it
//    with IpcMapping, which closes the mapping on destruction (move-only: no leaked mapping on an
//    exception during group setup).
#include <array>
#include <cstddef>
#include <vector>

#include "cuda/runtime/device_buffer.hpp"

namespace eaglesim::cuda {

// Throws DeviceError naming the pair when some GPU cannot access another one (no P2P).
void enable_peer_access(const std::vector<int>& devices);

// The opaque cudaIpcMemHandle_t bytes, so that host code can ship them without CUDA headers.
using IpcHandle = std::array<char, 64>;

IpcHandle export_ipc_handle(const DeviceBuffer& buffer);

// A peer's buffer mapped into this process on `device`.
class IpcMapping {
 public:
  IpcMapping(int device, const IpcHandle& handle);
  ~IpcMapping();
  IpcMapping(IpcMapping&& o) noexcept;
  IpcMapping& operator=(IpcMapping&&) = delete;
  IpcMapping(const IpcMapping&) = delete;
  IpcMapping& operator=(const IpcMapping&) = delete;
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
  int device_ = -1;
};

// Host memory visible to every GPU (pinned, mapped, portable): the abort word and the per-rank
// error codes, which the host must read or write while kernels are still running.
class MappedHostWords {
 public:
  explicit MappedHostWords(std::size_t words);
  ~MappedHostWords();
  MappedHostWords(const MappedHostWords&) = delete;
  MappedHostWords& operator=(const MappedHostWords&) = delete;
  volatile unsigned* host() const { return words_; }
  unsigned* device_ptr(std::size_t index) const;  // same address under unified addressing

 private:
  volatile unsigned* words_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace eaglesim::cuda
