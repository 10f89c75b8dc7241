#pragma once
// Which of a sweep's rows its HTML page holds. The page draws, per setting of its explorer
// (model, topology, weights, TP, batch, eagle_topk, acceptance) and per draft-token count and
// strategy, one configuration: so it holds the fastest row of each such cell (over what the
// explorer does not choose, num_steps), a cell where nothing runs by its first row (the page lists
// why), and every row the rest of the page names (best picks, plain baselines, waterfalls). A
// grid of many num_steps values thus gives a page the size of what it draws; every row stays in
// the CSV and the --json document.
#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweep/sweep_result.hpp"

namespace eaglesim::html {

// drawn[i]: whether row i is on the page. `named` lists rows the page model points at.
std::vector<bool> sweep_page_rows(const SweepResults& res, const std::vector<std::size_t>& named);

// Every row index a page-model document points at: the integers under keys "row", "plain_row",
// "measured_row", "best_row" and "initial_row", at any depth.
void collect_named_rows(const nlohmann::ordered_json& doc, std::vector<std::size_t>& out);

}  // namespace eaglesim::html
