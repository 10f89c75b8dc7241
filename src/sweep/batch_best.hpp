#pragma once
// The answer to "which (num_steps, eagle_topk, num_draft_tokens) at which batch size": per
// model, topology and acceptance, the deployable row with the highest total tok/s at each batch
// swept, its speed-up over the fastest plain decoding at the same batch, and the smallest batch
// at which no configuration beats plain decoding any more. Works on rows in grid order, so it
// is one pass over the rows whatever their number.
#include <vector>

#include "sweep/sweep_grid.hpp"
#include "sweep/sweep_result.hpp"

namespace eaglesim {

struct BatchVerdicts {
  std::vector<SweepBatchBest> best;  // per model, topology, acceptance, batch (in that order)
  std::vector<SweepPayLimit> limits;  // per model, topology, acceptance
};

// `rows[i]` is the row of grid.point(i); `batches` the batch axis; `deployable[s]` whether
// strategy s may be chosen (lower bounds may not). Ties go to the lower row index.
BatchVerdicts best_per_batch(const SweepGrid& grid, const std::vector<int>& batches,
                             const std::vector<bool>& deployable, const std::vector<SweepRow>& rows);

}  // namespace eaglesim
