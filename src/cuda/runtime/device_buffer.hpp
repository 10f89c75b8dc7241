#pragma once
// Move-only owner of one cudaMalloc allocation: the replay's scratch, weights and KV caches, the
// custom allreduce's registered buffers, bench-comm's inputs and outputs, the self-check's data.
// Freed on the device it was allocated on, whatever device is current when its owner goes (a
// rank's buffers outlive the thread that made them in the weight arena's parking, and one host
// thread frees the buffers of every GPU in bench-comm).
#include <cstddef>

namespace eaglesim::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // `bytes` on the current device, contents undefined: the replay fills its buffers with
  // random data itself. Nothing is allocated for 0 bytes.
  explicit DeviceBuffer(std::size_t bytes);
  // `bytes` on `device`, zero-filled (synchronously) before it returns: the registered buffers
  // of the custom allreduce hold the peers' flags, which must start at 0.
  static DeviceBuffer zeroed(int device, std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t bytes() const { return bytes_; }
  int device() const { return device_; }

 private:
  void release() noexcept;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  int device_ = -1;
};

}  // namespace eaglesim::cuda
