#pragma once
// Shared by the unit tests that price a trace's verify step with the simulator on a given
// topology (calibration tables, sequence overhead, kernel transitions).
#include <string>

#include "engine/backend.hpp"
#include "trace/trace.hpp"

namespace eaglesim::test_support {

// The sim backend's verify step of `t` on `topo` under `strategy`, on `ranks` ranks; op_times
// as `run --op-times` (empty: the default).
inline StepResult simulate_verify(const Trace& t, const Topology& topo, const std::string& strategy, int ranks = 2,
                                  const std::string& op_times = "") {
  register_builtin_backends();
  auto sim = make_backend("sim");
  RunOptions opts;
  opts.ranks = ranks;
  if (!op_times.empty()) opts.op_times = op_times;
  return sim->run_step(t, t.verify(), strategy, &topo, opts);
}

}  // namespace eaglesim::test_support
