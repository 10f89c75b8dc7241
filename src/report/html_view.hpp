#pragma once
// The page model of the HTML reports (<script type="application/json" id="eaglesim-view">, schema
// in docs/report-format.md): everything a report shows that is not a plain field of the --json
// document — verdicts, which row is best, the acceptance curves, break-even bars, the plain-
// decoding baselines, the strategy facts and order — so that the page's script only reads,
// filters and draws. The --json document is embedded beside it, a sweep's with the rows the page
// holds only (sweep_page_rows.hpp), packed (html_report.cpp).
#include <vector>

#include <nlohmann/json.hpp>

#include "domain/report.hpp"
#include "sweep/sweep_result.hpp"

namespace eaglesim::html {

nlohmann::ordered_json run_view(const Report& report);
// drawn: set to which rows the page holds (sweep_page_rows.hpp) when given.
nlohmann::ordered_json sweep_view(const SweepResults& results, std::vector<bool>* drawn = nullptr);

}  // namespace eaglesim::html
