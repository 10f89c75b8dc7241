#include "cuda/register.hpp"

#include "cuda/calibrate_register.hpp"
#include "cuda/comm_bench.hpp"
#include "cuda/cuda_backend.hpp"

namespace eaglesim::cuda {
void register_cuda_part() {
  register_cuda_backend();
  register_comm_bench();
  register_calibrate();
}
}  // namespace eaglesim::cuda
