#pragma once
// The lower bound ("ideal"): allreduces cost nothing (no kernel is launched), the bound for
// what any communicator could achieve on the replayed step. Data is left as it is. The ranks
// carry the strategy name of the config they were made from.
#include <memory>

#include "cuda/comm/rank_comm.hpp"

namespace eaglesim::cuda {
std::unique_ptr<CommGroup> create_ideal_comm_group(const CommGroupConfig& config);
}
