#include "cuda/register.hpp"

#include "cuda/comm_bench.hpp"

namespace eaglesim::cuda {
void register_cuda_part() {
  register_comm_bench();
}
}  // namespace eaglesim::cuda
