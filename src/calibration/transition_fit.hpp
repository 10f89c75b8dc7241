#pragma once
// Kernel transitions fitted to whole layers: the pair chains calibrate measures give each pair of
// consecutive ops a transition cost, but a layer's ops and transitions must add up to what the
// whole layer's chain measured; these fits move the entries so that they do.
#include <string>
#include <vector>

#include "calibration/calibration_request.hpp"
#include "topology/topology.hpp"

namespace eaglesim {

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
// so that its ops (compute_cost on `topo`; with request.fuse_add_norm a residual add and the
// RMSNorm after it as one kernel, add_rmsnorm_cost, with no transition between them) and
// transitions add up to its chain; an entry several layers share takes the mean of what they
// want. Run on the calibrated topology (its tables price the ops). Layers not measured, or with an
// op the tables do not price (its model's error would land in the transitions), leave their
// entries alone.
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

}  // namespace eaglesim
