// The page model of `eaglesim run --report`: the strategies of one scenario as rows of the
// sweep's shape, the verdict on the best one, and a break-even bar per strategy.
#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "core/rounding.hpp"
#include "domain/cycle_parts.hpp"
#include "domain/ranking.hpp"
#include "domain/speculation_verdict.hpp"
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

// What a run adds to the sweep's row shape, per supported strategy: the throughput at the batch
// (all requests, per GPU, plain decoding of all requests) and, for a trace of the engine's cycle,
// what each part of the cycle costs (domain/cycle_parts.hpp), rounded as the rows are.
double round_us(double v) { return round_to(v, 3); }

void add_run_fields(json& row, const StrategyResult& r, bool engine_cycle) {
  if (!r.supported) return;
  row["batch"] = r.batch;
  row["total_tokens_per_s"] = round_us(r.total_tokens_per_s);
  row["tokens_per_s_per_gpu"] = round_us(r.tokens_per_s_per_gpu);
  row["decode_total_tokens_per_s"] = r.decode_us > 0 ? json(round_us(r.decode_total_tokens_per_s)) : json(nullptr);
  if (!engine_cycle) return;
  const CycleParts p = cycle_parts(r);
  row["draft_extend_us"] = round_us(p.draft_extend_us);
  row["draft_forwards_us"] = round_us(p.draft_forwards * p.draft_forward_us);
  row["topk_select_us"] = round_us(p.topk_select_us);
  row["tree_build_us"] = round_us(p.tree_build_us);
  row["verify_forward_us"] = round_us(p.verify_forward_us);
  row["sampling_us"] = round_us(p.sampling_us);
  row["host_sync_us"] = round_us(p.host_sync_us);
}

// The sweep's columns with the run's throughput beside tok/s and plain tok/s, and the cycle's
// parts after them for a trace of the engine's cycle.
json run_columns(bool engine_cycle) {
  auto col = [](const char* key, const char* label) { return json{{"key", key}, {"label", label}, {"digits", 1}}; };
  json out = json::array();
  for (json& c : columns_json(false)) {
    const std::string key = c["key"];
    out.push_back(std::move(c));
    if (key == "tokens_per_s") {
      out.push_back(col("total_tokens_per_s", "total tok/s"));
      out.push_back(col("tokens_per_s_per_gpu", "tok/s/GPU"));
    }
    if (key == "decode_tokens_per_s") out.push_back(col("decode_total_tokens_per_s", "plain total tok/s"));
  }
  if (engine_cycle)
    for (json c : {col("draft_extend_us", "draft-extend µs"), col("draft_forwards_us", "draft fwds µs"),
                   col("topk_select_us", "top-k µs"), col("tree_build_us", "tree µs"),
                   col("verify_forward_us", "verify fwd µs"), col("sampling_us", "sampling µs"),
                   col("host_sync_us", "host sync µs")})
      out.push_back(std::move(c));
  return out;
}

bool any_engine_cycle(const Report& report) {
  for (const StrategyResult& r : report.results)
    if (has_engine_cycle(r)) return true;
  return false;
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
  const StrategyResult* on = verdict_result(report);
  const SpeculationVerdict verdict = speculation_verdict(sc, *on);
  const bool known = verdict.state != SpeculationVerdict::State::unknown;
  const std::string state = !known ? "none" : verdict.state == SpeculationVerdict::State::faster ? "good" : "bad";
  const std::string big = !known ? "Best strategy: " + best->strategy : verdict.headline;
  json detail = json::array(
      {"Best strategy ", best->strategy, ": ",
       fmt::format("{:.1f} tok/s per request, {:.1f} in all", best->tokens_per_s, best->total_tokens_per_s),
       fmt::format(" against {} plain decoding at batch {} (cycle {}, {:.2f} tokens per cycle).",
                   known ? fmt::format("{:.1f} tok/s", best->decode_tokens_per_s) : std::string("n/a"), sc.batch,
                   format_us(best->cycle_us), best->tokens_per_cycle)});
  std::vector<std::string> bullets;
  if (on != best) bullets.push_back(fmt::format("The verdict is for {}: what can be deployed here", on->strategy));
  if (!best->deployment.empty()) bullets.push_back("In a serving engine here, " + best->strategy + ": " + best->deployment);
  if (ref && ref != best && ref->tokens_per_s > 0)
    bullets.push_back(fmt::format("{} is {:.2f}× the reference {}", best->strategy, best->tokens_per_s / ref->tokens_per_s,
                                  ref->strategy));
  if (!known)
    bullets.push_back("The trace has no decode step: speed-up over plain decoding and break-even are n/a");
  else
    bullets.push_back(fmt::format("{}: {}", verdict.detail, sc.acceptance.describe(sc.draft_tokens)));
  if (has_engine_cycle(*best)) {
    const CycleParts p = cycle_parts(*best);
    bullets.push_back(fmt::format("The cycle: draft-extend {}, {} draft forwards {}, top-k {}, tree {}, verify forward {}, "
                                  "sampling {}, host sync {}",
                                  format_us(p.draft_extend_us), p.draft_forwards,
                                  format_us(p.draft_forwards * p.draft_forward_us), format_us(p.topk_select_us),
                                  format_us(p.tree_build_us), format_us(p.verify_forward_us), format_us(p.sampling_us),
                                  format_us(p.host_sync_us)));
  }
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
  v["subtitle"] = fmt::format("TP {} · batch {} · {} draft tokens · {} · backend {}{}", sc.tp, sc.batch, sc.draft_tokens,
                              sc.acceptance.describe(sc.draft_tokens), sc.backend,
                              sc.trace_file.empty() ? "" : " · trace " + sc.trace_file);
  v["strategies"] = strategies_json(names);
  v["acceptances"] = acceptances_json({sc.acceptance});
  v["segments"] = segments_json();
  const bool engine_cycle = any_engine_cycle(report);
  v["columns"] = run_columns(engine_cycle);
  // The rows in the sweep's JSON shape and rounding, from the one printer of sweep rows, and what
  // a run adds to them.
  SweepResults as_sweep;
  as_sweep.rows = rows;
  v["rows"] = sweep_to_json(as_sweep)["rows"];
  for (std::size_t i = 0; i < report.results.size(); ++i) add_run_fields(v["rows"][i], report.results[i], engine_cycle);
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
