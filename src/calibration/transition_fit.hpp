#pragma once
// Kernel transitions fitted to whole layers: the pair chains calibrate measures give each pair of
// consecutive ops a transition cost, but a layer's ops and transitions must add up to what the
// whole layer's chain measured; these fits move the entries so that they do.
#include <map>
#include <set>
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

// The compute layers again, each without the kernels reported as one op kind (a fused residual
// add + RMSNorm is reported as rmsnorm and leaves with it), as the replay's graph without that
// kind runs them (domain/kind_marginals.hpp): one case per layer and kind whose removal puts two
// kernels next to each other that no compute layer has (with fuse_add_norm: kernels as
// layer_kernels forms them). Removing the router GEMM lets a grouped GEMM follow the RMSNorm
// directly, removing attention puts o_proj right after the QKV GEMM or the q/k norm; a step's
// marginal of a kind is priced with those pairs, which without these cases have no entry.
std::vector<ComputeLayerCase> kind_reduced_layers(const std::vector<ComputeLayerCase>& layers, bool fuse_add_norm);

// Kernel transitions that only a layer without one kind has fitted like
// fit_transitions_to_stripped_layers: every measured kind-reduced layer (m.kind_reduced_layer_us)
// shifts the entries of its pairs that neither a compute layer nor a stripped layer has by one
// amount, so that its ops and transitions add up to its chain. `own_keys` receives the shape
// keys it set (kind_transitions_from_shapes takes them as secondary). Run after
// fit_transitions_to_stripped_layers.
std::vector<LayerTransitionFit> fit_transitions_to_kind_reduced_layers(const CalibrationRequest& request,
                                                                       const CalibrationMeasurements& m, Topology& topo,
                                                                       std::set<std::string>& own_keys);

// One kind-pair entry before and after kind_transitions_from_shapes.
struct KindTransition {
  std::string key;       // "rmsnorm>gemm", or with the GEMMs' weight formats "rmsnorm>gemm:int4"
  double before_us = 0;  // the mean of the pair chains (NaN: there was no such entry)
  double after_us = 0;   // the mean of the shape entries under it
  int shapes = 0;        // how many shape entries it is the mean of
};

// Every entry by kinds, and by kinds with the GEMMs' weight formats (what the simulator uses for
// a pair of shapes it has no entry for: other models, other widths; calibration_keys.hpp
// transition_family_key) becomes the mean of the shape entries under it, after the layer fits
// above moved them. A pair chain (A, B, A, B, ...) measures A -> B and B -> A together, and
// the layer fits correct that on the shapes they cover; a kind entry left at the pair chains'
// mean kept the uncorrected figure (about twice the overlap the layers measured) for every shape
// outside the calibration. `secondary` shape keys (the pairs only a kind-reduced layer has) count
// towards a family or kind entry only where no other shape entry does: a pair real steps run is
// priced from the layers that run it, a pair only a step without some kind runs from those
// layers. Run after the layer fits above.
std::vector<KindTransition> kind_transitions_from_shapes(std::map<std::string, double>& table,
                                                         const std::set<std::string>& secondary = {});

}  // namespace eaglesim
