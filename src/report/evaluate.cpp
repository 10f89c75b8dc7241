#include "report/evaluate.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "report/speculative.hpp"

namespace eaglesim {

Report evaluate_strategies(Backend& backend, const EvaluateRequest& req) {
  if (!req.trace) throw std::logic_error("evaluate_strategies: no trace");
  if (req.strategies.empty()) throw InputError("--strategy: no strategies given");
  const Trace& trace = *req.trace;
  const Step& verify = trace.verify();
  const Step* draft = trace.find_step("draft");
  const Step* decode = trace.find_step("decode");

  Report report;
  Scenario& sc = report.scenario;
  sc.trace_file = req.trace_file;
  sc.model = trace.meta.model;
  sc.topology = !req.topology_label.empty() ? req.topology_label : req.topo ? req.topo->name : "this machine";
  sc.backend = backend.name();
  sc.tp = trace.meta.tp;
  sc.ranks = req.options.ranks > 0 ? req.options.ranks : trace.meta.tp;
  const int traced_drafts = trace.meta.draft_tokens ? *trace.meta.draft_tokens : trace.meta.tokens - 1;
  sc.draft_tokens = req.draft_tokens > 0 ? req.draft_tokens : traced_drafts;
  if (sc.draft_tokens < 0) throw InputError(fmt::format("draft tokens: expected >= 0, got {}", sc.draft_tokens));
  sc.acceptance = req.acceptance;
  sc.acceptance.tokens_per_cycle(sc.draft_tokens);  // validates --accept-len against N before any work

  if (req.draft_tokens > 0 && req.draft_tokens != trace.meta.tokens - 1)
    sc.notes.push_back(fmt::format("--draft-tokens {} differs from the {} tokens the verify step was traced for: "
                                   "the verify step is not re-shaped, only the acceptance arithmetic and the number "
                                   "of draft forwards change",
                                   req.draft_tokens, trace.meta.tokens));
  if (sc.ranks != trace.meta.tp)
    sc.notes.push_back(fmt::format("trace made for tp={}, run on {} ranks: op shapes are the trace's, only the "
                                   "collectives see the different world size",
                                   trace.meta.tp, sc.ranks));
  if (!draft) sc.notes.push_back("the trace has no draft step: draft cost is not included in the cycle (tok/s is optimistic)");
  if (!decode) sc.notes.push_back("the trace has no decode step: speedup vs plain decoding and break-even are n/a");

  RunOptions quiet = req.options;
  quiet.want_timeline = false;
  for (const std::string& name : req.strategies) {
    StrategyResult r;
    r.strategy = name;
    try {
      r.verify = backend.run_step(trace, verify, name, req.topo, req.options);
      if (draft) r.draft = backend.run_step(trace, *draft, name, req.topo, quiet);
      if (decode) r.decode = backend.run_step(trace, *decode, name, req.topo, quiet);
    } catch (const StrategyUnsupported& e) {
      r = StrategyResult{};
      r.strategy = name;
      r.supported = false;
      r.reason = e.what();
    }
    derive_strategy_metrics(r, sc.acceptance, sc.draft_tokens);
    report.results.push_back(std::move(r));
  }
  return report;
}

bool is_lower_bound(const std::string& strategy) { return strategy == "ideal"; }

const StrategyResult* best_result(const Report& report) {
  const StrategyResult* best = nullptr;
  // `ideal` (free allreduces) is a bound, not something to deploy: it wins only when alone.
  for (const StrategyResult& r : report.results)
    if (r.supported && !is_lower_bound(r.strategy) && (!best || r.tokens_per_s > best->tokens_per_s)) best = &r;
  return best ? best : ideal_result(report);
}

const StrategyResult* ideal_result(const Report& report) {
  for (const StrategyResult& r : report.results)
    if (r.supported && is_lower_bound(r.strategy)) return &r;
  return nullptr;
}

}  // namespace eaglesim
