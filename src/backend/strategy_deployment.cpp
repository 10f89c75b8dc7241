#include "backend/strategy_deployment.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/allreduce_routes.hpp"
#include "comm/engine_dispatch.hpp"
#include "comm/strategy_facts.hpp"

namespace eaglesim {

namespace {

// How the engine's user sets an option: environment variables as NAME=value, launch flags as the
// engine spells them on its command line.
std::string flag_spelling(const EngineOptionSpec& o, const std::string& value) {
  const bool env = std::any_of(o.name.begin(), o.name.end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)); });
  if (env) return o.name + "=" + value;
  std::string dashed = o.name;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  if (value == "true") return "--" + dashed;
  return o.name + "=" + value;
}

// The strategy that runs most of the step's allreduces under these settings ("" without any).
std::string majority_strategy(const Step& step, const std::string& engine, const MachineFacts& machine, int ranks,
                              const ServingEngineOptions& options) {
  const AllreduceRoutes routes = route_allreduces(step, engine, machine, ranks, &options);
  std::map<std::string, int> count;
  for (const DispatchGroup& g : routes.groups) count[g.model] += g.count;
  std::string best;
  for (const auto& [name, n] : count)
    if (best.empty() || n > count[best]) best = name;
  return best;
}

}  // namespace

std::vector<EngineSettingRoute> engine_setting_routes(const Step& step, const MachineFacts& machine, int ranks,
                                                      const std::string& model_architecture) {
  std::vector<EngineSettingRoute> out;
  if (ranks < 2) return out;
  for (const std::string& engine : engine_dispatch_names()) {
    const EngineModel& model = engine_model(engine);
    ServingEngineOptions options;
    options.model_architecture = model_architecture;
    out.push_back({model.display, "(default)", majority_strategy(step, engine, machine, ranks, options)});
    for (const EngineOptionSpec& o : model.options)
      for (const char* v : {"true", "false"}) {
        if (v == o.default_value) continue;
        ServingEngineOptions variant = options;
        variant.values[engine][o.name] = v;
        out.push_back({model.display, "with " + flag_spelling(o, v),
                       majority_strategy(step, engine, machine, ranks, variant)});
      }
  }
  return out;
}

StrategyDeployment strategy_deployment(const std::string& strategy, const std::vector<EngineSettingRoute>& routes,
                                       int ranks) {
  StrategyDeployment d;
  if (is_lower_bound(strategy) || is_engine_dispatch(strategy)) {
    d.applies = false;
    return d;
  }
  if (ranks < 2) {  // nothing to reduce: every engine runs it
    for (const std::string& engine : engine_dispatch_names()) d.routes.push_back(engine_model(engine).display + " (default)");
    return d;
  }
  std::vector<std::string> found;  // engines with a route already: their first one counts
  for (const EngineSettingRoute& r : routes) {
    if (r.majority != strategy || std::find(found.begin(), found.end(), r.engine) != found.end()) continue;
    found.push_back(r.engine);
    d.routes.push_back(r.engine + " " + r.setting);
  }
  return d;
}

std::string describe_deployment(const std::string& strategy, const StrategyDeployment& d) {
  if (!d.applies)
    return is_lower_bound(strategy) ? "a reference (free allreduces), not deployable" : "the engine's own dispatch";
  std::string lossy = is_exact(strategy) ? "" : "lossy (changes the numbers); ";
  if (!d.routes.empty()) return lossy + fmt::format("{}", fmt::join(d.routes, "; "));
  return lossy + "neither takes this path on this machine (eaglesim's kernel or an engine patch)";
}

}  // namespace eaglesim
