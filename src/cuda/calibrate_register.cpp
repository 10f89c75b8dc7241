// calibrate on real GPUs: inventory (name and count of the visible GPUs), then compute ops on
// the first GPU and allreduces in context on the first `ranks` GPUs.
#include "cuda/calibrate_register.hpp"

#include <chrono>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "core/errors.hpp"
#include "cuda/calibrate_comm.hpp"
#include "cuda/calibrate_compute.hpp"
#include "engine/gpu_tools.hpp"

namespace eaglesim::cuda {

namespace {

GpuInventory inventory() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    throw DeviceError(fmt::format("calibrate: no CUDA GPU is visible on this machine ({}); calibration measures "
                                  "real GPUs (check nvidia-smi and CUDA_VISIBLE_DEVICES)",
                                  err == cudaSuccess ? "0 devices" : cudaGetErrorString(err)));
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) throw DeviceError("calibrate: cannot query GPU 0");
  return {prop.name, count};
}

CalibrationMeasurements measure(const CalibrationRequest& q) {
  const auto start = std::chrono::steady_clock::now();
  const GpuInventory inv = inventory();
  if (q.ranks > inv.count)
    throw InputError(fmt::format("--ranks {}: this machine has only {} GPU(s)", q.ranks, inv.count));
  CalibrationMeasurements m;
  m.gpu_name = inv.gpu_name;
  m.ranks = q.ranks;
  m.device = fmt::format("{} x {}", q.ranks, inv.gpu_name);
  const ChainTiming timing{q.iters, q.warmup, q.timeout_s, q.chain_us};
  ComputeCalibration c = calibrate_compute(0, q.compute, timing, q.progress);
  m.compute_us = std::move(c.us);
  m.launch_gap_us = c.launch_gap_us;
  m.notes = std::move(c.notes);
  m.transition_us = calibrate_transitions(0, q.transitions, timing, q.progress);
  if (!q.allreduce.empty()) m.allreduce_us = calibrate_allreduce(q, m.notes);
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return m;
}

}  // namespace

void register_calibrate() { set_calibrate_impl(CalibrateImpl{inventory, measure}); }

}  // namespace eaglesim::cuda
