#include "backend/evaluate.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "comm/strategy_facts.hpp"
#include "core/errors.hpp"
#include "domain/ranking.hpp"
#include "domain/spec_decode_metrics.hpp"
#include "backend/engine_costs.hpp"
#include "backend/strategy_deployment.hpp"
#include "backend/op_pricing.hpp"
#include "backend/recorded_step_note.hpp"
#include "trace/op_traffic.hpp"

namespace eaglesim {

namespace {

// The experts a step's MoE layers touch (the most in any of them) and the expert weights they read.
struct ExpertReads {
  std::int64_t experts = 0;
  double weight_bytes = 0;
};
ExpertReads expert_reads(const Step& step) {
  ExpertReads r;
  for (const Op& op : step.ops)
    if (op.kind == OpKind::grouped_gemm) {
      r.experts = std::max(r.experts, op.experts);
      r.weight_bytes += op.weight_bytes();
    }
  return r;
}

// A MoE verify of T tokens per request touches up to T times the experts of a decode of the same
// batch and reads their weights, which a decode does not: why speculation can lose on a
// small-active MoE. Empty for a dense model, or when both steps touch the same experts.
std::string moe_experts_note(const Step& verify, const Step* decode) {
  if (!decode) return "";
  const ExpertReads v = expert_reads(verify), d = expert_reads(*decode);
  if (v.experts == 0 || d.experts == 0 || v.experts == d.experts || d.weight_bytes <= 0) return "";
  return fmt::format("MoE: the verify step's layers touch up to {} experts each against {} in a decode step of the "
                     "same batch, reading {:.1f}x the expert weights",
                     v.experts, d.experts, v.weight_bytes / d.weight_bytes);
}

}  // namespace

std::vector<UnitTraffic> step_unit_traffic(const Step& step, bool fuses, bool fuse_add_norm) {
  // Ops run by the kernel of the unit before them keep the default: not counted.
  std::vector<UnitTraffic> units(step.ops.size());
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    const Op& op = step.ops[i];
    UnitTraffic& u = units[i];
    u.counted = true;
    if (fuse_add_norm && fusable_add_norm(step.ops, i)) {
      u.kind = OpKind::rmsnorm;
      u.traffic = add_rmsnorm_traffic(step.ops[i + 1]);
      i += 1;
      continue;
    }
    u.kind = op.kind;
    u.traffic = op_traffic(op);
    if (fuses && op.kind == OpKind::allreduce) i += static_cast<std::size_t>(fusable_followers(step.ops, i));
  }
  return units;
}

int scenario_draft_tokens(const Trace& trace, int requested) {
  if (requested > 0) return requested;
  return trace.meta.draft_tokens ? *trace.meta.draft_tokens : trace.meta.tokens - 1;
}

Report evaluate_strategies(Backend& backend, const EvaluateRequest& req) {
  if (!req.trace) throw std::logic_error("evaluate_strategies: no trace");
  if (req.strategies.empty()) throw SettingError(Setting::strategy, "no strategies given");
  const Trace& trace = *req.trace;
  const Step& verify = trace.verify();
  const Step* draft = trace.find_step("draft");
  const Step* decode = trace.find_step("decode");
  const Step* draft_extend = trace.find_step("draft_extend");

  Report report;
  Scenario& sc = report.scenario;
  sc.trace_file = req.trace_file;
  sc.model = trace.meta.model;
  sc.method = speculation_method(trace.meta);
  sc.topology = !req.topology_label.empty() ? req.topology_label : req.topo ? req.topo->name : "this machine";
  sc.backend = backend.name();
  sc.tp = trace.meta.tp;
  sc.ranks = req.options.ranks > 0 ? req.options.ranks : trace.meta.tp;
  sc.batch = trace.meta.batch_size();
  sc.draft_tokens = scenario_draft_tokens(trace, req.draft_tokens);
  if (sc.draft_tokens < 0) throw InputError(fmt::format("draft tokens: expected >= 0, got {}", sc.draft_tokens));
  sc.acceptance = req.acceptance;
  sc.acceptance.tokens_per_cycle(sc.draft_tokens);  // validates accept_len against N before any work

  if (req.draft_tokens > 0 && req.draft_tokens != trace.meta.tokens - 1)
    sc.notes.push_back(fmt::format("{} {} differs from the {} tokens the verify step was traced for: "
                                   "the verify step is not re-shaped, only the acceptance arithmetic and the number "
                                   "of draft forwards change",
                                   setting_name(Setting::draft_tokens), req.draft_tokens, trace.meta.tokens));
  if (sc.ranks != trace.meta.tp)
    sc.notes.push_back(fmt::format("trace made for tp={}, run on {} ranks: op shapes are the trace's, only the "
                                   "collectives see the different world size",
                                   trace.meta.tp, sc.ranks));
  sc.fused_add_norm = req.options.fuse_add_norm;
  sc.allow_lossy = req.allow_lossy;
  if (!sc.fused_add_norm)
    sc.notes.push_back(unfused_add_norm_note());
  if (!draft && !draft_extend) sc.notes.push_back("the trace has no draft step: draft cost is not included in the cycle (tok/s is optimistic; gen --draft auto "
        "adds the model's head, or one derived from its dimensions)");
  if (!decode) sc.notes.push_back("the trace has no decode step: speedup vs plain decoding and break-even are n/a");
  if (const std::string moe = moe_experts_note(verify, decode); !moe.empty()) sc.notes.push_back(moe);

  RunOptions quiet = req.options;
  quiet.want_timeline = false;
  // The draft side of the cycle is drawn with the verify step (--timeline shows the whole cycle);
  // plain decoding is the baseline, not part of the cycle.
  const RunOptions& cycle_options = req.options;
  // The engine's host work is a model of what the engine adds: the simulator's, not a replay's.
  const std::optional<ServingEngine> host_engine =
      backend.name() == "sim" ? host_cost_engine(trace) : std::optional<ServingEngine>();
  std::string host_note;
  // An engine's eager forwards above its CUDA-graph limit: a model of the engine, the simulator's.
  const std::optional<ServingEngine> generated = generated_engine(trace);
  const bool eager_launches = backend.name() == "sim" && generated.value_or(ServingEngine::torch) != ServingEngine::torch;
  std::string eager_note;
  // How the engines route the verify step's allreduces under each of their settings: once per run,
  // for every strategy's deployment.
  const std::vector<EngineSettingRoute> engine_routes =
      req.topo ? engine_setting_routes(verify, machine_facts(*req.topo), sc.ranks, req.options.engine.model_architecture)
               : std::vector<EngineSettingRoute>{};
  for (const std::string& name : req.strategies) {
    // Draft and decode are priced only when the verify step could run, as the report needs all
    // three or none.
    const PricedStep v = price_step(backend, trace, verify, name, req.topo, req.options);
    std::optional<PricedStep> d, e, p;
    if (v.supported && draft) d = price_step(backend, trace, *draft, name, req.topo, cycle_options);
    if (v.supported && (!d || d->supported) && draft_extend)
      e = price_step(backend, trace, *draft_extend, name, req.topo, cycle_options);
    if (v.supported && (!d || d->supported) && (!e || e->supported) && decode)
      p = price_step(backend, trace, *decode, name, req.topo, quiet);
    StrategyResult r = assemble_result(name, v, d ? &*d : nullptr, p ? &*p : nullptr, e ? &*e : nullptr);
    if (eager_launches) {
      const std::string note = add_eager_launch_costs(r, trace, engine_profile(generated.value(), req.options.engine),
                                                      sc.tp, req.topo ? req.topo->gpu.mem_gb : 0.0);
      if (eager_note.empty()) eager_note = note;
    }
    if (host_engine) {
      const std::string note =
          add_engine_host_costs(r, engine_profile(*host_engine, req.options.engine), draft_forwards_per_cycle(trace));
      if (host_note.empty()) host_note = note;
    }
    derive_strategy_metrics(r, sc.acceptance, sc.draft_tokens, sc.batch, sc.tp);
    if (req.topo && r.supported) {
      const StrategyDeployment dep = strategy_deployment(name, engine_routes, sc.ranks);
      if (dep.applies) r.deployable = dep.deployable();  // none for a reference or an engine's own dispatch
      r.deployment = describe_deployment(name, dep);
    }
    report.results.push_back(std::move(r));
  }
  rebase_on_deployable_plain(report);
  if (auto note = recorded_step_note(verify, report.results)) sc.notes.push_back(*note);
  if (!host_note.empty()) report.scenario.notes.push_back(host_note);
  if (!eager_note.empty()) report.scenario.notes.push_back(eager_note);
  return report;
}

PricedStep price_step(Backend& backend, const Trace& trace, const Step& step, const std::string& strategy,
                      const Topology* topo, const RunOptions& options) {
  PricedStep p;
  try {
    p.result = backend.run_step(trace, step, strategy, topo, options);
    if (p.result.ceilings) {
      p.result.unit_traffic = step_unit_traffic(step, fuses_residual_norm(strategy), options.fuse_add_norm);
      p.result.kind_traffic = sum_kind_traffic(p.result.unit_traffic);
    }
  } catch (const StrategyUnsupported& e) {
    p.supported = false;
    p.reason = e.what();
  }
  return p;
}

StrategyResult assemble_result(const std::string& strategy, const PricedStep& verify, const PricedStep* draft,
                               const PricedStep* decode, const PricedStep* draft_extend) {
  StrategyResult r;
  r.strategy = strategy;
  for (const PricedStep* p : {&verify, draft, decode, draft_extend})
    if (p && !p->supported) {
      r.supported = false;
      r.reason = p->reason;
      return r;
    }
  r.verify = verify.result;
  if (draft) r.draft = draft->result;
  if (decode) r.decode = decode->result;
  if (draft_extend) r.draft_extend = draft_extend->result;
  return r;
}

}  // namespace eaglesim
