#pragma once
// Which results of a report compare with which: the reference (the first supported strategy,
// what "speed-up vs first" is against), the best deployable one and the lower bound.
#include "domain/report.hpp"

namespace eaglesim {

// The first supported result (nullptr if none).
const StrategyResult* reference_result(const Report& report);
// Speed-up of `r` over the reference; 0 when not comparable.
double speedup_vs_reference(const Report& report, const StrategyResult& r);
// The supported result with the highest tok/s, not counting a lower bound (comm/strategy_facts)
// unless it is the only one, nor a lossy strategy unless the scenario allows lossy ones or no
// exact one runs (nullptr if none is supported).
const StrategyResult* best_result(const Report& report);
// The fastest lossy result best_result left out (nullptr: none, or lossy ones are allowed).
const StrategyResult* lossy_left_out(const Report& report);
// The fastest result an engine runs here as is or with a flag (StrategyResult::deployable), or an
// engine's own dispatch; nullptr when no result knows.
const StrategyResult* deployable_best_result(const Report& report);
// What the verdict speaks for: the engine's path when an engine strategy ran (what the user's
// server would do), else the deployable best where known, else the best.
const StrategyResult* verdict_result(const Report& report);
// The lower-bound (zero-cost allreduce) result, when it was run.
const StrategyResult* ideal_result(const Report& report);
// The result whose plain decoding is the fastest a user could deploy: an engine's own dispatch,
// or a strategy an engine runs here (StrategyResult::deployable; where that is not known, any that
// is not the free-allreduce reference), exact unless the scenario allows lossy ones.
const StrategyResult* deployable_plain_result(const Report& report);
// One definition of speed-up for a run: every result's speed-up over plain decoding and its
// break-even are against deployable_plain_result's plain decoding (the scenario names it).
void rebase_on_deployable_plain(Report& report);

}  // namespace eaglesim
