#pragma once
// How calibrate's measurements become the topology's calibration tables, keyed exactly as the
// simulator looks them up (cost/compute_model.cpp, comm/modelled_cost_model.cpp):
//   gemm        (n, k, dtype) points interpolated in m (lm_head uses the same table)
//   attention   "gqa:H:KV:D:qQ" (layout + query tokens) interpolated in kv_len
//   elementwise rmsnorm | residual_add | act | embedding by tokens x hidden; other by requested ns;
//               add_rmsnorm (the fused residual add + RMSNorm kernel) by tokens x hidden
//   allreduce   strategy -> in-context µs by bytes, with calibration.ranks = the ranks measured on
// plus kernel transitions and allreduces in their trace context, scaled to whole layers.
#include <vector>

#include "calibration/calibration_request.hpp"
#include "cost/table_interpolation.hpp"
#include "trace/trace.hpp"

namespace eaglesim {

// What a layer's allreduces cost in their context chains, summed: the figure its layer
// measurement scales them against. NaN when one of them was not measured or is not positive.
double layer_context_sum(const AllreduceLayerCase& layer, const CalibrationMeasurements& m);

// Tables from measurements (`m` parallel to `request`). Points that come out non-positive or
// non-finite are dropped; where two points land on the same table size, a point at a size a
// trace actually uses wins over a grid point, and equal-rank points are averaged.
Calibration build_calibration(const CalibrationRequest& request, const CalibrationMeasurements& m,
                              const std::vector<Trace>& traces);

}  // namespace eaglesim
