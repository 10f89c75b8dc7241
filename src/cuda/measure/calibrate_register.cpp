// calibrate on real GPUs: inventory (name and count of the visible GPUs), then compute ops and
// compute layers on each of the first `ranks` GPUs at once (the table keeps the slowest time among
// the GPUs the op's steps run on: a tensor-parallel step waits for it at every allreduce,
// calibration/slowest_gpu.hpp), kernel transitions on the first GPU, and allreduces in context on the
// first `ranks` GPUs.
#include "cuda/measure/calibrate_register.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/median.hpp"
#include "core/mpi_launch.hpp"
#include "cuda/measure/calibrate_comm.hpp"
#include "cuda/measure/calibrate_compute.hpp"
#include "calibration/gpu_tools.hpp"
#include "calibration/slowest_gpu.hpp"

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

// Median of b[i] / a[i] - 1 over the ops of one kind group, or nothing when it has no op.
std::optional<double> median_ratio(const std::vector<double>& a, const std::vector<double>& b,
                                   const std::vector<Op>& ops, bool gemm) {
  std::vector<double> r;
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].is_matmul() == gemm && a[i] > 0 && b[i] > 0) r.push_back(b[i] / a[i] - 1.0);
  if (r.empty()) return std::nullopt;
  return median(std::move(r));
}

// Compute ops on every GPU of the calibration at once, each its own thread; per op the slowest
// time among the GPUs its steps run on: GPUs of one model can differ, and a tensor-parallel step
// runs at the pace of the slowest, while a one-GPU step runs on GPU 0. The notes say by how much
// (docs/fidelity.md has what the machines measured). The compute layers likewise (after the
// single ops).
ComputeCalibration calibrate_compute_on_ranks(const CalibrationRequest& q, const ChainTiming& timing,
                                              std::vector<double>& layer_us, std::vector<double>& reduced_layer_us) {
  const int gpus = std::max(1, q.ranks);
  std::vector<ComputeCalibration> per_gpu(static_cast<std::size_t>(gpus));
  std::vector<std::vector<double>> layers_per_gpu(static_cast<std::size_t>(gpus));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(gpus));
  {
    std::vector<std::thread> threads;
    for (int g = 0; g < gpus; ++g)
      threads.emplace_back([&, g] {
        try {
          const auto progress = g == 0 ? q.progress : std::function<void(const std::string&)>();
          const auto gi = static_cast<std::size_t>(g);
          per_gpu[gi] = calibrate_compute(g, q.compute, q.add_rmsnorm, timing, progress);
          // The layers and then the layers without one kind, in one list (split below).
          std::vector<ComputeLayerCase> layers = q.compute_layers;
          layers.insert(layers.end(), q.kind_reduced_layers.begin(), q.kind_reduced_layers.end());
          layers_per_gpu[gi] = calibrate_compute_layers(g, layers, timing, q.fuse_add_norm, progress);
        } catch (...) {
          errors[static_cast<std::size_t>(g)] = std::current_exception();
        }
      });
    for (auto& t : threads) t.join();
  }
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  ComputeCalibration out = std::move(per_gpu[0]);
  auto say = [&](const std::string& line) {
    out.notes.push_back(line);
    if (q.progress) q.progress(line);
  };
  std::vector<std::vector<double>> op_us_per_gpu, add_rmsnorm_us_per_gpu;
  op_us_per_gpu.push_back(std::move(out.us));
  add_rmsnorm_us_per_gpu.push_back(std::move(out.add_rmsnorm_us));
  const std::vector<double>& layers0 = layers_per_gpu[0];
  for (int g = 1; g < gpus; ++g) {
    ComputeCalibration& c = per_gpu[static_cast<std::size_t>(g)];
    const auto gemm = median_ratio(op_us_per_gpu[0], c.us, q.compute, true);
    const auto other = median_ratio(op_us_per_gpu[0], c.us, q.compute, false);
    say(fmt::format("compute on GPU {} vs GPU 0 (median per op): GEMMs {}, other ops {}", g,
                    gemm ? fmt::format("{:+.1f} %", *gemm * 100) : "none",
                    other ? fmt::format("{:+.1f} %", *other * 100) : "none"));
    if (!q.compute_layers.empty()) {
      const std::vector<double>& layers = layers_per_gpu[static_cast<std::size_t>(g)];
      std::string line = fmt::format("compute layers on GPU {} vs GPU 0:", g);
      for (std::size_t l = 0; l < q.compute_layers.size() && l < layers0.size() && l < layers.size(); ++l)
        line += layers0[l] > 0 && layers[l] > 0
                    ? fmt::format(" {:+.1f} % ({})", 100 * (layers[l] / layers0[l] - 1), q.compute_layers[l].where)
                    : fmt::format(" not measured ({})", q.compute_layers[l].where);
      say(line);
    }
    out.launch_gap_us = std::max(out.launch_gap_us, c.launch_gap_us);
    op_us_per_gpu.push_back(std::move(c.us));
    add_rmsnorm_us_per_gpu.push_back(std::move(c.add_rmsnorm_us));
  }
  out.us = slowest_of_first_gpus(op_us_per_gpu, q.compute_gpus);
  out.add_rmsnorm_us = slowest_of_first_gpus(add_rmsnorm_us_per_gpu, q.add_rmsnorm_gpus);
  std::vector<int> layer_gpus;
  for (const ComputeLayerCase& c : q.compute_layers) layer_gpus.push_back(c.gpus);
  for (const ComputeLayerCase& c : q.kind_reduced_layers) layer_gpus.push_back(c.gpus);
  layer_us = slowest_of_first_gpus(layers_per_gpu, layer_gpus);
  // The tail of the list is the kind-reduced layers'.
  const auto full = static_cast<std::ptrdiff_t>(std::min(q.compute_layers.size(), layer_us.size()));
  reduced_layer_us.assign(layer_us.begin() + full, layer_us.end());
  layer_us.resize(static_cast<std::size_t>(full));
  if (gpus > 1) {
    const auto narrower = [gpus](int g) { return g < gpus; };
    const auto ops = std::count_if(q.compute_gpus.begin(), q.compute_gpus.end(), narrower);
    const auto layers = std::count_if(layer_gpus.begin(), layer_gpus.end(), narrower);
    if (ops + layers > 0)
      say(fmt::format("{} compute ops and {} layers are used only by steps on fewer than {} GPUs: each priced at "
                      "the slowest GPU those steps run on (GPU 0 for one GPU)",
                      ops, layers, gpus));
  }
  return out;
}

CalibrationMeasurements measure(const CalibrationRequest& q) {
  require_single_process("calibrate", kDrivesEveryGpu);
  const auto start = std::chrono::steady_clock::now();
  const GpuInventory inv = inventory();
  if (q.ranks > inv.count)
    throw InputError(fmt::format("{} {}: this machine has only {} GPU(s)", setting_name(Setting::ranks), q.ranks,
                                 inv.count));
  CalibrationMeasurements m;
  m.gpu_name = inv.gpu_name;
  m.ranks = q.ranks;
  m.device = fmt::format("{} x {}", q.ranks, inv.gpu_name);
  const ChainTiming timing{q.iters, q.warmup, q.timeout_s, q.chain_us, q.verify_trees};
  ComputeCalibration c = calibrate_compute_on_ranks(q, timing, m.compute_layer_us, m.kind_reduced_layer_us);
  m.compute_us = std::move(c.us);
  m.add_rmsnorm_us = std::move(c.add_rmsnorm_us);
  m.launch_gap_us = c.launch_gap_us;
  m.notes = std::move(c.notes);
  m.transition_us = calibrate_transitions(0, q.transitions, timing, q.progress);
  if (!q.allreduce.empty()) m.allreduce_us = calibrate_allreduce(q, m.notes);
  if (!q.allreduce_contexts.empty()) m.allreduce_context_us = calibrate_allreduce_contexts(q, m.notes);
  if (!q.allreduce_layers.empty()) {
    AllreduceLayerTimes layers = calibrate_allreduce_layers(q, m.notes);
    m.allreduce_layer_us = std::move(layers.added_us);
    m.allreduce_layer_baseline_us = std::move(layers.baseline_us);
  }
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return m;
}

}  // namespace

void register_calibrate() { set_calibrate_impl(CalibrateImpl{inventory, measure}); }

}  // namespace eaglesim::cuda
