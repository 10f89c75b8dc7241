#include "calibration/sequence_overhead_fit.hpp"

#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "comm/strategy_facts.hpp"
#include "backend/backend.hpp"
#include "backend/op_pricing.hpp"

namespace eaglesim {

double fit_per_op_overhead(const std::vector<SequenceFitCase>& cases) {
  double num = 0, den = 0;
  for (const auto& c : cases) {
    const double n = c.compute_ops;
    num += n * (c.measured_us - c.predicted_us);
    den += n * n;
  }
  return den > 0 ? num / den : 0.0;
}

SequenceFit fit_sequence_overhead(const std::vector<Trace>& traces, const Topology& topo,
                                  const SequenceFitOptions& opts) {
  register_builtin_backends();
  std::unique_ptr<Backend> sim = make_backend("sim");
  std::unique_ptr<Backend> cuda = make_backend("cuda");
  const std::string free_allreduces = lower_bound_strategy();
  SequenceFit fit;
  for (const Trace& trace : traces) {
    const Step& step = trace.verify();
    RunOptions ro;
    ro.ranks = std::max(1, std::min(trace.meta.tp, opts.ranks));
    ro.iters = opts.iters;
    ro.warmup = 3;
    ro.timeout_s = opts.timeout_s;
    ro.op_times = OpTimes::model;  // the tables, as fidelity prices it
    ro.replay_kernels = true;
    ro.fuse_add_norm = opts.fuse_add_norm;
    SequenceFitCase c;
    c.trace = trace.meta.model;
    // The overhead is per kernel (compute_cost and add_rmsnorm_cost each add it once).
    for (std::size_t i = 0; i < step.ops.size(); ++i) {
      if (step.ops[i].is_comm()) continue;
      ++c.compute_ops;
      if (opts.fuse_add_norm && fusable_add_norm(step.ops, i)) ++i;
    }
    c.predicted_us = sim->run_step(trace, step, free_allreduces, &topo, ro).step_us;
    c.measured_us = cuda->run_step(trace, step, free_allreduces, nullptr, ro).step_us;
    if (opts.progress)
      opts.progress(fmt::format("sequence: {} (tp {}, {} compute ops, {} GPU(s)): replay {:.1f} us, tables {:.1f} us",
                                c.trace, trace.meta.tp, c.compute_ops, ro.ranks, c.measured_us, c.predicted_us));
    fit.cases.push_back(c);
  }
  fit.overhead_us = fit_per_op_overhead(fit.cases);
  return fit;
}

}  // namespace eaglesim
