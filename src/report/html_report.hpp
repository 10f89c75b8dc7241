#pragma once
// Self-contained HTML reports: one file, no network access needed (no CDN, no web fonts). The
// page embeds the document --json writes for the same run (<script type="application/json"
// id="eaglesim-data">, unchanged), the page model computed from it (id="eaglesim-view",
// report/html_view.hpp), the per-rank timelines for the waterfall (id="eaglesim-timelines"), and
// the script (src/report/assets/) and chart library (uPlot, third_party/uplot/) that draw them.
// Callers write the text with write_file_atomic.
#include <string>

#include <vector>

#include "domain/report.hpp"
#include "serve/serve_report.hpp"
#include "sweep/sweep_result.hpp"

namespace eaglesim {

// `eaglesim run --report`: the strategies of one scenario. The waterfall shows the verify
// timelines present in the results (run with RunOptions::want_timeline to have them).
std::string render_html_report(const Report& report);

// `eaglesim sweep --report`: the whole grid, the best configuration per model and topology,
// and the waterfall of each model's fastest configuration.
std::string render_sweep_html_report(const SweepResults& results);

// `eaglesim serve --report`: per run (deployment x load) the benchmark summary, the latency
// distributions, the requests in the engine over time and the capacity (html_serve_view.hpp).
std::string render_serve_html_report(const std::vector<ServeReport>& reports, const std::vector<std::string>& skipped);

}  // namespace eaglesim
