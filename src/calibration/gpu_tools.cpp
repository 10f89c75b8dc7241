#include "calibration/gpu_tools.hpp"

#include <mutex>
#include <utility>

#include "core/cuda_part_loader.hpp"
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
CalibrateImpl& calibrate_impl() {
  static CalibrateImpl impl;
  return impl;
}

CalibrateImpl registered_calibrate_impl() {
  std::lock_guard<std::mutex> lock(impl_mutex());
  return calibrate_impl();
}

// The implementation registered, loading the CUDA part first when none is (the module registers it).
CalibrateImpl current_calibrate_impl() {
  CalibrateImpl impl = registered_calibrate_impl();
  if (impl.inventory && impl.measure) return impl;
  const CudaPartLoad& part = load_cuda_part();
  impl = registered_calibrate_impl();
  if (!impl.inventory || !impl.measure)
    throw DeviceError("calibrate: " + part.why + "; calibration measures real GPUs");
  return impl;
}
}  // namespace

void set_calibrate_impl(CalibrateImpl impl) {
  std::lock_guard<std::mutex> lock(impl_mutex());
  calibrate_impl() = std::move(impl);
}

GpuInventory run_gpu_inventory() { return current_calibrate_impl().inventory(); }

CalibrationMeasurements run_calibrate(const CalibrationRequest& request) {
  return current_calibrate_impl().measure(request);
}

void set_comm_bench_impl(CommBenchImpl impl) {
  std::lock_guard<std::mutex> lock(impl_mutex());
  comm_bench_impl() = std::move(impl);
}

CommBenchResult run_comm_bench(const CommBenchRequest& request) {
  auto registered = [] {
    std::lock_guard<std::mutex> lock(impl_mutex());
    return comm_bench_impl();
  };
  CommBenchImpl impl = registered();
  if (!impl) {
    const CudaPartLoad& part = load_cuda_part();
    impl = registered();
    if (!impl) throw DeviceError("bench-comm: " + part.why);
  }
  return impl(request);
}

}  // namespace eaglesim
