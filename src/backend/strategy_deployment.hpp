#pragma once
// Can a user run one of eaglesim's allreduce strategies in SGLang or vLLM on this machine, and
// with which flag? The engines' own dispatch (comm/engine_dispatch.hpp) routes the step's
// allreduces under its defaults and then with each modelled option set otherwise; the settings
// under which the engine takes the strategy's path for most of the step's allreduces are how it
// is deployed. A strategy no setting reaches needs eaglesim's own kernel or a patch to the
// engine; a lower bound or a selector is neither.
#include <string>
#include <vector>

#include "comm/machine_facts.hpp"
#include "trace/trace.hpp"

namespace eaglesim {

struct StrategyDeployment {
  bool applies = true;              // false: a lower bound or an engine's own dispatch (nothing to deploy)
  std::vector<std::string> routes;  // "SGLang (default)", "vLLM with --disable-custom-all-reduce"
  bool deployable() const { return !applies || !routes.empty(); }
};

StrategyDeployment strategy_deployment(const std::string& strategy, const Step& step, const MachineFacts& machine,
                                       int ranks, const std::string& model_architecture);

// "SGLang (default); vLLM with --disable-custom-all-reduce", or what it needs instead.
std::string describe_deployment(const std::string& strategy, const StrategyDeployment& d);

}  // namespace eaglesim
