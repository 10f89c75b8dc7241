#pragma once
// A move-only owner of one CUDA or CUDA-library handle (a stream, an event, an instantiated
// graph, a cuBLAS handle), released with `Release` when its owner goes, on any path out. The
// status `Release` returns is ignored: a destructor does not throw, and a handle that cannot be
// released is not actionable.
#include <utility>

namespace eaglesim::cuda {

template <typename Handle, auto Release>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  ~UniqueHandle() { reset(); }
  UniqueHandle(UniqueHandle&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
  UniqueHandle& operator=(UniqueHandle&& o) noexcept {
    if (this != &o) {
      reset();
      handle_ = std::exchange(o.handle_, nullptr);
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;

  Handle get() const { return handle_; }
  // Where a create call writes the new handle (whatever was held is released first).
  Handle* out() {
    reset();
    return &handle_;
  }
  void reset() {
    if (handle_) (void)Release(handle_);
    handle_ = nullptr;
  }

 private:
  Handle handle_ = nullptr;
};

}  // namespace eaglesim::cuda
