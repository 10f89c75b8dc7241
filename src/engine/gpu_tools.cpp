#include "engine/gpu_tools.hpp"

#include <mutex>
#include <utility>

#include "core/errors.hpp"

namespace eaglesim {

namespace {
std::mutex& impl_mutex() {
  static std::mutex m;
  return m;
}
CommBenchImpl& comm_bench_impl() {
  static CommBenchImpl impl;
  return impl;
}
}  // namespace

void set_comm_bench_impl(CommBenchImpl impl) {
  std::lock_guard<std::mutex> lock(impl_mutex());
  comm_bench_impl() = std::move(impl);
}

bool has_comm_bench_impl() {
  std::lock_guard<std::mutex> lock(impl_mutex());
  return static_cast<bool>(comm_bench_impl());
}

CommBenchResult run_comm_bench(const CommBenchRequest& request) {
  CommBenchImpl impl;
  {
    std::lock_guard<std::mutex> lock(impl_mutex());
    impl = comm_bench_impl();
  }
  if (!impl)
    throw DeviceError("bench-comm: this eaglesim was built without the CUDA part (configure with "
                      "-DEAGLESIM_CUDA=ON on a machine with the CUDA toolkit and NCCL)");
  return impl(request);
}

}  // namespace eaglesim
