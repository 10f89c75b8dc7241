#pragma once
// The answer to "TP16 over two nodes, TP16 with EP2, or data-parallel attention with EP16?" per
// batch: for each model, topology, acceptance and batch, each parallel layout's fastest deployable
// speculative row and its fastest plain decoding (by total tok/s, over the other axes: strategy,
// dtype, speculative configuration). One pass over the rows in grid order.
#include <vector>

#include "sweep/batch_best.hpp"
#include "sweep/sweep_grid.hpp"

namespace eaglesim {

// Per model, topology, acceptance, batch, layout (in that order).
std::vector<SweepLayoutBest> best_per_layout(const SweepGrid& grid, const std::vector<int>& batches,
                                             const std::vector<RowSpeeds>& rows);

}  // namespace eaglesim
