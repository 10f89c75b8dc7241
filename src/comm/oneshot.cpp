// One-shot allreduce: every rank reads all peers' whole buffers and reduces them locally in a
// fixed rank order. Lowest latency for small messages; moves (n-1) x size per GPU, so it loses to
// two-shot as messages grow. Model: p2p_kernel_model.hpp.
#include "comm/modelled_communicator.hpp"
#include "comm/p2p_kernel_model.hpp"
#include "comm/strategies.hpp"

namespace eaglesim {

namespace {

// The kernel (kernels/oneshot_allreduce.cuh, oneshot_pull) loads its peers' slots.
constexpr P2pAccess kAccess = P2pAccess::pull;

class OneshotCommunicator final : public ModelledCommunicator {
 public:
  std::string name() const override { return "oneshot"; }
  std::string description() const override {
    return "custom one-shot P2P allreduce (each rank reduces all peers' buffers)";
  }

 protected:
  CommSupport strategy_supports(const Topology& t, int ranks, std::int64_t bytes) const override {
    return p2p_kernel_support(t, ranks, bytes);
  }
  CommCost model(const CommQuery& q) const override {
    double b = static_cast<double>(q.bytes);
    KernelEstimate e = oneshot_estimate(*q.topo, q.ranks, b, b, kAccess);
    return {e.us, e.detail, false, false};
  }
};

}  // namespace

std::unique_ptr<Communicator> make_oneshot_communicator() { return std::make_unique<OneshotCommunicator>(); }

}  // namespace eaglesim
