// The page model of `eaglesim sweep --report`: the verdicts per model, the explorer's starting
// point (each model's fastest runnable configuration), total tok/s against batch with the best
// configuration per batch and plain decoding, the break-even bars per topology and the groups of
// combinations that cannot run.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/rounding.hpp"
#include "report/html_view.hpp"
#include "report/html_view_rows.hpp"
#include "report/sweep_page_rows.hpp"
#include "sweep/sweep_output.hpp"

namespace eaglesim::html {

namespace {

bool same(const Acceptance& a, const Acceptance& b) { return a.mode == b.mode && a.value == b.value; }

std::string subtitle(const SweepResults& res) {
  const SweepAxes& ax = res.axes;
  std::vector<std::string> acc, dtypes;
  for (const Acceptance& a : ax.acceptances) acc.push_back(short_acceptance(a));
  for (DType d : ax.weight_dtypes) dtypes.push_back(to_string(d));
  std::vector<std::string> layouts;
  for (const ParallelLayout& l : ax.layouts)
    layouts.push_back(l.ep == 1 && !l.dp_attention ? std::to_string(l.tp) : layout_label(l));
  return fmt::format("{} topologies · TP {} · draft tokens {} · {} · strategies {} · weights {} · KV {} tokens · "
                     "{} combinations, {} can run",
                     ax.topologies.size(), fmt::join(layouts, ","), fmt::join(ax.draft_tokens, ","),
                     fmt::join(acc, ", "), fmt::join(ax.strategies, ", "), fmt::join(dtypes, ","), ax.kv_len,
                     res.counts.combinations, res.counts.ok);
}

// A best entry's verdict is known only when there is a plain-decoding baseline to beat.
bool known(const SweepBest& b) { return b.row && b.plain_row; }
bool pays_off(const SweepBest& b) { return known(b) && b.speedup_vs_best_plain > 1.0; }

// Which strategy is best most often at the most optimistic acceptance swept, and per acceptance
// on how many model × topology pairs speculation (EAGLE-3 or MTP) beats the fastest plain decoding.
json summary_parts(const SweepResults& res) {
  const SweepAxes& ax = res.axes;
  const Acceptance& last = ax.acceptances.back();
  std::map<std::string, int> wins;
  int pairs = 0;
  for (const SweepBest& b : res.best)
    if (b.row && same(b.acceptance, last)) ++wins[res.row(*b.row).strategy], ++pairs;
  if (!pairs) return json::array({"Nothing in this sweep can run: see “Cannot run” below."});
  std::string winner;
  for (const std::string& s : ax.strategies)  // ties go to the strategy listed first
    if (wins.count(s) && (winner.empty() || wins[s] > wins[winner])) winner = s;
  std::vector<std::string> per_acceptance;
  for (const Acceptance& a : ax.acceptances) {
    int runs = 0, pays = 0;
    for (const SweepBest& b : res.best)
      if (b.row && same(b.acceptance, a)) ++runs, pays += pays_off(b);
    per_acceptance.push_back(fmt::format("{} of {} pairs at {}", pays, runs, short_acceptance(a)));
  }
  return json::array({"Winning allreduce strategy: ", winner,
                      fmt::format(" (best in {} of {} model × topology pairs that can run, at {}). {} beats the "
                                  "fastest plain decoding in {}.",
                                  wins[winner], pairs, short_acceptance(last), ax.drafting(),
                                  fmt::join(per_acceptance, ", "))});
}

json model_verdict(const SweepResults& res, std::size_t m) {
  const SweepAxes& ax = res.axes;
  const std::string& model = ax.models[m];
  const std::string label = model + (ax.draft_models[m].empty() ? "" : " + " + ax.draft_models[m]);
  std::vector<const SweepBest*> mine;
  for (const SweepBest& b : res.best)
    if (b.model == model && b.row) mine.push_back(&b);
  if (mine.empty())
    return verdict_json("none", label, "Does not fit anywhere",
                        json::array({"No topology in the sweep can run this model; see “Cannot run”."}), {});
  // The verdict is taken at the most optimistic acceptance at which the model runs somewhere.
  const Acceptance* at = nullptr;
  for (const Acceptance& a : ax.acceptances)
    for (const SweepBest* b : mine)
      if (same(b->acceptance, a)) at = &a;
  const SweepBest* top = nullptr;   // the fastest
  for (const SweepBest* b : mine) {
    if (!same(b->acceptance, *at)) continue;
    if (!top || res.row(*b->row).tokens_per_s > res.row(*top->row).tokens_per_s) top = b;
  }
  const SweepRow& r = res.row(*top->row);
  // The headline speaks for the fastest box, not for the largest gain: a slow box (PCIe without
  // P2P) gains most from speculation because its plain decoding is slow, and is still the slowest.
  const std::string state = !known(*top) ? "none" : pays_off(*top) ? "good" : "bad";
  const std::string big =
      !known(*top) ? fmt::format("Best: {:.1f} tok/s", r.tokens_per_s)
      : pays_off(*top)
          ? fmt::format("{} pays off on the fastest box, {}: {:.2f}× plain decoding", ax.drafting(m), top->topology,
                        top->speedup_vs_best_plain)
          : fmt::format("{} does not pay off on the fastest box, {}: {:.2f}× plain decoding", ax.drafting(m),
                        top->topology, top->speedup_vs_best_plain);
  json detail = json::array(
      {fmt::format("Fastest at {}: ", short_acceptance(*at)), top->topology, ", ", r.strategy,
       fmt::format(", TP {}, N={}, {} weights → ", r.tp, r.draft_tokens, to_string(r.weight_dtype)),
       fmt::format("{:.1f} tok/s", r.tokens_per_s),
       top->plain_row ? fmt::format(" against {:.1f} tok/s for the fastest plain decoding there.", top->best_plain_tokens_per_s)
                      : std::string(" (no plain decoding step to compare with).")});
  std::vector<std::string> bullets;
  for (const Acceptance& a : ax.acceptances) {
    int topologies = 0, pays = 0;
    const SweepBest* most = nullptr;
    for (const SweepBest* b : mine) {
      if (!same(b->acceptance, a)) continue;
      ++topologies;
      pays += pays_off(*b);
      if (known(*b) && (!most || b->speedup_vs_best_plain > most->speedup_vs_best_plain)) most = b;
    }
    std::string line = fmt::format("{}: pays off on {} of {} topologies", short_acceptance(a), pays, topologies);
    if (most) {
      const SweepRow& br = res.row(*most->row);
      line += fmt::format("; best {:.2f}× ({} on {}, TP {}, N={})", most->speedup_vs_best_plain, br.strategy,
                          most->topology, br.tp, br.draft_tokens);
    }
    bullets.push_back(line);
  }
  return verdict_json(state, label, big, std::move(detail), bullets);
}

// Per topology, the lowest break-even over every deployable configuration of the model that runs.
json model_breakeven(const SweepResults& res, const std::string& model) {
  json bars = json::array();
  for (const std::string& topo : res.axes.topologies) {
    const SweepRow* lowest = nullptr;
    bool runs = false;
    for (const SweepRow& r : res.rows) {
      if (r.model != model || r.topology != topo || !r.ok()) continue;
      runs = true;
      if (deployable(r.strategy) && r.breakeven_accept_rate &&
          (!lowest || *r.breakeven_accept_rate < *lowest->breakeven_accept_rate))
        lowest = &r;
    }
    if (lowest)
      bars.push_back(breakeven_bar(topo, lowest->breakeven_accept_rate, "ok",
                                   fmt::format("{}, TP {}, N={}, {}", lowest->strategy, lowest->tp,
                                               lowest->draft_tokens, to_string(lowest->weight_dtype)),
                                   res.axes.acceptances));
    else if (runs)
      bars.push_back(breakeven_bar(topo, std::nullopt, "never", "never pays off, whatever the acceptance",
                                   res.axes.acceptances));
    else
      bars.push_back(breakeven_bar(topo, std::nullopt, "unfit", "cannot run this model (see “Cannot run”)",
                                   res.axes.acceptances));
  }
  const auto& names = res.axes.models;
  const std::size_t m = static_cast<std::size_t>(std::find(names.begin(), names.end(), model) - names.begin());
  const std::string how = res.axes.drafting(m);
  return {{"model", model},
          {"title", "Break-even acceptance per topology: " + model},
          {"note", fmt::format("The lowest per-position acceptance rate at which {} beats plain decoding (same TP and "
                               "strategy), over every configuration that fits; lower bounds left out. A bar left of a "
                               "swept rate means {} pays off there.",
                               how, how)},
          {"bars", std::move(bars)}};
}

// tok/s as the JSON rounds them, so the chart's values equal the --json output's.
double thousandths(double v) { return round_to(v, 3); }

// Per model, topology and acceptance: the best configuration's total tok/s at each batch (the
// point labelled with its configuration) and the fastest plain decoding there, with the batch
// at which speculation stops paying.
json batch_charts(const SweepResults& res) {
  const SweepAxes& ax = res.axes;
  json charts = json::array();
  std::size_t li = 0;
  for (std::size_t first = 0; first < res.batch_best.size(); first += ax.batches.size(), ++li) {
    const SweepBatchBest& head = res.batch_best[first];
    json best = json::array(), plain = json::array();
    for (std::size_t i = first; i < first + ax.batches.size(); ++i) {
      const SweepBatchBest& b = res.batch_best[i];
      if (b.row) {
        const SweepRow& r = res.row(*b.row);
        best.push_back({{"batch", b.batch},
                        {"row", *b.row},
                        {"total_tokens_per_s", thousandths(r.total_tokens_per_s)},
                        {"label", fmt::format("{} {} TP{}", short_spec(r.spec), r.strategy, r.tp)},
                        {"pays", b.pays()}});
      }
      if (b.plain_row)
        plain.push_back({{"batch", b.batch}, {"row", *b.plain_row}, {"total_tokens_per_s", thousandths(b.plain_total_tokens_per_s)}});
    }
    const Acceptance& a = ax.acceptances[head.acceptance];
    const SweepPayLimit& limit = res.pay_limits[li];
    charts.push_back({{"model", ax.models[head.model]},
                      {"topology", ax.topologies[head.topology]},
                      {"acceptance", short_acceptance(a)},
                      {"batches", ax.batches},
                      {"best", std::move(best)},
                      {"plain", std::move(plain)},
                      {"limit", pay_limit_text(limit)},
                      {"stops_paying_at_batch", limit.stops_at_batch ? json(*limit.stops_at_batch) : json(nullptr)}});
  }
  return charts;
}

}  // namespace

json sweep_view(const SweepResults& res, std::vector<bool>* drawn_out) {
  const SweepAxes& ax = res.axes;
  json v;
  v["format"] = "eaglesim-report-view";
  v["version"] = 1;
  v["kind"] = "sweep";
  v["title"] = fmt::format("eaglesim sweep — {}", fmt::join(ax.models, ", "));
  v["subtitle"] = subtitle(res);
  v["strategies"] = strategies_json(ax.strategies);
  v["acceptances"] = acceptances_json(ax.acceptances);
  v["segments"] = segments_json();
  v["columns"] = columns_json(true);

  json verdicts = json::array();
  for (std::size_t m = 0; m < ax.models.size(); ++m) verdicts.push_back(model_verdict(res, m));
  v["headline"] = {{"summary", summary_parts(res)}, {"verdicts", std::move(verdicts)}};

  json explorer;
  explorer["initial_row"] = row_or_null(fastest_row(res.rows, [](const SweepRow&) { return true; }));
  json starts = json::array();
  for (const std::string& m : ax.models)
    starts.push_back({{"model", m}, {"row", row_or_null(fastest_row(res.rows, [&](const SweepRow& r) { return r.model == m; }))}});
  explorer["model_start"] = std::move(starts);
  std::vector<int> n = ax.draft_tokens;
  std::sort(n.begin(), n.end());
  n.erase(std::unique(n.begin(), n.end()), n.end());
  explorer["draft_tokens"] = n;
  explorer["plain"] = plain_json(res.rows);
  v["explorer"] = std::move(explorer);

  json breakeven = json::array();
  for (const std::string& m : ax.models) breakeven.push_back(model_breakeven(res, m));
  v["breakeven"] = std::move(breakeven);
  v["batch_charts"] = batch_charts(res);
  v["unfit"] = unfit_json(res.rows);

  // The rows the page holds: what the explorer draws and every row the page names.
  std::vector<std::size_t> named;
  collect_named_rows(v, named);
  for (const SweepBest& b : res.best)
    for (const auto& r : {b.row, b.plain_row, b.measured_row})
      if (r) named.push_back(*r);
  for (const SweepBatchBest& b : res.batch_best)
    for (const auto& r : {b.row, b.plain_row})
      if (r) named.push_back(*r);
  for (const SweepWaterfall& w : res.waterfalls) named.push_back(w.row);
  const std::vector<bool> drawn = sweep_page_rows(res, named);
  const auto held = static_cast<std::size_t>(std::count(drawn.begin(), drawn.end(), true));
  v["explorer"]["curves"] = curves_json(res.rows, &drawn);
  v["explorer"]["order"] = order_json(res.rows, &drawn);
  v["page_rows"] = {{"held", held},
                    {"total", res.rows.size()},
                    {"note", held == res.rows.size()
                                 ? std::string()
                                 : fmt::format("This page holds {} of the sweep's {} rows: the fastest num_steps of each "
                                               "setting the explorer offers, and every row named elsewhere on the page. "
                                               "The CSV and --json have them all.",
                                               held, res.rows.size())}};
  if (drawn_out) *drawn_out = drawn;
  return v;
}

}  // namespace eaglesim::html
