#pragma once
// Host-side registry for GPU-only tools (no CUDA headers): the CUDA part registers its
// implementation at start-up (register_cuda_part); commands call run_* and get a DeviceError
// with a clear message when this eaglesim was built without the CUDA part.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "calibration/calibration_request.hpp"

namespace eaglesim {

// bench-comm: allreduce latency/bandwidth of each strategy over a range of message sizes.
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

struct CommBenchCell {
  std::string strategy;
  double graph_us = 0;    // per allreduce, back-to-back in one CUDA graph (median over replays)
  double context_us = 0;  // per allreduce after a GEMM: (GEMM+allreduce) - (GEMM alone), graphs
  double algbw_gbs = 0;   // bytes / graph_us
  double busbw_gbs = 0;   // algbw * 2(n-1)/n, comparable with nccl-tests
  std::int64_t wrong = 0; // elements outside tolerance (+ elements differing across ranks)
  std::string note;       // e.g. "nccl fallback", "3x7168 rows"
};

struct CommBenchRow {
  std::int64_t bytes = 0;
  std::int64_t count = 0;
  std::vector<CommBenchCell> cells;  // in request order
  std::string fastest;               // lowest graph_us among exact, non-fused strategies with 0 wrong
};

struct CommBenchResult {
  std::string device;  // e.g. "2 x NVIDIA H200"
  int ranks = 0;
  DType dtype = DType::bf16;
  double gemm_us = 0;  // one GEMM of the context shape alone
  int calls_per_graph = 0;
  std::vector<CommBenchRow> rows;
};

using CommBenchImpl = std::function<CommBenchResult(const CommBenchRequest&)>;
void set_comm_bench_impl(CommBenchImpl impl);
// DeviceError when no implementation is registered (built without the CUDA part).
CommBenchResult run_comm_bench(const CommBenchRequest& request);

// calibrate: the GPUs visible here, then the measurements of a request.
struct CalibrateImpl {
  std::function<GpuInventory()> inventory;
  std::function<CalibrationMeasurements(const CalibrationRequest&)> measure;
};
void set_calibrate_impl(CalibrateImpl impl);
// DeviceError when no implementation is registered (built without the CUDA part) or no GPU.
GpuInventory run_gpu_inventory();
CalibrationMeasurements run_calibrate(const CalibrationRequest& request);

}  // namespace eaglesim
