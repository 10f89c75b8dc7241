#pragma once
// Fits a calibration's sequence overhead: the calibration tables time each compute op back to
// back with copies of itself, but a real step alternates different kernels, and each change
// costs a little more (tail of one kernel, ramp-up of the next). Calibrate replays the verify
// step of every calibration trace on the GPUs with free (`ideal`) allreduces, prices the same
// step with the freshly calibrated simulator, and fits one constant per compute op (least
// squares over the traces, weighted by their op counts). The fit needs the CUDA backend.
#include <functional>
#include <string>
#include <vector>

#include "topology/topology.hpp"
#include "trace/trace.hpp"

namespace eaglesim {

struct SequenceFitCase {
  std::string trace;          // trace name (model / file) for the progress line
  int compute_ops = 0;        // compute kernels in its verify step (a fused add + norm pair is one)
  double measured_us = 0;     // CUDA replay, ideal allreduces
  double predicted_us = 0;    // simulator on the calibrated topology, without the overhead
};

struct SequenceFit {
  double overhead_us = 0;     // per compute op
  std::vector<SequenceFitCase> cases;
};

struct SequenceFitOptions {
  int ranks = 1;              // GPUs available; a trace replays on min(its tp, ranks)
  int iters = 7;
  double timeout_s = 30;
  bool fuse_add_norm = true;  // residual_add + rmsnorm as one kernel (RunOptions::fuse_add_norm)
  std::function<void(const std::string&)> progress;
};

// Least-squares per-op constant x minimising sum_i (measured_i - predicted_i - n_i x)^2.
double fit_per_op_overhead(const std::vector<SequenceFitCase>& cases);

// Runs both backends on each trace's verify step (topo must not carry an overhead yet).
SequenceFit fit_sequence_overhead(const std::vector<Trace>& traces, const Topology& topo,
                                  const SequenceFitOptions& opts);

}  // namespace eaglesim
