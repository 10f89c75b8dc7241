#include "backend/allreduce_routes.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "comm/strategy_facts.hpp"
#include "backend/op_pricing.hpp"

namespace eaglesim {

AllreduceRoutes route_allreduces(const Step& step, const std::string& engine, const MachineFacts& machine, int ranks,
                                 const ServingEngineOptions* options) {
  AllreduceRoutes r;
  r.op_strategy.assign(step.ops.size(), std::string());
  std::map<std::tuple<std::int64_t, DType, std::int64_t>, std::size_t> group_of;  // (bytes, dtype, rows) -> group
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    const Op& op = step.ops[i];
    if (op.kind != OpKind::allreduce) continue;
    const int followers = fusable_followers(step.ops, i);
    const AllreduceCall call{ranks, op.bytes, op.dtype, followers > 0,
                             followers > 0 ? step.ops[i + static_cast<std::size_t>(followers)].tokens : 0};
    const auto key = std::make_tuple(op.bytes, op.dtype, call.norm_follows ? call.rows : -1);
    auto g = group_of.find(key);
    if (g == group_of.end()) {
      const DispatchChoice d = dispatch_allreduce(engine, machine, call, options);
      g = group_of.emplace(key, r.groups.size()).first;
      r.groups.push_back(DispatchGroup{op.bytes, fuses_residual_norm(d.strategy) && call.norm_follows, d.path,
                                       d.strategy, d.reason, 0, 0.0, {}});
      if (std::find(r.strategies.begin(), r.strategies.end(), d.strategy) == r.strategies.end())
        r.strategies.push_back(d.strategy);
    }
    DispatchGroup& group = r.groups[g->second];
    ++group.count;
    group.ops.push_back(static_cast<int>(i));
    r.op_strategy[i] = group.model;
  }
  return r;
}

}  // namespace eaglesim
