#include "calibration/gpu_tools.hpp"

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
CalibrateImpl& calibrate_impl() {
  static CalibrateImpl impl;
  return impl;
}

CalibrateImpl current_calibrate_impl() {
  std::lock_guard<std::mutex> lock(impl_mutex());
  CalibrateImpl impl = calibrate_impl();
  if (!impl.inventory || !impl.measure)
    throw DeviceError("calibrate: this eaglesim was built without the CUDA part (configure with "
                      "-DEAGLESIM_CUDA=ON on a machine with the CUDA toolkit and NCCL); calibration measures "
                      "real GPUs");
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
