#pragma once
// How long a calibration plan will take on the GPU, estimated before it starts, so `calibrate`
// can say it (and a grid can be chosen to fit a budget). Each compute point costs its chains:
// about four graphs of at least chain_us (C copies, 2C, and the first sizing one) per timed
// replay, priced by the uncalibrated models of `topo`, plus a fixed cost for capturing the graphs
// and placing the copies; the layer, transition and allreduce cases a fixed cost each, the
// order of what they measured on H200.
#include "calibration/calibration_request.hpp"
#include "topology/topology.hpp"

namespace eaglesim {

struct PlanEstimate {
  double compute_s = 0;    // single ops and the fused add + RMSNorm cases
  double cases_s = 0;      // layers, transitions, allreduces
  double total_s() const { return compute_s + cases_s; }
};

PlanEstimate estimate_plan(const CalibrationRequest& q, const Topology& topo);

}  // namespace eaglesim
