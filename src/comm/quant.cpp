// Quantised allreduce: values travel as fp8 e4m3 with one fp32 scale per block of 128 elements
// (wire bytes = elements + 4 x elements / 128, about half of bf16), are dequantised and
// accumulated in fp32 on the receiver. Lossy. Runs as one-shot or two-shot, whichever is
// cheaper for the size, plus the quantise/dequantise work: reading the input and writing the
// fp8 copy, and reading every received fp8 buffer, at local memory speed, plus the per-block
// absolute-max reductions.
#include <algorithm>
#include <cmath>

#include "comm/modelled_cost_model.hpp"
#include "comm/p2p_kernel_model.hpp"
#include "comm/strategies.hpp"

namespace eaglesim {

namespace {

constexpr double kBlockElements = 128;
constexpr double kScaleBytes = 4;
// Per-block amax reductions (warp shuffles) and scale computation: an assumption of the order
// of one extra synchronisation round of a small kernel.
constexpr double kQuantOverheadUs = 0.5;

class QuantCostModel final : public ModelledCostModel {
 public:
  std::string name() const override { return "quant"; }

 protected:
  CommSupport strategy_supports(const Topology& t, int ranks, std::int64_t bytes) const override {
    return p2p_kernel_support(t, ranks, bytes);
  }
  CommCost model(const CommQuery& q) const override {
    const Topology& t = *q.topo;
    double bytes = static_cast<double>(q.bytes);
    double elements = bytes / bytes_per_element(q.dtype);
    double wire = elements + std::ceil(elements / kBlockElements) * kScaleBytes;
    double convert = local_memory_us(t, 2.0 * bytes + q.ranks * wire) + kQuantOverheadUs;
    // Its kernels load the peers' fp8 slots.
    KernelEstimate one = oneshot_estimate(t, q.ranks, wire, bytes, P2pAccess::pull);
    KernelEstimate two = twoshot_estimate(t, q.ranks, wire, bytes, P2pAccess::pull);
    const KernelEstimate& best = one.us <= two.us ? one : two;
    return {best.us + convert, "fp8 " + best.detail, false, false};
  }
};

}  // namespace

const StrategySpec& quant_spec() {
  static const StrategySpec spec{own_kernel_facts("quant", kCalibratable | kLossy),
                                 "one-shot over P2P with fp8 (e4m3) on the wire, per-128-element scales",
                                 make_cost_model<QuantCostModel>};
  return spec;
}

}  // namespace eaglesim
