#include "cuda/rank_comm.hpp"

#include "core/errors.hpp"

namespace eaglesim::cuda {

void RankComm::allreduce_residual_rmsnorm(const void*, const FusedNormArgs&, DType, cudaStream_t) {
  throw InputError("strategy '" + strategy() + "' has no fused allreduce + residual + RMSNorm");
}

}  // namespace eaglesim::cuda
