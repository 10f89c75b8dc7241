#pragma once
// Which preset a calibration starts from, and the calibrated topology it becomes: the preset's
// static fields (links, switch groups) with the measured tables attached.
#include <string>

#include "calibration/calibration_request.hpp"
#include "cost/table_interpolation.hpp"
#include "topology/topology.hpp"

namespace eaglesim {

// The preset a calibration on `count` GPUs named `gpu_name` starts from ("" if none fits).
std::string base_preset_for(const std::string& gpu_name, int count);
// `base` with gpu_count = max(ranks, 1) when base has fewer/more GPUs than measured, the
// calibration attached and the name/description saying so.
Topology calibrated_topology(const Topology& base, const CalibrationMeasurements& m, Calibration cal);

}  // namespace eaglesim
