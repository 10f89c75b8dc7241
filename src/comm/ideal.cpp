// The zero-cost lower bound: what the step would take if allreduces were free. Always
// supported, never calibrated.
#include "comm/cost_model.hpp"
#include "comm/strategies.hpp"

namespace eaglesim {

namespace {

class IdealCostModel final : public CommCostModel {
 public:
  std::string name() const override { return "ideal"; }
  CommSupport supports(const Topology&, int, std::int64_t) const override { return {}; }
  CommCost cost(const CommQuery&) const override { return {0.0, "ideal (free)", false, false}; }
};

}  // namespace

const StrategySpec& ideal_spec() {
  static const StrategySpec spec{no_kernel_facts("ideal", kLowerBound),
                                 "every allreduce is free: a lower bound that shows what communication costs, "
                                 "not deployable",
                                 make_cost_model<IdealCostModel>};
  return spec;
}

}  // namespace eaglesim
