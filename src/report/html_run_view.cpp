// The page model of `eaglesim run --report`: the strategies of one scenario as rows of the
// sweep's shape, the verdict on the best one, and a break-even bar per strategy.
#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "domain/ranking.hpp"
#include "report/html_view.hpp"
#include "report/html_view_rows.hpp"
#include "sweep/sweep_output.hpp"

namespace eaglesim::html {

namespace {

// The scenario's results as sweep rows, the verify step split by verify_split as the sweep's
// rows are, so that both reports draw the same bars.
std::vector<SweepRow> run_rows(const Report& report) {
  const Scenario& sc = report.scenario;
  std::vector<SweepRow> rows;
  for (const StrategyResult& r : report.results) {
    SweepRow row;
    row.index = rows.size();
    row.model = sc.model;
    row.topology = sc.topology;
    row.tp = sc.tp;
    row.draft_tokens = sc.draft_tokens;
    row.acceptance = sc.acceptance;
    row.strategy = r.strategy;
    row.unfit = r.supported ? UnfitKind::none : UnfitKind::strategy;
    row.reason = r.reason;
    if (r.supported) {
      static_cast<CycleMetrics&>(row) = r;
      const VerifySplit split = verify_split(r);
      row.verify_compute_us = split.matmul_attention_us;
      row.verify_other_us = split.other_us;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::optional<std::size_t> index_of(const Report& report, const StrategyResult* r) {
  if (!r) return std::nullopt;
  return static_cast<std::size_t>(r - report.results.data());
}

json run_verdict(const Report& report) {
  const Scenario& sc = report.scenario;
  const std::string label = fmt::format("{} · {} · TP {}", sc.model, sc.topology, sc.tp);
  const StrategyResult* best = best_result(report);
  if (!best) return verdict_json("none", label, "No strategy can run", json::array({"See the table for the reasons."}), {});
  const StrategyResult* ref = nullptr;  // the first deployable strategy, else the first that runs
  for (const StrategyResult& r : report.results)
    if (r.supported && (!ref || (!deployable(ref->strategy) && deployable(r.strategy)))) ref = &r;
  const bool known = best->decode_us > 0;
  const bool pays = known && best->speedup_vs_decode > 1;
  const std::string state = !known ? "none" : pays ? "good" : "bad";
  const std::string big = !known ? "Best strategy: " + best->strategy
                                 : fmt::format("EAGLE-3 {}: {:.2f}× plain decoding", pays ? "pays off" : "does not pay off",
                                               best->speedup_vs_decode);
  json detail = json::array(
      {"Best strategy ", best->strategy, ": ", fmt::format("{:.1f} tok/s", best->tokens_per_s),
       fmt::format(" against {} plain decoding (cycle {}, {:.2f} tokens per cycle).",
                   known ? fmt::format("{:.1f} tok/s", best->decode_tokens_per_s) : std::string("n/a"),
                   format_us(best->cycle_us), best->tokens_per_cycle)});
  std::vector<std::string> bullets;
  if (ref && ref != best && ref->tokens_per_s > 0)
    bullets.push_back(fmt::format("{} is {:.2f}× the reference {}", best->strategy, best->tokens_per_s / ref->tokens_per_s,
                                  ref->strategy));
  if (!known)
    bullets.push_back("The trace has no decode step: speed-up over plain decoding and break-even are n/a");
  else if (best->breakeven_accept_rate)
    bullets.push_back(fmt::format("Break-even acceptance rate: a={:.3f} ({})", *best->breakeven_accept_rate,
                                  sc.acceptance.describe(sc.draft_tokens)));
  else
    bullets.push_back("No acceptance rate makes EAGLE-3 pay off with this strategy");
  bullets.push_back(fmt::format("Allreduce share of the verify step: {:.0f}% ({} allreduces)", 100 * best->comm_fraction,
                                best->allreduce_count));
  return verdict_json(state, label, big, std::move(detail), bullets);
}

json run_breakeven(const Report& report) {
  const Scenario& sc = report.scenario;
  json bars = json::array();
  for (const StrategyResult& r : report.results) {
    const std::string bound = deployable(r.strategy) ? "" : " (lower bound)";
    if (!r.supported)
      bars.push_back(breakeven_bar(r.strategy, std::nullopt, "unfit", "cannot run: " + r.reason, {sc.acceptance}));
    else if (r.decode_us <= 0)
      bars.push_back(breakeven_bar(r.strategy, std::nullopt, "never", "no decode step in the trace: n/a", {sc.acceptance}));
    else if (!r.breakeven_accept_rate)
      bars.push_back(breakeven_bar(r.strategy, std::nullopt, "never", "never pays off" + bound, {sc.acceptance}));
    else
      bars.push_back(breakeven_bar(r.strategy, r.breakeven_accept_rate, "ok",
                                   fmt::format("{:.2f}× at {}{}", r.speedup_vs_decode, short_acceptance(sc.acceptance), bound),
                                   {sc.acceptance}));
  }
  return {{"model", sc.model},
          {"title", "Break-even acceptance per strategy"},
          {"note", "The per-position acceptance rate below which plain decoding is faster."},
          {"bars", std::move(bars)}};
}

}  // namespace

json run_view(const Report& report) {
  const Scenario& sc = report.scenario;
  const std::vector<SweepRow> rows = run_rows(report);
  std::vector<std::string> names;
  for (const StrategyResult& r : report.results) names.push_back(r.strategy);

  json v;
  v["format"] = "eaglesim-report-view";
  v["version"] = 1;
  v["kind"] = "run";
  v["title"] = fmt::format("eaglesim run — {} on {}", sc.model, sc.topology);
  v["subtitle"] = fmt::format("TP {} · {} draft tokens · {} · backend {}{}", sc.tp, sc.draft_tokens,
                              sc.acceptance.describe(sc.draft_tokens), sc.backend,
                              sc.trace_file.empty() ? "" : " · trace " + sc.trace_file);
  v["strategies"] = strategies_json(names);
  v["acceptances"] = acceptances_json({sc.acceptance});
  v["segments"] = segments_json();
  v["columns"] = columns_json(false);
  // The rows in the sweep's JSON shape and rounding, from the one printer of sweep rows.
  SweepResults as_sweep;
  as_sweep.rows = rows;
  v["rows"] = sweep_to_json(as_sweep)["rows"];
  v["headline"] = {{"summary", nullptr}, {"verdicts", json::array({run_verdict(report)})}};

  json explorer;
  explorer["best_row"] = row_or_null(index_of(report, best_result(report)));
  explorer["draft_tokens"] = json::array({sc.draft_tokens});
  explorer["plain"] = plain_json(rows);
  explorer["curves"] = curves_json(rows);
  explorer["order"] = order_json(rows);
  v["explorer"] = std::move(explorer);
  v["breakeven"] = json::array({run_breakeven(report)});
  v["unfit"] = unfit_json(rows);
  return v;
}

}  // namespace eaglesim::html
