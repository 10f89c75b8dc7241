#pragma once
// Calibration of compute ops on one GPU: each op's steady-state time per call in a CUDA graph
// of back-to-back copies, run through the replay backend's own RankProgram (same kernels and
// cuBLASLt algorithms as `run --backend cuda`). Weights and KV caches rotate over enough copies
// that together they are several times the L2 cache, as in a real step where every layer reads
// its own. Per-op time = (T(2C) - T(C)) / C, so the graph's start-up cost cancels and the gap
// between consecutive kernels is included, as it is between the ops of a step.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "calibration/calibration_request.hpp"
#include "trace/op.hpp"

namespace eaglesim::cuda {

struct ComputeCalibration {
  std::vector<double> us;             // per op
  std::vector<double> add_rmsnorm_us; // per fused add + RMSNorm case (NaN: the program did not fuse it)
  double launch_gap_us = 0;
  std::vector<std::string> notes;     // the replay's substitutions (fp8 stand-ins, ...)
};

// How chains are timed: `iters` graph replays (median) after `warmup`; one graph of C copies runs
// about `chain_us` (C and 2C are timed); a replay longer than `timeout_s` fails the run.
struct ChainTiming {
  int iters = 7;
  int warmup = 2;
  double timeout_s = 30;
  double chain_us = 300;
  // The verify trees the programs read a tree-mask attention op's mask from
  // (CalibrationRequest::verify_trees, ProgramOptions::verify_trees).
  std::vector<std::vector<int>> verify_trees;
};

// Each op alone (a residual add and an RMSNorm as two kernels), then each of `add_rmsnorm` (a
// residual_add's tokens and hidden) as the one fused add + RMSNorm kernel the replay runs a
// residual add and the RMSNorm after it as.
ComputeCalibration calibrate_compute(int device, const std::vector<Op>& ops, const std::vector<Op>& add_rmsnorm,
                                     const ChainTiming& timing,
                                     const std::function<void(const std::string&)>& progress);

// Compute layers: for each, the per-copy time of a chain of copies of its ops (as many copies as
// compute_layer_chain_copies asks), (T(2C) - T(C)) / C as for single ops, a residual add and the
// RMSNorm after it as one kernel when fuse_add_norm. Throws, as calibrate_compute does, where the
// replay cannot run an op.
std::vector<double> calibrate_compute_layers(int device, const std::vector<ComputeLayerCase>& layers,
                                             const ChainTiming& timing, bool fuse_add_norm,
                                             const std::function<void(const std::string&)>& progress);

// Kernel transitions: for each (A, B), the per-pair time of a chain of (A, B) pairs minus the
// per-call times of A's and of B's own chains, all three measured in one program (same copies,
// same conditions). What a step pays for switching kernels that the one-op tables do not hold.
std::vector<double> calibrate_transitions(int device, const std::vector<std::pair<Op, Op>>& pairs,
                                          const ChainTiming& timing,
                                          const std::function<void(const std::string&)>& progress);

}  // namespace eaglesim::cuda
