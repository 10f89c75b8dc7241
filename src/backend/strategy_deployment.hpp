#pragma once
// Can a user run one of eaglesim's allreduce strategies in SGLang or vLLM on this machine, and
// with which flag? The engines' own dispatch (comm/engine_dispatch.hpp) routes the step's
// allreduces under its defaults and then with each modelled option set otherwise; the settings
// under which the engine takes the strategy's path for most of the step's allreduces are how it
// is deployed. A strategy no setting reaches needs eaglesim's kernel or a patch to the engine; a
// lower bound or an engine's own dispatch is neither.
#include <string>
#include <vector>

#include "comm/machine_facts.hpp"
#include "trace/trace.hpp"

namespace eaglesim {

// One engine setting tried and the strategy that runs most of the step's allreduces under it.
struct EngineSettingRoute {
  std::string engine;    // the engine's display name: SGLang, vLLM
  std::string setting;   // "(default)", "with --disable-custom-all-reduce"
  std::string majority;  // "" when the step has no allreduce
};

// Every engine's settings in search order (its defaults, then each modelled option set otherwise,
// one at a time): worked out once per step and machine, then asked for every strategy of a run.
// Empty below 2 ranks (nothing to reduce).
std::vector<EngineSettingRoute> engine_setting_routes(const Step& step, const MachineFacts& machine, int ranks,
                                                      const std::string& model_architecture);

struct StrategyDeployment {
  bool applies = true;              // false: a lower bound or an engine's own dispatch (nothing to deploy)
  std::vector<std::string> routes;  // "SGLang (default)", "vLLM with --disable-custom-all-reduce"
  bool deployable() const { return !applies || !routes.empty(); }
};

// Per engine, the first of its settings that takes the strategy's path; at 1 rank every engine's
// defaults run it.
StrategyDeployment strategy_deployment(const std::string& strategy, const std::vector<EngineSettingRoute>& routes,
                                       int ranks);

// "SGLang (default); vLLM with --disable-custom-all-reduce", or what it needs instead.
std::string describe_deployment(const std::string& strategy, const StrategyDeployment& d);

}  // namespace eaglesim
