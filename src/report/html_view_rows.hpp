#pragma once
// Building blocks of the HTML page model shared by the run and sweep reports. Both reports are
// drawn from rows of the sweep's shape (a run is one model, topology, TP, N and acceptance under
// every strategy), so the best row, the plain-decoding baselines, the acceptance curves and the
// "cannot run" groups are computed once, here, for both.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweep/sweep_result.hpp"

namespace eaglesim::html {

using json = nlohmann::ordered_json;

// Not a lower bound (comm/strategy_facts): a strategy one could deploy, so a candidate for "best"
// and for the plain-decoding baseline.
bool deployable(const std::string& strategy);

// The strategies named, in the strategy table's order (unknown names last, as given), with the
// facts the page shows: [{name, lower_bound, exact, fuses_residual_norm, selector, description}].
json strategies_json(const std::vector<std::string>& names);

// [{mode, value, label, rate}]: label as tables show it ("a=0.70"); rate: a per-position rate
// (drawn as a marker on the acceptance axes), not a mean accepted length.
json acceptances_json(const std::vector<Acceptance>& acceptances);

// The parts of one cycle as the stacked bars show them, bottom to top: [{key, name, label}],
// key naming the row field.
json segments_json();

// The results table's columns: [{key, label, digits?, suffix?}]; `acceptance` names the column
// built from accept_mode/accept_value. Sweeps add the weight dtype and memory columns.
json columns_json(bool sweep);

// The row fields a sweep page reads: what the explorer selects and draws, the results table's
// columns and the cycle's parts. The page holds these only; the --json has every field.
std::vector<std::string> sweep_page_fields();

// Highest tok/s among the ok, deployable rows accepted by `keep` (lowest index on ties).
template <typename Keep>
std::optional<std::size_t> fastest_row(const std::vector<SweepRow>& rows, Keep keep) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].ok() && deployable(rows[i].strategy) && keep(rows[i]) &&
        (!best || rows[i].tokens_per_s > rows[*best].tokens_per_s))
      best = i;
  return best;
}
json row_or_null(const std::optional<std::size_t>& row);

// Indices of the ok rows, fastest first (the results table's order); with `drawn`, of the rows
// it marks only.
json order_json(const std::vector<SweepRow>& rows, const std::vector<bool>* drawn = nullptr);

// The acceptance curves: tokens per cycle of each ok row's draft shape as a function of the
// per-position acceptance rate (a chain: 1 + a + ... + a^N; a tree: the tree model's E at that
// rate, tree_breakeven.hpp), each shape once, and per row its shape and the factor from tokens per
// cycle to its tok/s (1e6 / cycle µs, 9 significant digits): {rates: [a...], shapes: [[E...]],
// rows: {"<row>": [shape, factor]}} (with `drawn`, the rows it marks only). The page draws
// shape × factor, rounded to 0.1 tok/s.
json curves_json(const std::vector<SweepRow>& rows, const std::vector<bool>* drawn = nullptr);

// Fastest plain decoding per model, topology, weight dtype, TP and batch over the deployable ok
// rows: [{model, topology, weight_dtype, tp, batch, tokens_per_s (per request), row}].
json plain_json(const std::vector<SweepRow>& rows);

// Rows that cannot run, grouped by model and reason in order of first appearance:
// [{model, status, reason, topologies, tps, strategies, count}].
json unfit_json(const std::vector<SweepRow>& rows);

// One bar of a break-even chart. state: ok (value set), never (runs, never pays off) or unfit.
json breakeven_bar(const std::string& label, std::optional<double> value, const std::string& state,
                   const std::string& detail, const std::vector<Acceptance>& swept);

// Text with emphasis for the page to set without parsing markup: the odd-numbered parts are
// shown bold. {"state", "model", "big", "detail": [parts], "bullets": [...]}.
json verdict_json(const std::string& state, const std::string& model, const std::string& big, json detail_parts,
                  const std::vector<std::string>& bullets);

// "12.3 µs", or "12.35 ms" from 10 ms on.
std::string format_us(double us);

}  // namespace eaglesim::html
