#pragma once
// Which points `eaglesim calibrate` measures for a set of traces: every GEMM shape at a grid of
// token counts, attention over a KV grid, elementwise sizes, spin times, allreduce sizes per
// strategy, and the cases calibration_cases.hpp takes from the traces' layers. The measurements
// become tables in calibration_tables.hpp; transition_fit.hpp and base_preset.hpp finish the job.
#include <cstdint>
#include <string>
#include <vector>

#include "calibration/calibration_request.hpp"
#include "calibration/designed_grid.hpp"
#include "topology/topology.hpp"
#include "trace/trace.hpp"

namespace eaglesim {

// Token counts every GEMM shape and elementwise op is measured at (plus the traces' own).
const std::vector<std::int64_t>& calibration_token_grid();

struct CalibrationPlanOptions {
  int ranks = 1;
  std::vector<std::string> strategies;  // measured when ranks > 1
  std::int64_t min_allreduce_bytes = 1024;       // log grid of allreduce sizes, powers of 2
  std::int64_t max_allreduce_bytes = 64 << 20;
  std::int64_t min_kv_len = 64;                  // attention kv grid: powers of 2 up to 2 x the traced length
  // The designed grid (designed_grid.hpp), measured besides the traces' shapes on the first
  // grid_gpus GPUs (its entries the slowest of them); points a trace already has are not repeated.
  DesignedGrid grid;
  int grid_gpus = 1;
};

// The verify trees a request carries (CalibrationRequest::verify_trees): the tree-mask traces'
// meta.speculative.parents, then the designed grid's trees, one per token count (the first wins).
std::vector<std::vector<int>> verify_trees_of(const std::vector<Trace>& traces, const DesignedGrid& grid);
// InputError naming the op when a tree-mask attention op of the request has no tree of its q_tokens.
void check_tree_masks(const CalibrationRequest& q);

// InputError on strategies calibrate cannot measure or traces with nothing to measure.
CalibrationRequest plan_calibration(const std::vector<Trace>& traces, const CalibrationPlanOptions& options);

}  // namespace eaglesim
