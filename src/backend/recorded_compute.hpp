#pragma once
// Whether a replay runs the compute ops of a step as eaglesim's kernels or as timed kernels of
// their recorded durations. The second is the A/B a user wants when only the communicator is in
// question: the engine's recorded kernels (imported from its profile) stay exactly as they were,
// and only the allreduces run for real. The rule mirrors the simulator's --op-times:
//   model:    eaglesim's kernels for every op
//   measured: every compute op's recorded `us` (InputError naming the first op without one)
//   auto:     recorded durations for an imported trace, eaglesim's kernels for a generated one
// `other` ops have no kernel of ours and always run as their recorded duration.
#include "backend/op_pricing.hpp"
#include "trace/trace.hpp"

namespace eaglesim {

// --op-times measured takes every compute op's recorded duration, in the simulator and on the
// replay alike: InputError naming op i of `step` when it carries none.
void require_recorded_us(const Step& step, std::size_t i);

// True when the compute ops that carry a recorded `us` run as timed kernels of that length.
bool replay_runs_recorded_compute(const Step& step, OpTimes op_times, bool trace_imported);

}  // namespace eaglesim
