#pragma once
// The printers of `eaglesim serve`: the benchmark-style summary (bench_serving's labels, plain and
// EAGLE-3 side by side), its JSON (docs/serving.md), one CSV row per simulated request, and a
// Chrome/Perfetto timeline of the engine's iterations.
#include <string>

#include "serve/serve_report.hpp"

namespace eaglesim {

// One report per deployment (topology x TP); `skipped`: the deployments that could not run, why.
// Several deployments add a summary table (and, with --slo, the capacity and GPUs per deployment).
std::string serve_to_text(const std::vector<ServeReport>& reports, const std::vector<std::string>& skipped);
std::string serve_to_json(const std::vector<ServeReport>& reports, const std::vector<std::string>& skipped);
std::string serve_requests_csv(const std::vector<ServeReport>& reports);
// Iterations as complete events, one track per deployment and configuration; needs the runs'
// iteration records.
std::string serve_timeline_json(const std::vector<ServeReport>& reports);

// The benchmarks' keys of a summary with their values (bench_serving's names), in print order.
std::vector<std::pair<std::string, double>> metrics_by_key(const ServeMetrics& m);

}  // namespace eaglesim
