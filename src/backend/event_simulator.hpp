#pragma once
// The simulator's discrete-event core: ranks walk a priced step on a virtual clock.
//
// Each rank has one clock per stream (the verify step uses one compute stream per rank). An op
// starts when its stream is free and, if it depends on an op of another stream, when that op has
// ended; it then runs for its priced duration times the rank's compute slowdown. A collective is a
// rendezvous: it completes on every rank at (latest arrival over ranks) + its cost, and each rank
// records how long it waited for the last one.
//
// Every rank issues the same ops in the same order (as NCCL requires of collectives), and
// dependencies only point backwards in that order, so visiting ops in program order and, for
// each op, all ranks, yields exactly the times an event-queue simulation would produce, without
// the queue. The loop allocates nothing per op and builds timeline spans only on request.
#include <vector>

#include "backend/op_pricing.hpp"
#include "domain/step_result.hpp"
#include "trace/trace.hpp"

namespace eaglesim {

struct SimulationOptions {
  int ranks = 1;
  std::vector<double> start_offset_us;  // per rank (empty: all 0); shifted so the earliest is 0
  std::vector<double> compute_scale;    // per rank slowdown of compute ops (empty: all 1)
  bool want_timeline = false;
};

// Simulates one step. `step` must be the step `plan` was made from (spans take names and shapes
// from it). Throws InputError on inconsistent options (wrong vector lengths, negative values).
StepResult simulate_step(const Step& step, const StepPlan& plan, const SimulationOptions& opts);

}  // namespace eaglesim
