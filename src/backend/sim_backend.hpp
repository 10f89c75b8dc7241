#pragma once
// The "sim" backend: prices a step with the topology's cost models (op_pricing) and walks it on
// the virtual clock (event_simulator). Usable directly (sweep, tests) or through make_backend("sim").
#include "backend/backend.hpp"

namespace eaglesim {

class SimBackend : public Backend {
 public:
  std::string name() const override { return "sim"; }
  // Throws StrategyUnsupported when the communicator cannot run this world size / message size
  // on `topo`, InputError when topo is null or the options do not fit the step.
  StepResult run_step(const Trace& trace, const Step& step, const std::string& strategy,
                      const Topology* topo, const RunOptions& opts) override;
};

}  // namespace eaglesim
