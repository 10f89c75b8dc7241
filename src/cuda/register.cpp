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
