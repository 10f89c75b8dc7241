#pragma once
// Runs every requested strategy of one scenario through a backend and derives the report:
// verify (with timeline when asked), draft and decode steps per strategy, then the
// speculative-decoding arithmetic. This is what `eaglesim run` does after parsing flags, and
// what `sweep` calls per grid point without going through the CLI.
#include <string>
#include <vector>

#include "engine/backend.hpp"
#include "report/report.hpp"

namespace eaglesim {

struct EvaluateRequest {
  const Trace* trace = nullptr;          // required
  const Topology* topo = nullptr;        // required for sim, optional for cuda
  std::vector<std::string> strategies;   // in report order; the first is the reference
  RunOptions options;                    // want_timeline applies to the verify step only
  Acceptance acceptance;
  int draft_tokens = 0;                  // > 0: override; 0: from the trace (meta.draft_tokens, else tokens - 1)
  std::string trace_file;                // for the scenario header
  std::string topology_label;            // defaults to topo->name, or "this machine" without one
};

// Strategies the backend rejects (StrategyUnsupported) are listed as unsupported with the
// reason; other errors propagate (InputError / DeviceError).
Report evaluate_strategies(Backend& backend, const EvaluateRequest& request);

// The supported result with the highest tok/s, not counting the `ideal` lower bound unless it
// is the only one (nullptr if none is supported).
const StrategyResult* best_result(const Report& report);
// The `ideal` (zero-cost allreduce) result, when it was run.
const StrategyResult* ideal_result(const Report& report);
bool is_lower_bound(const std::string& strategy);

}  // namespace eaglesim
