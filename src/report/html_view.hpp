#pragma once
// The page model of the HTML reports (<script type="application/json" id="eaglesim-view">, schema
// in docs/report-format.md): everything a report shows that is not a plain field of the --json
// document — verdicts, which row is best, the acceptance curves, break-even bars, the plain-
// decoding baselines, the strategy facts and order — so that the page's script only reads,
// filters and draws. The --json document itself is embedded unchanged beside it.
#include <nlohmann/json.hpp>

#include "domain/report.hpp"
#include "sweep/sweep_result.hpp"

namespace eaglesim::html {

nlohmann::ordered_json run_view(const Report& report);
nlohmann::ordered_json sweep_view(const SweepResults& results);

}  // namespace eaglesim::html
