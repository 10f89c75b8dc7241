#include "report/html_serve_view.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "core/rounding.hpp"
#include "report/serve_output.hpp"

namespace eaglesim::html {

namespace {

using json = nlohmann::ordered_json;

// Quantiles per latency curve and samples of the requests in flight.
constexpr int kQuantiles = 200;
constexpr int kFlightPoints = 400;

// The quantile fractions every curve is drawn at: 0.5 %, 1 %, ... 100 %.
json quantile_axis() {
  json q = json::array();
  for (int i = 1; i <= kQuantiles; ++i) q.push_back(round_to(static_cast<double>(i) / kQuantiles, 5));
  return q;
}

// `values` (ms) at each quantile fraction, the nearest rank (the benchmarks' percentiles
// interpolate; at 200 points the curve is the same).
json quantiles(std::vector<double> values) {
  json out = json::array();
  if (values.empty()) return out;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  for (int i = 1; i <= kQuantiles; ++i) {
    const auto k = static_cast<std::size_t>(std::ceil(static_cast<double>(i) / kQuantiles * static_cast<double>(n)));
    out.push_back(round_to(values[std::min(n, std::max<std::size_t>(k, 1)) - 1], 3));
  }
  return out;
}

json itl_quantiles(const LatencyHistogram& h) {
  json out = json::array();
  if (!h.count()) return out;
  for (int i = 1; i <= kQuantiles; ++i) out.push_back(round_to(h.quantile(static_cast<double>(i) / kQuantiles) * 1e3, 3));
  return out;
}

// Requests in the engine (sent, not finished) at time t.
double in_flight_at(const std::vector<double>& sends, const std::vector<double>& finishes, double t) {
  const auto sent = std::upper_bound(sends.begin(), sends.end(), t) - sends.begin();
  const auto done = std::upper_bound(finishes.begin(), finishes.end(), t) - finishes.begin();
  return static_cast<double>(sent - done);
}

std::string load_text(const WorkloadSpec& w) {
  if (std::isfinite(w.request_rate))
    return fmt::format("{:g} req/s", w.request_rate) + (w.max_concurrency ? fmt::format(", at most {}", w.max_concurrency) : "");
  return w.max_concurrency ? fmt::format("{} concurrent", w.max_concurrency) : "all at once";
}

json run_view(const ServeReport& r) {
  json v;
  v["label"] = fmt::format("{} · TP {}{}{} · {}", r.topology, r.tp, r.ep > 1 ? fmt::format(" EP{}", r.ep) : "",
                           r.dp_attention ? " DPA" : "", load_text(r.workload));
  v["topology"] = r.topology;
  v["tp"] = r.tp;
  v["workload"] = r.workload_text;
  json configs = json::array();
  for (const ServeCase& c : r.cases) configs.push_back(c.label);
  v["configs"] = std::move(configs);
  // The summary, bench_serving's keys in its order, a value per configuration.
  json rows = json::array();
  const auto first = metrics_by_key(r.cases.front().metrics);
  for (std::size_t k = 0; k < first.size(); ++k) {
    json values = json::array();
    for (const ServeCase& c : r.cases)
      values.push_back(first[k].first == "accept_length" && !c.speculative ? json(nullptr)
                                                                            : json(round_to(metrics_by_key(c.metrics)[k].second, 3)));
    json row = {{"key", first[k].first}, {"values", std::move(values)}};
    if (r.measured)
      for (const auto& [key, value] : r.measured->values)
        if (key == first[k].first) row["measured"] = value;
    rows.push_back(std::move(row));
  }
  v["summary"] = std::move(rows);
  json dists = json::array();
  const auto per_request = [&](const char* key, const char* title, auto value_of) {
    json curves = json::array();
    for (const ServeCase& c : r.cases) {
      std::vector<double> values;
      for (const RequestRecord& q : c.run.requests)
        if (auto v = value_of(q)) values.push_back(*v * 1e3);
      curves.push_back({{"label", c.label}, {"values", quantiles(std::move(values))}});
    }
    dists.push_back({{"key", key}, {"title", title}, {"curves", std::move(curves)}});
  };
  per_request("ttft", "Time to first token", [](const RequestRecord& q) { return std::optional<double>(q.first_token_s - q.sent_s); });
  per_request("tpot", "Time per output token", [](const RequestRecord& q) {
    return q.output_len > 1 ? std::optional<double>((q.finish_s - q.first_token_s) / static_cast<double>(q.output_len - 1))
                            : std::nullopt;
  });
  per_request("e2e_latency", "End-to-end latency", [](const RequestRecord& q) { return std::optional<double>(q.finish_s - q.sent_s); });
  json itl = json::array();
  for (const ServeCase& c : r.cases) itl.push_back({{"label", c.label}, {"values", itl_quantiles(c.run.itl)}});
  dists.push_back({{"key", "itl"}, {"title", "Inter-token latency"}, {"curves", std::move(itl)}});
  v["quantiles"] = quantile_axis();
  v["distributions"] = std::move(dists);
  // In flight, on one time axis for every configuration (the longest run's).
  double end = 0;
  for (const ServeCase& c : r.cases)
    for (const RequestRecord& q : c.run.requests) end = std::max(end, q.finish_s);
  json times = json::array(), flight = json::array();
  for (int i = 0; i <= kFlightPoints; ++i) times.push_back(round_to(end * i / kFlightPoints, 4));
  for (const ServeCase& c : r.cases) {
    std::vector<double> sends, finishes;
    for (const RequestRecord& q : c.run.requests) sends.push_back(q.sent_s), finishes.push_back(q.finish_s);
    std::sort(sends.begin(), sends.end());
    std::sort(finishes.begin(), finishes.end());
    json values = json::array();
    for (const json& t : times) values.push_back(in_flight_at(sends, finishes, t.get<double>()));
    flight.push_back({{"label", c.label}, {"values", std::move(values)}});
  }
  v["in_flight"] = {{"times_s", std::move(times)}, {"curves", std::move(flight)}};
  json capacity = json::array();
  for (const ServeCase& c : r.cases)
    if (c.capacity)
      capacity.push_back({{"label", c.label},
                          {"load", c.capacity->load ? json(round_to(*c.capacity->load, 3)) : json(nullptr)},
                          {"output_throughput", c.capacity->at ? json(round_to(c.capacity->at->output_throughput, 1)) : json(nullptr)},
                          {"mean_tpot_ms", c.capacity->at ? json(round_to(c.capacity->at->tpot.mean_ms, 2)) : json(nullptr)},
                          {"p99_ttft_ms", c.capacity->at ? json(round_to(c.capacity->at->ttft.p99_ms, 1)) : json(nullptr)},
                          {"limit", c.capacity->limit}});
  v["capacity"] = std::move(capacity);
  v["notes"] = r.notes;
  return v;
}

}  // namespace

json serve_view(const std::vector<ServeReport>& reports, const std::vector<std::string>& skipped) {
  json v;
  v["format"] = "eaglesim-report-view";
  v["version"] = 1;
  v["kind"] = "serve";
  const ServeReport& first = reports.front();
  v["title"] = fmt::format("eaglesim serve — {} on {}", first.model, first.engine);
  v["subtitle"] = fmt::format("{} run{} · {}", reports.size(), reports.size() == 1 ? "" : "s", first.workload_text);
  v["slo"] = first.slo.empty() ? json(nullptr) : json(describe(first.slo));
  v["capacity_axis"] = first.capacity_axis == LoadAxis::request_rate ? "request_rate" : "max_concurrency";
  json runs = json::array();
  for (const ServeReport& r : reports) runs.push_back(run_view(r));
  v["runs"] = std::move(runs);
  v["skipped"] = skipped;
  // The headline: plain against EAGLE-3 on the first run.
  json summary = json::array();
  if (first.cases.size() > 1 && !first.cases.front().speculative && first.cases.front().metrics.output_throughput > 0) {
    const ServeMetrics& p = first.cases.front().metrics;
    const ServeMetrics& s = first.cases.back().metrics;
    summary = json::array({fmt::format("{} on {} TP{}, {}: ", first.cases.back().label, first.topology, first.tp,
                                       load_text(first.workload)),
                           fmt::format("{:.2f}× output tok/s", s.output_throughput / p.output_throughput),
                           fmt::format(" against plain decoding ({:.0f} against {:.0f}), mean TPOT ", s.output_throughput,
                                       p.output_throughput),
                           fmt::format("{:.1f} against {:.1f} ms", s.tpot.mean_ms, p.tpot.mean_ms),
                           fmt::format(", p99 TTFT {:.0f} against {:.0f} ms.", s.ttft.p99_ms, p.ttft.p99_ms)});
  } else {
    summary = json::array({fmt::format("{} on {} TP{}, {}: ", first.cases.front().label, first.topology, first.tp,
                                       load_text(first.workload)),
                           fmt::format("{:.0f} output tok/s", first.cases.front().metrics.output_throughput),
                           fmt::format(", mean TPOT {:.1f} ms.", first.cases.front().metrics.tpot.mean_ms)});
  }
  v["headline"] = {{"summary", std::move(summary)}, {"verdicts", json::array()}};
  return v;
}

}  // namespace eaglesim::html
