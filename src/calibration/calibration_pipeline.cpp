#include "calibration/calibration_pipeline.hpp"

#include <cmath>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "calibration/base_preset.hpp"
#include "calibration/calibration_tables.hpp"
#include "calibration/gpu_tools.hpp"
#include "calibration/model_fit.hpp"
#include "calibration/plan_estimate.hpp"
#include "calibration/sequence_overhead_fit.hpp"
#include "calibration/transition_fit.hpp"
#include "topology/calibration_keys.hpp"

namespace eaglesim {

namespace {

// What the allreduces of each measured layer add to it, beside what their context chains measured.
void report_allreduce_layers(const CalibrationRequest& q, const CalibrationMeasurements& m) {
  for (std::size_t l = 0; l < m.allreduce_layer_us.size(); ++l) {
    const AllreduceLayerCase& layer = q.allreduce_layers[l];
    q.progress(fmt::format("allreduce {} in {}: {} allreduce{} add {:.2f} us to the layer ({:.2f} us in their "
                           "context chains)", layer.strategy, layer.where, layer.contexts.size(),
                           layer.contexts.size() == 1 ? "" : "s", m.allreduce_layer_us[l],
                           layer_context_sum(layer, m)));
  }
}

void report_fitted_model(const CalibrationRequest& q, const std::string& key, const FittedModel& f) {
  q.progress(fmt::format("fitted {}: {:.2f} us + max(bytes / {:.0f} GB/s{}) over {} points, residual rms {:.1f} %, "
                         "max {:.1f} %",
                         key, f.fixed_us, f.bw_gbs, f.tflops > 0 ? fmt::format(", flops / {:.0f} TFLOP/s", f.tflops) : "",
                         f.points, 100 * f.rms_residual, 100 * f.max_residual));
  if (fitted_model_has_geometry(key))
    q.progress(fmt::format("fitted {}: launch geometry + waves x {:.2f} us, busiest CTA / {:.1f} GB/s + its tile "
                           "FLOPs / {:.2f} TFLOP/s, combine {:.2f} us + partials / {:.0f} GB/s",
                           key, f.wave_us, f.block_bw_gbs, f.block_tflops, f.combine_us, f.combine_gbs));
}

// The per-kind compute models fitted on this machine's points, each saying where it was measured.
void fit_compute_models_into(Topology& topo, const CalibrationRequest& q, const CalibrationMeasurements& m,
                             const Topology& base, const CalibrationRunOptions& o) {
  topo.calibration.fitted = fit_compute_models(q, m, topo.gpu, o.attention_geometry);
  for (auto& [key, f] : topo.calibration.fitted) {
    f.source = fmt::format("measured on {} by eaglesim calibrate ({} grid)", m.device, o.grid_name);
    report_fitted_model(q, key, f);
  }
  // Kinds without enough points here (no MLA model in the grid) keep the base preset's fit.
  for (const auto& [key, f] : base.calibration.fitted) topo.calibration.fitted.emplace(key, f);
}

void report_layer_fit(const CalibrationRequest& q, const LayerTransitionFit& f) {
  q.progress(fmt::format("compute layer {}: {:.2f} us per copy in a chain; its ops {:.2f} us by the tables, "
                         "{} transitions {:+.2f} us by the pair chains, {:+.2f} us {}",
                         f.where, f.measured_us, f.ops_us, f.pairs, f.pairs_us, f.fitted_us,
                         f.fitted ? "fitted" : "(not fitted: not measured, or an op outside the tables)"));
}

// A layer fitted on the pairs only it has (stripped of its allreduces, or without one op kind).
void report_own_pairs_fit(const CalibrationRequest& q, const char* what, const LayerTransitionFit& f) {
  q.progress(fmt::format("{} {}: {:.2f} us per copy in a chain; its ops {:.2f} us by the tables, {} transitions "
                         "{:+.2f} us before the fit of the pairs only it has, {:+.2f} us {}",
                         what, f.where, f.measured_us, f.ops_us, f.pairs, f.pairs_us, f.fitted_us,
                         f.fitted ? "fitted" : "(not fitted: not measured, or an op outside the tables)"));
}

// The kind-pair entries become the mean of the shape entries the layer fits moved.
void fit_kind_transitions(Topology& topo, const CalibrationRequest& q, const std::set<std::string>& reduced_keys) {
  std::string line;
  for (const KindTransition& k : kind_transitions_from_shapes(topo.calibration.transition_us, reduced_keys))
    line += fmt::format("{}{} {:+.2f} ({} shape pair{}{})", line.empty() ? "" : ", ", k.key, k.after_us, k.shapes,
                        k.shapes == 1 ? "" : "s",
                        std::isnan(k.before_us) ? "" : fmt::format("; pair chains {:+.2f}", k.before_us));
  if (!line.empty())
    q.progress("kernel transitions per kind pair (shapes outside the calibration): the mean of the fitted shape "
               "entries: " + line);
}

// The kernel transitions fitted to the measured layers, in the order each fit needs
// (transition_fit.hpp): compute layers, stripped layers, layers without one kind, then the kinds.
void fit_transitions(Topology& topo, const CalibrationRequest& q, const CalibrationMeasurements& m) {
  for (const LayerTransitionFit& f : fit_transitions_to_layers(q, m, topo)) report_layer_fit(q, f);
  for (const LayerTransitionFit& f : fit_transitions_to_stripped_layers(q, m, topo))
    report_own_pairs_fit(q, "layer", f);
  std::set<std::string> reduced_keys;
  for (const LayerTransitionFit& f : fit_transitions_to_kind_reduced_layers(q, m, topo, reduced_keys))
    report_own_pairs_fit(q, "compute layer", f);
  fit_kind_transitions(topo, q, reduced_keys);
}

void fit_sequence_overhead_into(Topology& topo, const std::vector<Trace>& traces, const CalibrationRequest& q,
                                const CalibrationRunOptions& o) {
  SequenceFitOptions so;
  so.ranks = o.plan.ranks;
  so.iters = o.iters;
  so.timeout_s = o.timeout_s;
  so.fuse_add_norm = q.fuse_add_norm;
  so.progress = q.progress;
  const SequenceFit fit = fit_sequence_overhead(traces, topo, so);
  topo.calibration.sequence_overhead_us = fit.overhead_us;
  q.progress(fmt::format("sequence overhead: {:+.3f} us per compute op (least squares over {} verify steps)",
                         fit.overhead_us, fit.cases.size()));
}

}  // namespace

CalibrationRequest plan_calibration_request(const std::vector<Trace>& traces, const CalibrationRunOptions& o) {
  CalibrationRequest q = plan_calibration(traces, o.plan);
  q.iters = o.iters;
  q.chain_us = o.chain_us;
  q.timeout_s = o.timeout_s;
  q.fuse_add_norm = o.fuse_add_norm;
  q.kind_reduced_layers = kind_reduced_layers(q.compute_layers, q.fuse_add_norm);
  q.progress = o.progress;
  return q;
}

void report_calibration_plan(const CalibrationRequest& q, std::size_t trace_count, const std::string& gpu_name,
                             const Topology& base, const std::string& grid_name) {
  std::size_t n_gemm = 0, n_attn = 0, n_elem = 0;
  for (const Op& op : q.compute)
    (op.kind == OpKind::gemm ? n_gemm : op.kind == OpKind::attention ? n_attn : n_elem)++;
  q.progress(fmt::format("{} on {} x {}: {} GEMM, {} attention, {} elementwise/other points, {} allreduce cases, "
                         "{} in their trace context, {} decoder layers, {} kernel-transition pairs, {} compute layers "
                         "(+ {} without one op kind); base preset {}",
                         trace_count == 1 ? "1 trace" : fmt::format("{} traces", trace_count), q.ranks, gpu_name,
                         n_gemm, n_attn, n_elem, q.allreduce.size(), q.allreduce_contexts.size(),
                         q.allreduce_layers.size(), q.transitions.size(), q.compute_layers.size(),
                         q.kind_reduced_layers.size(), base.name));
  const PlanEstimate e = estimate_plan(q, base);
  q.progress(fmt::format("plan ({} grid): {} compute points + {} fused add + rmsnorm points, estimated {:.0f} s "
                         "({:.0f} s single ops, {:.0f} s layers, transitions and allreduces)",
                         grid_name, q.compute.size(), q.add_rmsnorm.size(), e.total_s(), e.compute_s, e.cases_s));
}

CalibrationRun calibrate_topology(const CalibrationRequest& q, const std::vector<Trace>& traces, const Topology& base,
                                  const CalibrationRunOptions& o) {
  const CalibrationMeasurements m = run_calibrate(q);
  report_allreduce_layers(q, m);
  Topology topo = calibrated_topology(base, m, build_calibration(q, m, traces));
  fit_compute_models_into(topo, q, m, base, o);
  fit_transitions(topo, q, m);
  if (o.fit_sequence) fit_sequence_overhead_into(topo, traces, q, o);
  return {std::move(topo), m.seconds};
}

}  // namespace eaglesim
