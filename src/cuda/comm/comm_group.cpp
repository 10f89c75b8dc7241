// create_comm_group: strategy name -> the CUDA implementation that runs it, by the strategy
// table's facts (comm/strategy_facts.hpp): NCCL, the lower bound (no kernel), else our kernels.
#include <memory>

#include "comm/strategy_facts.hpp"
#include "cuda/comm/custom_comm.hpp"
#include "cuda/comm/ideal_comm_group.hpp"
#include "cuda/comm/nccl_comm_group.hpp"
#include "cuda/comm/rank_comm.hpp"

namespace eaglesim::cuda {

std::unique_ptr<CommGroup> create_comm_group(const CommGroupConfig& config) {
  if (is_nccl(config.strategy)) return std::make_unique<NcclCommGroup>(config);
  if (is_lower_bound(config.strategy)) return create_ideal_comm_group(config);
  return create_custom_comm_group(config);
}

}  // namespace eaglesim::cuda
