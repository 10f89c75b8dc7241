// create_comm_group: strategy name -> the CUDA implementation that runs it.
#include <memory>

#include "core/errors.hpp"
#include "cuda/ideal_comm_group.hpp"
#include "cuda/nccl_comm_group.hpp"
#include "cuda/rank_comm.hpp"

#if __has_include("cuda/custom_comm.hpp")
#include "cuda/custom_comm.hpp"
#define EAGLESIM_HAVE_CUSTOM_COMM 1
#endif

namespace eaglesim::cuda {

std::unique_ptr<CommGroup> create_comm_group(const CommGroupConfig& config) {
  if (config.strategy == "nccl") return std::make_unique<NcclCommGroup>(config);
  if (config.strategy == "ideal") return create_ideal_comm_group(config);
#ifdef EAGLESIM_HAVE_CUSTOM_COMM
  return create_custom_comm_group(config);
#else
  throw InputError("strategy " + config.strategy + " not built (this eaglesim has only nccl and ideal on GPUs)");
#endif
}

}  // namespace eaglesim::cuda
