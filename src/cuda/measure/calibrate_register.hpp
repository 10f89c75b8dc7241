#pragma once
// calibrate's implementation on real GPUs (calibration/gpu_tools.hpp: set_calibrate_impl).
namespace eaglesim::cuda {
void register_calibrate();
}
