#include "cuda/register.hpp"

namespace eaglesim::cuda {
void register_cuda_part() {}
}  // namespace eaglesim::cuda
