#pragma once
// Capacity under a latency target: the highest request rate (Poisson arrivals) or the highest
// client concurrency at which a configuration's simulated run meets every bound of the SLO
// (`--slo mean_tpot_ms=50,p99_ttft_ms=2000`; the keys are the benchmarks' own). Latencies grow
// with load, so the search doubles the load until a bound breaks, then bisects (a rate to 1 %,
// a concurrency to 1).
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "serve/serving_metrics.hpp"

namespace eaglesim {

struct SloBound {
  std::string key;   // e.g. "mean_tpot_ms"
  double limit = 0;  // ms
};

// "tpot_ms=50,ttft_ms=2000": a key without a statistic is its mean ("tpot_ms" = "mean_tpot_ms").
// InputError naming --slo for an unknown key, a missing or non-positive value, or bounds of which
// none is on TTFT or end-to-end latency (where queueing past saturation shows).
std::vector<SloBound> parse_slo(const std::string& text);
std::string describe(const std::vector<SloBound>& slo);

// The first bound `m` breaks, in words ("mean_tpot_ms 61.2 > 50"); empty when it meets all.
std::string slo_violation(const ServeMetrics& m, const std::vector<SloBound>& slo);

enum class LoadAxis { request_rate, concurrency };

struct CapacityResult {
  std::optional<double> load;        // the highest load meeting the SLO; none: not even the lowest
  std::optional<ServeMetrics> at;    // the run at that load
  std::string limit;                 // what breaks just above it (or at the lowest load)
  int runs = 0;
};

// `simulate(load)` runs the workload at a load (requests/s or concurrent requests).
CapacityResult find_capacity(const std::function<ServeMetrics(double)>& simulate, const std::vector<SloBound>& slo,
                             LoadAxis axis, double max_load);

}  // namespace eaglesim
