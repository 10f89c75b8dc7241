#include "domain/ranking.hpp"

#include "comm/strategy_facts.hpp"
#include "domain/spec_decode_metrics.hpp"

namespace eaglesim {

const StrategyResult* reference_result(const Report& report) {
  for (const StrategyResult& r : report.results)
    if (r.supported) return &r;
  return nullptr;
}

double speedup_vs_reference(const Report& report, const StrategyResult& r) {
  const StrategyResult* ref = reference_result(report);
  if (!ref || !r.supported || ref->tokens_per_s <= 0) return 0.0;
  return r.tokens_per_s / ref->tokens_per_s;
}

namespace {
template <typename Keep>
const StrategyResult* fastest(const Report& report, Keep keep) {
  const StrategyResult* best = nullptr;
  for (const StrategyResult& r : report.results)
    if (r.supported && keep(r) && (!best || r.tokens_per_s > best->tokens_per_s)) best = &r;
  return best;
}
bool candidate(const StrategyResult& r) { return !is_lower_bound(r.strategy); }
}  // namespace

const StrategyResult* best_result(const Report& report) {
  // A lower bound (free allreduces) is not something to deploy: it wins only when alone. A lossy
  // strategy changes the numbers the model computes: it competes only when allowed, or alone.
  const bool lossy_ok = report.scenario.allow_lossy;
  if (const StrategyResult* b =
          fastest(report, [&](const StrategyResult& r) { return may_be_picked(r.strategy, lossy_ok); }))
    return b;
  if (const StrategyResult* b = fastest(report, candidate)) return b;
  return ideal_result(report);
}

const StrategyResult* lossy_left_out(const Report& report) {
  if (report.scenario.allow_lossy) return nullptr;
  const StrategyResult* best = best_result(report);
  const StrategyResult* lossy =
      fastest(report, [](const StrategyResult& r) { return candidate(r) && !is_exact(r.strategy); });
  return lossy && lossy != best && (!best || lossy->tokens_per_s > best->tokens_per_s) ? lossy : nullptr;
}

const StrategyResult* deployable_best_result(const Report& report) {
  const bool lossy_ok = report.scenario.allow_lossy;
  return fastest(report, [&](const StrategyResult& r) {
    if (is_engine_dispatch(r.strategy)) return true;
    return r.deployable.value_or(false) && may_be_picked(r.strategy, lossy_ok);
  });
}

const StrategyResult* verdict_result(const Report& report) {
  for (const StrategyResult& r : report.results)
    if (r.supported && is_engine_dispatch(r.strategy)) return &r;
  if (const StrategyResult* d = deployable_best_result(report)) return d;
  return best_result(report);
}

const StrategyResult* ideal_result(const Report& report) {
  for (const StrategyResult& r : report.results)
    if (r.supported && is_lower_bound(r.strategy)) return &r;
  return nullptr;
}

const StrategyResult* deployable_plain_result(const Report& report) {
  const bool lossy_ok = report.scenario.allow_lossy;
  const StrategyResult* best = nullptr;
  for (const StrategyResult& r : report.results) {
    if (!r.supported || r.decode_us <= 0) continue;
    const bool engine = is_engine_dispatch(r.strategy);
    const bool ok = engine || (r.deployable.value_or(true) && may_be_picked(r.strategy, lossy_ok));
    if (ok && (!best || r.decode_us < best->decode_us)) best = &r;
  }
  return best;
}

void rebase_on_deployable_plain(Report& report) {
  const StrategyResult* base = deployable_plain_result(report);
  if (!base) return;
  Scenario& sc = report.scenario;
  sc.plain_baseline = base->strategy;
  sc.plain_baseline_tokens_per_s = base->decode_tokens_per_s;
  const double decode_us = base->decode_us;
  for (StrategyResult& r : report.results) set_plain_baseline(r, sc.acceptance, sc.draft_tokens, decode_us);
}

}  // namespace eaglesim
