#include "serve/serving_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace eaglesim {

namespace {

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = p / 100.0 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

LatencyStats stats_ms(std::vector<double> seconds) {
  LatencyStats s;
  if (seconds.empty()) return s;
  double sum = 0;
  for (double x : seconds) sum += x;
  s.mean_ms = sum / static_cast<double>(seconds.size()) * 1e3;
  s.median_ms = percentile(seconds, 50) * 1e3;
  s.p99_ms = percentile(seconds, 99) * 1e3;
  return s;
}

}  // namespace

ServeMetrics serving_metrics(const ServeRun& run) {
  ServeMetrics m;
  std::vector<double> ttft, tpot, e2e;
  double start = INFINITY, end = 0, latency_sum = 0;
  for (const RequestRecord& r : run.requests) {
    ++m.completed;
    m.total_input_tokens += r.input_len;
    m.total_output_tokens += r.output_len;
    start = std::min(start, r.sent_s);
    end = std::max(end, r.finish_s);
    const double latency = r.finish_s - r.sent_s;
    latency_sum += latency;
    ttft.push_back(r.first_token_s - r.sent_s);
    e2e.push_back(latency);
    if (r.output_len > 1) tpot.push_back((latency - (r.first_token_s - r.sent_s)) / static_cast<double>(r.output_len - 1));
  }
  m.duration_s = m.completed ? end - start : 0;
  if (m.duration_s > 0) {
    m.request_throughput = static_cast<double>(m.completed) / m.duration_s;
    m.input_throughput = static_cast<double>(m.total_input_tokens) / m.duration_s;
    m.output_throughput = static_cast<double>(m.total_output_tokens) / m.duration_s;
    m.total_throughput = m.input_throughput + m.output_throughput;
    m.concurrency = latency_sum / m.duration_s;
  }
  m.ttft = stats_ms(std::move(ttft));
  m.tpot = stats_ms(std::move(tpot));
  m.e2e = stats_ms(std::move(e2e));
  m.itl = {run.itl.mean() * 1e3, run.itl.quantile(0.5) * 1e3, run.itl.quantile(0.99) * 1e3};
  m.accept_length = run.spec_cycles ? static_cast<double>(run.spec_tokens) / static_cast<double>(run.spec_cycles) : 0;
  m.peak_running = run.peak_running;
  m.retractions = run.retractions;
  return m;
}

const double* metric_by_key(const ServeMetrics& m, const std::string& key) {
  const std::pair<const char*, const LatencyStats*> groups[] = {{"ttft", &m.ttft}, {"tpot", &m.tpot}, {"itl", &m.itl}, {"e2e_latency", &m.e2e}};
  for (const auto& [name, st] : groups) {
    const std::string n = name;
    if (key == "mean_" + n + "_ms") return &st->mean_ms;
    if (key == "median_" + n + "_ms") return &st->median_ms;
    if (key == "p99_" + n + "_ms") return &st->p99_ms;
  }
  return nullptr;
}

}  // namespace eaglesim
