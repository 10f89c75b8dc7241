#include "cuda/register.hpp"

#include "cuda/cuda_backend.hpp"

namespace eaglesim::cuda {
void register_cuda_part() {
  register_cuda_backend();
}
}  // namespace eaglesim::cuda
