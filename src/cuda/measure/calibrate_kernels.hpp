#pragma once
// The one kernel calibration needs beyond the replay's own: an empty kernel, whose
// back-to-back time in a CUDA graph is the launch gap (the floor of every kernel in a step).
#include <cuda_runtime.h>

namespace eaglesim::cuda {

void launch_empty_kernel(cudaStream_t stream);

}  // namespace eaglesim::cuda
