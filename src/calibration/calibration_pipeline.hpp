#pragma once
// `eaglesim calibrate` as a recipe of named stages: plan the measurement from the traces, say what
// it will measure, measure it on the GPUs (run_calibrate, gpu_tools.hpp), build the tables, fit the
// compute models, fit the kernel transitions to the measured layers (compute layers, stripped
// layers, layers without one op kind, then the kind entries from the shapes) and, when asked, the
// sequence overhead; what comes out is the calibrated topology. Every stage reports one line per
// result through the request's progress callback.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "calibration/calibration_plan.hpp"
#include "calibration/calibration_request.hpp"
#include "topology/topology.hpp"
#include "trace/trace.hpp"

namespace eaglesim {

struct CalibrationRunOptions {
  CalibrationPlanOptions plan;  // ranks, strategies, the designed grid
  int iters = 7;                // timed graph replays per graph (median)
  double chain_us = 300;        // how long one measured compute chain's graph runs
  double timeout_s = 30;
  bool fuse_add_norm = true;    // CalibrationRequest::fuse_add_norm
  std::string grid_name;        // the designed grid's density (traces, coarse, full): progress and the fits' source
  bool attention_geometry = true;  // fit_compute_models: the attention kinds with their launch-geometry terms
  bool fit_sequence = false;    // also fit the per-op sequence overhead (sequence_overhead_fit.hpp)
  std::function<void(const std::string&)> progress;  // one line per stage's result
};

// What the GPUs measure for `traces`: plan_calibration, then the replay settings, the compute
// layers without one op kind and the progress callback of `options`.
CalibrationRequest plan_calibration_request(const std::vector<Trace>& traces, const CalibrationRunOptions& options);

// What will be measured and how long it should take, as two progress lines (before a run, and all
// that a dry run shows): `trace_count` traces on `gpu_name`, estimated by `base`'s models.
void report_calibration_plan(const CalibrationRequest& q, std::size_t trace_count, const std::string& gpu_name,
                             const Topology& base, const std::string& grid_name);

struct CalibrationRun {
  Topology topology;    // `base` with the measured tables and fits
  double measured_s = 0;  // wall time of the GPU measurement
};

// Measures `q` on the GPUs (DeviceError without the CUDA part or a GPU) and turns the
// measurements into the calibrated topology over `base` (its static fields and, for kinds without
// enough points here, its fitted models).
CalibrationRun calibrate_topology(const CalibrationRequest& q, const std::vector<Trace>& traces, const Topology& base,
                                  const CalibrationRunOptions& options);

}  // namespace eaglesim
