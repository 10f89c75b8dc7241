#include "backend/sim_backend.hpp"

#include <mutex>
#include <set>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cost/compute_model.hpp"
#include "domain/kind_marginals.hpp"
#include "backend/engine_costs.hpp"
#include "backend/event_simulator.hpp"
#include "backend/op_pricing.hpp"

namespace eaglesim {

namespace {

// The step priced again without each compute kind's ops: the ops the plan reports under that
// kind and the ones their kernels absorb (a fused add + RMSNorm's norm), so the simulator leaves
// out what the replay leaves out.
void add_kind_marginals(const Step& step, const StepPlan& plan, const PricingOptions& po,
                        SimulationOptions eo, StepResult& result) {
  std::vector<OpKind> reported;
  std::vector<bool> absorbed(step.ops.size(), false);
  for (const Op& op : step.ops) reported.push_back(op.kind);
  for (const PricedOp& p : plan.ops) {
    const auto i = static_cast<std::size_t>(p.op_index);
    reported[i] = p.kind;
    for (int a = 1; a <= p.absorbed; ++a) absorbed[i + static_cast<std::size_t>(a)] = true;
  }
  eo.want_timeline = false;
  for (OpKind kind : marginal_kinds(reported, absorbed)) {
    const std::vector<bool> out = ops_left_out(reported, absorbed, kind);
    Step rest;
    rest.name = step.name;
    for (std::size_t i = 0; i < step.ops.size(); ++i)
      if (!out[i]) rest.ops.push_back(step.ops[i]);
    const double without = rest.ops.empty() ? 0.0 : simulate_step(rest, plan_step(rest, po), eo).step_us;
    result.kind_marginal_us[static_cast<std::size_t>(kind)] = result.step_us - without;
  }
}

}  // namespace

StepResult SimBackend::run_step(const Trace& trace, const Step& step, const std::string& strategy,
                                const Topology* topo, const RunOptions& opts) {
  if (!topo) throw InputError(fmt::format("{} sim needs a topology ({} NAME or FILE)", setting_name(Setting::backend),
                                           setting_name(Setting::topology)));
  const int ranks = opts.ranks > 0 ? opts.ranks : trace.meta.tp;
  if (ranks > topo->gpu_count)
    throw InputError(fmt::format("{} ranks ({}, or the trace's meta.tp when not given): topology '{}' has only {} GPUs",
                                 ranks, setting_name(Setting::ranks), topo->name, topo->gpu_count));
  if (std::string why = ranks_placement_problem(*topo, ranks); !why.empty())
    throw InputError(fmt::format("{} ranks ({}, or the trace's meta.tp when not given): {}", ranks,
                                 setting_name(Setting::ranks), why));

  const CommCostModel& comm = find_cost_model(strategy);
  std::set<std::int64_t> sizes;
  for (const Op& op : step.ops)
    if (op.kind == OpKind::allreduce) sizes.insert(op.bytes);
  for (std::int64_t bytes : sizes) {
    CommSupport sup = comm.supports(*topo, ranks, bytes);
    if (!sup.ok) throw StrategyUnsupported(sup.reason);
  }

  PricingOptions po;
  po.comm = &comm;
  po.a2a = opts.a2a;
  po.query.topo = topo;
  po.query.ranks = ranks;
  po.query.nccl = opts.nccl;
  po.query.engine = &opts.engine;
  // A serving engine's kernels (cost/compute_model.hpp); the torch reference step's are what a
  // topology fitted to its recordings describes (its attention by cuDNN's grid).
  const std::optional<ServingEngine> generated = generated_engine(trace);
  if (!opts.replay_kernels && generated) {
    const EngineProfile engine = engine_profile(*generated, opts.engine);
    po.compute_cost = [topo, engine](const Op& op) { return compute_cost(op, *topo, engine); };
  } else {
    po.compute_cost = [topo](const Op& op) { return compute_cost(op, *topo); };
  }
  po.fuse_add_norm = opts.fuse_add_norm;
  po.add_norm_cost = [topo](const Op& norm) { return add_rmsnorm_cost(norm, *topo); };
  po.op_times = opts.op_times;
  po.trace_imported = trace.meta.source == "imported";
  po.transitions = &topo->calibration.transition_us;
  if (topo->calibration.ranks == ranks) po.allreduce_contexts = &topo->calibration.allreduce_context_us;
  StepPlan plan = plan_step(step, po);

  SimulationOptions eo;
  eo.ranks = ranks;
  eo.start_offset_us = opts.rank_skew_us;
  eo.compute_scale = opts.rank_compute_scale;
  eo.want_timeline = opts.want_timeline;
  StepResult result = simulate_step(step, plan, eo);
  if (opts.kind_marginals) add_kind_marginals(step, plan, po, eo, result);
  return result;
}


void register_builtin_backends() {
  static std::once_flag once;
  std::call_once(once, [] { register_backend("sim", [] { return std::make_unique<SimBackend>(); }); });
}

}  // namespace eaglesim
