#pragma once
// The "ideal" strategy: allreduces cost nothing (no kernel is launched), the lower bound for
// what any communicator could achieve on the replayed step. Data is left as it is.
#include <memory>

#include "cuda/rank_comm.hpp"

namespace eaglesim::cuda {
std::unique_ptr<CommGroup> create_ideal_comm_group(const CommGroupConfig& config);
}
