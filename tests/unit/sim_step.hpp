#pragma once
// Shared by the unit tests that price a trace's verify step with the simulator on a given
// topology (calibration tables, sequence overhead, kernel transitions).
#include <string>

#include "backend/backend.hpp"
#include "trace/trace.hpp"

namespace eaglesim::test_support {

// The sim backend's verify step of `t` on `topo` under `strategy`, on `ranks` ranks; op_times
// as `run --op-times` (empty: the default); fuse_add_norm false as `--no-fused-add-norm`.
inline StepResult simulate_verify(const Trace& t, const Topology& topo, const std::string& strategy, int ranks = 2,
                                  const std::string& op_times = "", bool fuse_add_norm = true) {
  register_builtin_backends();
  auto sim = make_backend("sim");
  RunOptions opts;
  opts.ranks = ranks;
  opts.fuse_add_norm = fuse_add_norm;
  opts.replay_kernels = true;  // the tests price calibrations of the replay's kernels
  if (!op_times.empty()) opts.op_times = op_times_named(op_times).value();  // a test naming a wrong one fails
  return sim->run_step(t, t.verify(), strategy, &topo, opts);
}

}  // namespace eaglesim::test_support
