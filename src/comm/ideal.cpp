// The zero-cost lower bound: what the step would take if allreduces were free. Always
// supported, never calibrated.
#include "comm/communicator.hpp"
#include "comm/strategies.hpp"

namespace eaglesim {

namespace {

class IdealCommunicator final : public Communicator {
 public:
  std::string name() const override { return "ideal"; }
  std::string description() const override { return "free allreduce (0 us): the lower bound"; }
  CommSupport supports(const Topology&, int, std::int64_t) const override { return {}; }
  CommCost cost(const CommQuery&) const override { return {0.0, "ideal (free)", false, false}; }
};

}  // namespace

std::unique_ptr<Communicator> make_ideal_communicator() { return std::make_unique<IdealCommunicator>(); }

}  // namespace eaglesim
