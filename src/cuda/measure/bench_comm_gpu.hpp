#pragma once
// bench-comm's implementation on real GPUs (see calibration/gpu_tools.hpp for the request/result).
namespace eaglesim::cuda {

// Registers the implementation with set_comm_bench_impl; called from register_cuda_part().
void register_comm_bench();

}  // namespace eaglesim::cuda
