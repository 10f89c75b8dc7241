#include "cuda/register.hpp"

#include "cuda/measure/calibrate_register.hpp"
#include "cuda/measure/bench_comm_gpu.hpp"
#include "cuda/replay/cuda_backend.hpp"

namespace eaglesim::cuda {
void register_cuda_part() {
  register_cuda_backend();
  register_comm_bench();
  register_calibrate();
}
}  // namespace eaglesim::cuda

extern "C" __attribute__((visibility("default"))) void eaglesim_register_cuda_part() {
  eaglesim::cuda::register_cuda_part();
}
