#pragma once
// The host half of `eaglesim calibrate`: which points to measure for a set of traces, and how
// the measurements become the topology's calibration tables, keyed exactly as the simulator
// looks them up (cost/compute_model.cpp, comm/modelled_communicator.cpp):
//   gemm        (n, k, dtype) points interpolated in m (lm_head uses the same table)
//   attention   "gqa:H:KV:D:qQ" (layout + query tokens) interpolated in kv_len
//   elementwise rmsnorm | residual_add | act | embedding by tokens x hidden; other by requested ns
//   allreduce   strategy -> in-context µs by bytes, with calibration.ranks = the ranks measured on
#include <cstdint>
#include <string>
#include <vector>

#include "engine/calibration_request.hpp"
#include "topology/calibration_keys.hpp"  // calibratable_strategies
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
};

// InputError on strategies calibrate cannot measure or traces with nothing to measure.
CalibrationRequest plan_calibration(const std::vector<Trace>& traces, const CalibrationPlanOptions& options);

// What a layer's allreduces cost in their context chains, summed: the figure its layer
// measurement scales them against. NaN when one of them was not measured or is not positive.
double layer_context_sum(const AllreduceLayerCase& layer, const CalibrationMeasurements& m);

// Tables from measurements (`m` parallel to `request`). Points that come out non-positive or
// non-finite are dropped; where two points land on the same table size, a point at a size a
// trace actually uses wins over a grid point, and equal-rank points are averaged.
Calibration build_calibration(const CalibrationRequest& request, const CalibrationMeasurements& m,
                              const std::vector<Trace>& traces);

// One measured compute layer before and after fit_transitions_to_layers (progress and tests).
struct LayerTransitionFit {
  std::string where;
  double measured_us = 0;  // the layer chain, per copy (NaN: not measured)
  double ops_us = 0;       // its ops by the tables
  double pairs_us = 0;     // its transitions as the pair chains measured them
  double fitted_us = 0;    // its transitions after the fit
  int pairs = 0;           // transitions charged per layer (the last op into the next layer's first included)
  bool fitted = false;     // false: not measured, or an op of it is not priced by the tables
};

// Kernel transitions fitted to whole layers: every measured compute layer shifts the entries of
// its consecutive op pairs (shape keys, created where only a kind entry existed) by one amount,
// so that its ops (compute_cost on `topo`) and transitions add up to its chain; an entry several
// layers share takes the mean of what they want. Run on the calibrated topology (its tables price
// the ops). Layers not measured, or with an op the tables do not price (its model's error would
// land in the transitions), leave their entries alone.
std::vector<LayerTransitionFit> fit_transitions_to_layers(const CalibrationRequest& request,
                                                          const CalibrationMeasurements& m, Topology& topo);

// The compute ops one copy of an allreduce layer case runs in a chain without its allreduces and
// without what they absorb (fused: the residual add + RMSNorm after each, the next copy's input
// norm included), in order: what a step with that strategy runs per layer besides allreduces.
ComputeLayerCase stripped_layer(const AllreduceLayerCase& layer);

// Kernel transitions that only a stripped layer has (fused makes o_proj -> gate_up and down -> the
// next qkv consecutive; no compute layer has those pairs) fitted like fit_transitions_to_layers:
// every stripped layer of a verify step whose baseline chain was measured
// (m.allreduce_layer_baseline_us) shifts those entries by one amount so that its ops and
// transitions add up to that chain; the entries compute layers have are left as fitted. Run
// after fit_transitions_to_layers.
std::vector<LayerTransitionFit> fit_transitions_to_stripped_layers(const CalibrationRequest& request,
                                                                   const CalibrationMeasurements& m, Topology& topo);

// The preset a calibration on `count` GPUs named `gpu_name` starts from ("" if none fits).
std::string base_preset_for(const std::string& gpu_name, int count);
// `base` with gpu_count = max(ranks, 1) when base has fewer/more GPUs than measured, the
// calibration attached and the name/description saying so.
Topology calibrated_topology(const Topology& base, const CalibrationMeasurements& m, Calibration cal);

}  // namespace eaglesim
