#pragma once
// Which eaglesim strategy runs each allreduce of a step under an engine strategy (sglang, vllm)
// on real GPUs: the engine's path for the call (comm/engine_dispatch.hpp) on the machine the
// CUDA backend probed, and the groups the report shows. The simulator asks the same dispatch
// through the strategy's communicator; this is the CUDA backend's view of it, kept here so that
// it is tested without a GPU.
#include <string>
#include <vector>

#include "comm/engine_dispatch.hpp"
#include "domain/step_result.hpp"
#include "trace/trace.hpp"

namespace eaglesim {

struct AllreduceRoutes {
  std::vector<std::string> op_strategy;  // per op of the step: the strategy running it ("" for non-allreduces)
  std::vector<DispatchGroup> groups;     // per distinct (size, path), in step order of first use
  std::vector<std::string> strategies;   // the distinct strategies of op_strategy, in order of first use
};

AllreduceRoutes route_allreduces(const Step& step, const std::string& engine, const MachineFacts& machine, int ranks,
                                 const ServingEngineOptions* options);

}  // namespace eaglesim
