#pragma once
// Calibration of allreduces in context on `ranks` GPUs (one thread each, as the replay backend):
// per strategy, graphs of C x (context GEMM, allreduce) against C x (context GEMM), all ranks
// released together; the allreduce's cost is the per-call increment, median over replays, the
// slowest rank. The GEMMs rotate over copies of their weights as in a real step. The fused
// strategy's allreduce is followed by the residual add + RMSNorm it absorbs, as in a step.
#include <functional>
#include <string>
#include <vector>

#include "engine/calibration_request.hpp"

namespace eaglesim::cuda {

// µs per case (NaN where a case could not be measured as asked, with a note).
std::vector<double> calibrate_allreduce(const CalibrationRequest& q, std::vector<std::string>& notes);

}  // namespace eaglesim::cuda
