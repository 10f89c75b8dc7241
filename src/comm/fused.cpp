// One-shot allreduce fused with the residual add and RMSNorm that follow it in every decoder
// layer: one kernel instead of three. Its cost is the one-shot's plus the extra memory traffic
// of the norm inside the same kernel (read the residual, write the new residual and the normed
// output: 3 x size) and a block-wide reduction for the row's mean square; no extra launch.
// The engine drops the trace's residual_add + rmsnorm after each allreduce it absorbs.
#include "comm/modelled_cost_model.hpp"
#include "comm/p2p_kernel_model.hpp"
#include "comm/strategies.hpp"

namespace eaglesim {

namespace {

// Block-wide sum of squares and the broadcast of 1/rms: two __syncthreads rounds of a small
// kernel, a fraction of a microsecond (an assumption, not a measured figure).
constexpr double kRowReductionUs = 0.3;

class FusedCostModel final : public ModelledCostModel {
 public:
  std::string name() const override { return "fused"; }

 protected:
  CommSupport strategy_supports(const Topology& t, int ranks, std::int64_t bytes) const override {
    return p2p_kernel_support(t, ranks, bytes);
  }
  CommCost model(const CommQuery& q) const override {
    double b = static_cast<double>(q.bytes);
    KernelEstimate e = oneshot_estimate(*q.topo, q.ranks, b, b, P2pAccess::pull);  // default kernel: loads from peers
    double us = e.us + local_memory_us(*q.topo, 3.0 * b) + kRowReductionUs;
    return {us, e.detail + " + residual+rmsnorm", false, false};
  }
};

}  // namespace

const StrategySpec& fused_spec() {
  static const StrategySpec spec{own_kernel_facts("fused", kCalibratable | kFusesResidualNorm), "one-shot over P2P",
                                 make_cost_model<FusedCostModel>};
  return spec;
}

}  // namespace eaglesim
