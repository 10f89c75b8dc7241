#include "domain/ranking.hpp"

#include "comm/strategy_facts.hpp"

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

const StrategyResult* best_result(const Report& report) {
  const StrategyResult* best = nullptr;
  // A lower bound (free allreduces) is not something to deploy: it wins only when alone.
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
