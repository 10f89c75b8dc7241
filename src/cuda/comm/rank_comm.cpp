#include "cuda/comm/rank_comm.hpp"

#include "core/errors.hpp"

namespace eaglesim::cuda {

// For every strategy without a fused kernel. Callers check supports_fused() first, so reaching
// this is a failure of the run (DeviceError), not of the user's input.
void RankComm::allreduce_residual_rmsnorm(const void*, const FusedNormArgs&, DType, cudaStream_t) {
  throw DeviceError("strategy " + strategy() + " has no fused allreduce + residual + RMSNorm");
}

}  // namespace eaglesim::cuda
