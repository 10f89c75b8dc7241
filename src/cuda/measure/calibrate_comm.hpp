#pragma once
// Calibration of allreduces in context on `ranks` GPUs (one thread each, as the replay backend):
// per strategy, graphs of C x (ops before, allreduce, ops after) against C x (ops before, ops
// after), all ranks released together; the allreduce's cost is the per-call increment, median over
// replays, the slowest rank. GEMMs rotate over copies of their weights as in a real step. The
// fused strategy's allreduce is followed by the residual add + RMSNorm it absorbs, as in a step.
//   calibrate_allreduce:          before = the one context GEMM of the request, after = nothing;
//                                 a table per strategy over sizes.
//   calibrate_allreduce_contexts: before/after = each case's own neighbouring ops in the traces.
//   calibrate_allreduce_layers:   copies of a whole decoder layer with its allreduces against the
//                                 same copies without them (nor the ops a fused kernel absorbs);
//                                 the slowest rank's chain minus the slowest rank's baseline, per
//                                 copy (the baseline's ranks do not wait for each other).
#include <functional>
#include <string>
#include <vector>

#include "calibration/calibration_request.hpp"

namespace eaglesim::cuda {

// µs per case (NaN where a case could not be measured as asked, with a note).
std::vector<double> calibrate_allreduce(const CalibrationRequest& q, std::vector<std::string>& notes);

// µs per q.allreduce_contexts case (NaN where a strategy cannot run here, with a note).
std::vector<double> calibrate_allreduce_contexts(const CalibrationRequest& q, std::vector<std::string>& notes);

// Per q.allreduce_layers case (NaN where a strategy cannot run here, with a note):
struct AllreduceLayerTimes {
  std::vector<double> added_us;     // what the layer's allreduces add to one copy of it
  std::vector<double> baseline_us;  // one copy without them (nor what fused absorbs), slowest rank
};
AllreduceLayerTimes calibrate_allreduce_layers(const CalibrationRequest& q, std::vector<std::string>& notes);

}  // namespace eaglesim::cuda
