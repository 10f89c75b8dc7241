#pragma once
// A simulated run summarised the way SGLang's bench_serving and `vllm bench serve` summarise a
// real one, with their names and units: throughput in requests and tokens per second over the
// benchmark's duration (first request sent to last finished), and per-request latencies in ms —
// TTFT (sent to first token), TPOT ((end-to-end − TTFT) / (output tokens − 1), requests of more
// than one output token), ITL (the gaps between successive streamed chunks; a speculative cycle
// streams its accepted tokens as one chunk), end-to-end latency; concurrency as the benchmarks
// compute it (the sum of end-to-end latencies over the duration); accept length (tokens per
// request per speculative cycle). Percentiles interpolate linearly between order statistics, as
// numpy.percentile does.
#include <cstdint>
#include <string>

#include "serve/serving_simulator.hpp"

namespace eaglesim {

struct LatencyStats {
  double mean_ms = 0, median_ms = 0, p99_ms = 0;
};

struct ServeMetrics {
  std::size_t completed = 0;
  double duration_s = 0;
  std::int64_t total_input_tokens = 0, total_output_tokens = 0;
  double request_throughput = 0;  // req/s
  double input_throughput = 0;    // tok/s
  double output_throughput = 0;   // tok/s
  double total_throughput = 0;    // input + output tok/s
  LatencyStats ttft, tpot, itl, e2e;
  double concurrency = 0;
  double accept_length = 0;       // 0 without speculative decoding
  int peak_running = 0;
  std::size_t retractions = 0;
};

ServeMetrics serving_metrics(const ServeRun& run);

// Latency statistic by the benchmarks' key ("mean_tpot_ms", "p99_ttft_ms", ...); nullptr when the
// key names none.
const double* metric_by_key(const ServeMetrics& m, const std::string& key);

}  // namespace eaglesim
