#pragma once
// The printers of `eaglesim serve`: the benchmark-style summary (bench_serving's labels, plain and
// EAGLE-3 side by side), its JSON (docs/serving.md), one CSV row per simulated request, and a
// Chrome/Perfetto timeline of the engine's iterations.
#include <string>

#include "serve/serve_report.hpp"

namespace eaglesim {

std::string serve_to_text(const ServeReport& report);
std::string serve_to_json(const ServeReport& report);
std::string serve_requests_csv(const ServeReport& report);
// Iterations as complete events, one track per configuration; needs the runs' iteration records.
std::string serve_timeline_json(const ServeReport& report);

// The benchmarks' keys of a summary with their values (bench_serving's names), in print order.
std::vector<std::pair<std::string, double>> metrics_by_key(const ServeMetrics& m);

}  // namespace eaglesim
