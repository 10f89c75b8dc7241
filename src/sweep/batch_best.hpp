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

// What the best-configuration picks compare, per row: kept for every combination (40 bytes)
// when the rows themselves are not.
struct RowSpeeds {
  double tokens_per_s = 0;               // per request, speculative
  double total_tokens_per_s = 0;         // over the batch, speculative
  double decode_tokens_per_s = 0;        // per request, plain decoding (0: none priced)
  double decode_total_tokens_per_s = 0;  // over the batch, plain decoding
  bool ok = false;                       // priced (SweepRow::ok)
  bool deployable = false;               // and its strategy may be picked (not a lower bound, not lossy unless allowed)
  bool measured = false;                 // its E is a measurement (--acceptance entry or --accept-len)

  static RowSpeeds of(const SweepRow& r, bool deployable_strategy, bool measured_e = false) {
    return {r.tokens_per_s, r.total_tokens_per_s, r.decode_us > 0 ? r.decode_tokens_per_s : 0,
            r.decode_us > 0 ? r.decode_total_tokens_per_s : 0, r.ok(), r.ok() && deployable_strategy,
            r.ok() && measured_e};
  }
};

struct BatchVerdicts {
  std::vector<SweepBatchBest> best;  // per model, topology, acceptance, batch (in that order)
  std::vector<SweepPayLimit> limits;  // per model, topology, acceptance
};

// `rows[i]` is what the row of grid.point(i) offers; `batches` the batch axis. Only deployable
// rows are chosen (lower bounds are not). Ties go to the lower row index.
BatchVerdicts best_per_batch(const SweepGrid& grid, const std::vector<int>& batches,
                             const std::vector<RowSpeeds>& rows);

}  // namespace eaglesim
