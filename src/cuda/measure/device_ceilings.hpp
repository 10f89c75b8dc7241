#pragma once
// What the GPU a step is replayed on can do at best, measured on it: the floors the report's
// roofline block compares each op kind with. Datasheet figures would flatter every kernel (no
// GPU streams at its nominal bandwidth), so both come from the device itself:
//   - HBM read bandwidth: one streaming read of 2 GiB with 16-byte loads, far beyond any L2;
//   - dense bf16 tensor throughput: one 8192³ cuBLASLt GEMM, the shape closest to the peak.
#include <optional>

#include "domain/step_result.hpp"

namespace eaglesim::cuda {

// Measured on the first call for `device` (about a tenth of a second), then cached for the
// process. Runs on its own stream with the device idle, so call it outside any timed replay.
// nullopt when the device lacks the free memory the measurement needs (2.4 GiB): the report
// then prints no roofline rather than fail a run that has measured its steps.
std::optional<DeviceCeilings> device_ceilings(int device);

}  // namespace eaglesim::cuda
