// One-shot allreduce: every rank gets all peers' whole buffers and reduces them locally in a
// fixed rank order. Lowest latency for small messages; moves (n-1) x size per GPU, so it loses to
// two-shot as messages grow. Two kernels (kernels/oneshot_allreduce.cuh), priced as the access
// they make (p2p_kernel_model.hpp):
//   oneshot       oneshot_pull: each rank loads its peers' slots (remote reads)
//   oneshot_push  oneshot_push: each rank stores its input into every peer's receive area (posted
//                 writes), then sums locally; a bench-comm variant, priced by --backend sim
#include "comm/modelled_cost_model.hpp"
#include "comm/p2p_kernel_model.hpp"
#include "comm/strategies.hpp"

namespace eaglesim {

namespace {

class OneshotCostModel final : public ModelledCostModel {
 public:
  explicit OneshotCostModel(P2pAccess access) : access_(access) {}
  std::string name() const override { return access_ == P2pAccess::pull ? "oneshot" : "oneshot_push"; }

 protected:
  CommSupport strategy_supports(const Topology& t, int ranks, std::int64_t bytes) const override {
    return p2p_kernel_support(t, ranks, bytes);
  }
  CommCost model(const CommQuery& q) const override {
    double b = static_cast<double>(q.bytes);
    KernelEstimate e = oneshot_estimate(*q.topo, q.ranks, b, b, access_);
    return {e.us, e.detail, false, false};
  }

 private:
  P2pAccess access_;
};

}  // namespace

const StrategySpec& oneshot_spec() {
  static const StrategySpec spec{own_kernel_facts("oneshot", kCalibratable),
                                 "one-shot over P2P: every rank reads all peers' inputs and reduces",
                                 [] { return make_cost_model_of<OneshotCostModel>(P2pAccess::pull); }};
  return spec;
}

// Measured by bench-comm beside the pull form it replaces, and priced by bench-comm --backend sim
// beside it; not a --strategy.
const StrategySpec& oneshot_push_spec() {
  static const StrategySpec spec{own_kernel_facts("oneshot_push", kBenchCommOnly),
                                 "one-shot over P2P: every rank writes its input to all peers, then reduces",
                                 [] { return make_cost_model_of<OneshotCostModel>(P2pAccess::push); }};
  return spec;
}

}  // namespace eaglesim
