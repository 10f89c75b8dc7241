#pragma once
// Host-side registry for GPU-only tools (no CUDA headers): the CUDA part registers its
// implementation when it loads (core/cuda_part_loader.hpp; run_* loads it on first use); commands
// call run_* and get a DeviceError with a clear message when there is no CUDA part.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "calibration/calibration_request.hpp"
#include "core/dtype.hpp"
#include "domain/bench_comm_results.hpp"

namespace eaglesim {

// bench-comm on GPUs: allreduce latency/bandwidth of each strategy over a range of message sizes
// (the result types are domain/bench_comm_results.hpp's).
struct CommBenchRequest {
  std::vector<std::string> strategies;  // nccl, oneshot, oneshot_push, twoshot, fused, quant, reference
  std::vector<std::int64_t> sizes;      // bytes, each a multiple of the element size
  DType dtype = DType::bf16;
  int ranks = 0;                        // 0: every visible GPU
  int iters = 20;                       // timed graph replays (median taken)
  int warmup = 3;                       // untimed replays first
  int gemm_m = 4, gemm_n = 4096, gemm_k = 7168;  // the "in context" GEMM (bf16)
  double timeout_s = 30;
};

using CommBenchImpl = std::function<CommBenchResult(const CommBenchRequest&)>;
void set_comm_bench_impl(CommBenchImpl impl);
// DeviceError when no implementation is registered (no CUDA part).
CommBenchResult run_comm_bench(const CommBenchRequest& request);

// calibrate: the GPUs visible here, then the measurements of a request.
struct CalibrateImpl {
  std::function<GpuInventory()> inventory;
  std::function<CalibrationMeasurements(const CalibrationRequest&)> measure;
};
void set_calibrate_impl(CalibrateImpl impl);
// DeviceError when no implementation is registered (no CUDA part) or no GPU.
GpuInventory run_gpu_inventory();
CalibrationMeasurements run_calibrate(const CalibrationRequest& request);

}  // namespace eaglesim
