// The host side of the plug-in example in docs/strategies.md: a strategy defined outside the
// library, registered before anything reads the strategy table. It runs bench-comm's plain
// two-pass kernel as a strategy (example_strategy_kernel.cu registers that kernel under the same
// name) and prices it as the one-shot pull.
#include <memory>

#include "comm/cost_model.hpp"
#include "comm/strategy_spec.hpp"

namespace eaglesim::example {

namespace {

// Priced as the one-shot pull, whose support rules and calibration tables it takes: the two-pass
// kernel reads every peer's whole buffer as the pull does.
class ExampleReferenceModel final : public CommCostModel {
 public:
  std::string name() const override { return "example_reference"; }
  CommSupport supports(const Topology& topo, int ranks, std::int64_t bytes) const override {
    return oneshot().supports(topo, ranks, bytes);
  }
  CommCost cost(const CommQuery& q) const override {
    CommCost c = oneshot().cost(q);
    c.detail = "example two-pass, priced as " + c.detail;
    return c;
  }

 private:
  static const CommCostModel& oneshot() { return find_cost_model("oneshot"); }
};

StrategySpec example_reference_spec() {
  return {own_kernel_facts("example_reference", 0), "plain two-pass kernel run as a strategy (the plug-in example)",
          make_cost_model<ExampleReferenceModel>};
}

const bool registered = (register_strategy(example_reference_spec()), true);

}  // namespace

bool example_strategy_registered() { return registered; }

}  // namespace eaglesim::example
