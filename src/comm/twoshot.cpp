// Two-shot allreduce: reduce-scatter (each rank reduces its 1/n slice from all peers) then
// all-gather of the reduced slices. Moves 2 (n-1)/n x size per GPU instead of (n-1) x size,
// at the price of a second phase and one more barrier. Model: p2p_kernel_model.hpp.
#include "comm/modelled_cost_model.hpp"
#include "comm/p2p_kernel_model.hpp"
#include "comm/strategies.hpp"

namespace eaglesim {

namespace {

// The kernel (kernels/twoshot_allreduce.cuh) loads its chunk from every peer, then the reduced
// chunks.
constexpr P2pAccess kAccess = P2pAccess::pull;

class TwoshotCostModel final : public ModelledCostModel {
 public:
  std::string name() const override { return "twoshot"; }

 protected:
  CommSupport strategy_supports(const Topology& t, int ranks, std::int64_t bytes) const override {
    return p2p_kernel_support(t, ranks, bytes);
  }
  CommCost model(const CommQuery& q) const override {
    double b = static_cast<double>(q.bytes);
    KernelEstimate e = twoshot_estimate(*q.topo, q.ranks, b, b, kAccess);
    return {e.us, e.detail, false, false};
  }
};

}  // namespace

const StrategySpec& twoshot_spec() {
  static const StrategySpec spec{own_kernel_facts("twoshot", kCalibratable),
                                 "two-shot over P2P: reduce-scatter, then all-gather",
                                 make_cost_model<TwoshotCostModel>};
  return spec;
}

}  // namespace eaglesim
