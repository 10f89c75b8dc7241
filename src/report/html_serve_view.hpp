#pragma once
// The page model of `eaglesim serve --report`: per run (deployment x load) the benchmark summary
// table (bench_serving's labels, one column per configuration, the measured column with
// --compare), the latency distributions as cumulative curves (TTFT, TPOT and end-to-end latency
// from every request, ITL from the run's histogram), the requests in flight over time, and the
// capacity under the SLO. Curves are thinned to at most a few hundred points each: the page draws
// what the benchmark's percentiles summarise, not every request.
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/serve_report.hpp"

namespace eaglesim::html {

nlohmann::ordered_json serve_view(const std::vector<ServeReport>& reports, const std::vector<std::string>& skipped);

}  // namespace eaglesim::html
