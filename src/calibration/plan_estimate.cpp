#include "calibration/plan_estimate.hpp"

#include <algorithm>

#include "cost/compute_model.hpp"

namespace eaglesim {

namespace {

// Capturing a point's graphs and placing its rotating copies (cudaMalloc, fills): tens of ms.
constexpr double kPointSetupS = 0.02;
// The shortest chain a point times (calibrate_compute.cpp kMinChain) and the graphs it times.
constexpr double kMinChainCopies = 8;
constexpr double kGraphsPerPoint = 4;
// Seconds per case: layer chains stream several GiB of copies over up to three placements; a
// transition is three short chains; an allreduce case a context chain on every rank.
struct CaseSeconds {
  double layer, transition, allreduce;
};
constexpr CaseSeconds kCaseSeconds{1.5, 0.1, 0.08};

double point_s(double op_us, const CalibrationRequest& q) {
  const double graph_us = std::max(q.chain_us, kMinChainCopies * op_us);
  return kPointSetupS + kGraphsPerPoint * graph_us * 1e-6 * (q.warmup + q.iters);
}

}  // namespace

PlanEstimate estimate_plan(const CalibrationRequest& q, const Topology& topo) {
  Topology bare = topo;
  bare.calibration = Calibration{};  // the models alone: the plan is made before anything is measured
  PlanEstimate e;
  for (const Op& op : q.compute) {
    const double us = op.kind == OpKind::other ? op.us.value_or(1.0) : chain_cost(op, bare).us;
    e.compute_s += point_s(us, q);
  }
  for (const Op& add : q.add_rmsnorm) {
    Op norm = add;
    norm.kind = OpKind::rmsnorm;
    e.compute_s += point_s(add_rmsnorm_chain_cost(norm, bare).us, q);
  }
  e.cases_s = kCaseSeconds.layer * static_cast<double>(q.compute_layers.size() + q.kind_reduced_layers.size() +
                                                        q.allreduce_layers.size()) +
              kCaseSeconds.transition * static_cast<double>(q.transitions.size()) +
              kCaseSeconds.allreduce * static_cast<double>(q.allreduce.size() + q.allreduce_contexts.size());
  return e;
}

}  // namespace eaglesim
