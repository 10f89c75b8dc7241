#pragma once
// Runs every requested strategy of one scenario through a backend and derives the report:
// verify (with timeline when asked), draft and decode steps per strategy, then the
// speculative-decoding arithmetic. This is what `eaglesim run` does after parsing
// flags; `sweep` prices and assembles with the same two pieces (price_step, assemble_result),
// sharing the steps that repeat across its grid.
#include <string>
#include <vector>

#include "domain/report.hpp"
#include "backend/backend.hpp"
#include "trace/op_traffic.hpp"

namespace eaglesim {

struct EvaluateRequest {
  const Trace* trace = nullptr;          // required
  const Topology* topo = nullptr;        // required for sim, optional for cuda
  std::vector<std::string> strategies;   // in report order; the first is the reference
  RunOptions options;                    // want_timeline: the verify step and the draft side of the cycle
  Acceptance acceptance;
  int draft_tokens = 0;                  // > 0: override; 0: from the trace (meta.draft_tokens, else tokens - 1)
  std::string trace_file;                // for the scenario header
  std::string topology_label;            // defaults to topo->name, or "this machine" without one
  bool allow_lossy = false;              // a lossy strategy may be best and the plain baseline
};

// The draft tokens N a run of `trace` prices: `requested` when > 0 (--draft-tokens), else the
// trace's meta.draft_tokens, else its verify tokens - 1.
int scenario_draft_tokens(const Trace& trace, int requested);

// Strategies the backend rejects (StrategyUnsupported) are listed as unsupported with the
// reason; other errors propagate (InputError / DeviceError). Every speed-up and break-even is
// against the fastest plain decoding the run can deploy (domain/ranking.hpp).
Report evaluate_strategies(Backend& backend, const EvaluateRequest& request);

// The traffic behind each op's time, per op index (the roofline's inputs, trace/op_traffic.hpp):
// the residual adds and RMSNorms a fusing strategy (`fuses`) runs inside its allreduce kernel are
// the allreduce's time, so they are counted for no kind; a residual add run with its RMSNorm as
// one kernel (`fuse_add_norm`, fusable_add_norm) is that kernel's traffic, counted at the add's
// index under rmsnorm, where its time is reported, and the norm is not counted. Every other op is
// its own traffic (op_traffic) under its kind. price_step fills StepResult::unit_traffic with it
// and StepResult::kind_traffic with its sum (sum_kind_traffic) for a step measured on its device.
std::vector<UnitTraffic> step_unit_traffic(const Step& step, bool fuses, bool fuse_add_norm);

// The pieces evaluate_strategies is made of, which the sweep uses on the steps it shares between
// grid points: one step priced by a backend (supported = false with the backend's reason when it
// cannot run the strategy), and a strategy's result assembled from its priced steps. The cycle's
// metrics then come from derive_strategy_metrics (domain/spec_decode_metrics.hpp).
struct PricedStep {
  bool supported = true;
  std::string reason;
  StepResult result;
};
PricedStep price_step(Backend& backend, const Trace& trace, const Step& step, const std::string& strategy,
                      const Topology* topo, const RunOptions& options);
// verify, draft and decode as priced (draft/decode null when the trace has no such step); the
// first unsupported one makes the result unsupported with its reason.
// `draft_extend`: the draft-extend pass of a version-2 trace of the engine's cycle, when it has one.
StrategyResult assemble_result(const std::string& strategy, const PricedStep& verify, const PricedStep* draft,
                               const PricedStep* decode, const PricedStep* draft_extend = nullptr);

}  // namespace eaglesim
