#pragma once
// Cuts one rank's op sequence into steps (forward passes). With ProfilerStep#N marks (the
// profiler's schedule / prof.step()) an op belongs to the step whose CPU range contains its
// launch. Without them the steps are found from the repetition of the op sequence: the marker
// ops (allreduces, two per decoder layer, or attention ops when there are none) are counted
// and a new step starts when a step's worth of markers has been seen and the op that opened
// the trace comes round again. A trace made of nothing but identical layers does not say
// where one step ends; the number of layers per step must then be given.
#include <optional>
#include <string>
#include <vector>

#include "import/imported_op.hpp"
#include "import/kineto_reader.hpp"

namespace eaglesim {

struct StepSplit {
  std::vector<std::vector<std::size_t>> steps;  // op indices, in order
  std::vector<bool> complete;                   // false for a step cut off by the profiler
  std::string method;                           // how the boundaries were found, for notes
  std::size_t unassigned_ops = 0;               // ops outside every ProfilerStep range
};

// Throws InputError naming the file when the boundaries are ambiguous (identical layers only,
// no marks, no layers_per_step).
StepSplit split_steps(const RankTrace& rank, const std::vector<ImportedOp>& ops, std::optional<int> layers_per_step);

}  // namespace eaglesim
