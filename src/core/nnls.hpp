#pragma once
// Non-negative linear least squares (Lawson and Hanson's active-set method): the x >= 0 that
// minimises |A x - b|². The attention fits are linear in their per-term costs (µs per wave, per
// byte, per FLOP, ...) once each point's binding term is known, and a cost is never negative;
// the active set gives the exact minimum of that convex problem, where a simplex search over
// six parameters stalls in flat regions of the loss.
#include <vector>

namespace eaglesim {

// `a`: rows of the matrix (each of the same length, the columns), `b`: one value per row.
// Returns x, one value per column, every one >= 0. Columns that are all zero get 0.
// Throws std::invalid_argument when the rows are ragged or do not match b.
std::vector<double> nnls(const std::vector<std::vector<double>>& a, const std::vector<double>& b);

}  // namespace eaglesim
