#include "report/serve_output.hpp"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/rounding.hpp"
#include "sweep/parallel_layout.hpp"

namespace eaglesim {

namespace {

using json = nlohmann::ordered_json;

struct Line {
  const char* label;
  const char* key;
  int digits;
};

// bench_serving's summary, in its order and with its labels.
const Line kLines[] = {
    {"Successful requests:", "completed", 0},
    {"Benchmark duration (s):", "duration", 2},
    {"Total input tokens:", "total_input_tokens", 0},
    {"Total generated tokens:", "total_output_tokens", 0},
    {"Request throughput (req/s):", "request_throughput", 2},
    {"Input token throughput (tok/s):", "input_throughput", 2},
    {"Output token throughput (tok/s):", "output_throughput", 2},
    {"Total token throughput (tok/s):", "total_throughput", 2},
    {"Concurrency:", "concurrency", 2},
    {"Accept length:", "accept_length", 2},
    {"Mean E2E Latency (ms):", "mean_e2e_latency_ms", 2},
    {"Median E2E Latency (ms):", "median_e2e_latency_ms", 2},
    {"P99 E2E Latency (ms):", "p99_e2e_latency_ms", 2},
    {"Mean TTFT (ms):", "mean_ttft_ms", 2},
    {"Median TTFT (ms):", "median_ttft_ms", 2},
    {"P99 TTFT (ms):", "p99_ttft_ms", 2},
    {"Mean TPOT (ms):", "mean_tpot_ms", 2},
    {"Median TPOT (ms):", "median_tpot_ms", 2},
    {"P99 TPOT (ms):", "p99_tpot_ms", 2},
    {"Mean ITL (ms):", "mean_itl_ms", 2},
    {"Median ITL (ms):", "median_itl_ms", 2},
    {"P99 ITL (ms):", "p99_itl_ms", 2},
};

double value_of(const std::vector<std::pair<std::string, double>>& kv, const std::string& key, bool* found = nullptr) {
  for (const auto& [k, v] : kv)
    if (k == key) {
      if (found) *found = true;
      return v;
    }
  if (found) *found = false;
  return 0;
}

std::string rules_text(const SchedulerRules& r) {
  const bool vllm = r.engine == ServingEngine::vllm;
  return fmt::format("{} {}, {} {}, KV cache {} tokens{}", vllm ? "max_num_batched_tokens" : "chunked_prefill_size",
                     r.token_budget, vllm ? "max_num_seqs" : "max_running_requests", r.max_running_requests,
                     r.kv_capacity_tokens, r.dp > 1 ? fmt::format(" per DP rank ({} ranks)", r.dp) : "");
}

// "TP16", "TP16 EP16 DPA": the deployment's layout, as sweep labels it.
std::string layout_text(const ServeReport& r) { return layout_label({r.tp, r.ep, r.dp_attention}); }

json rules_json(const SchedulerRules& r, const KvCapacity& kv) {
  return {{"engine", to_string(r.engine)},
          {"token_budget", r.token_budget},
          {"max_running_requests", r.max_running_requests},
          {"mixed_batches", r.mixed_batches},
          {"mem_fraction", r.mem_fraction},
          {"kv_capacity_tokens", r.kv_capacity_tokens},
          {"dp_ranks", r.dp},
          {"kv_bytes_per_token", round_to(kv.bytes_per_token, 1)},
          {"weights_gb_per_gpu", round_to(kv.weights_gb, 3)},
          {"kv_pool_gb_per_gpu", round_to(kv.pool_gb, 3)},
          {"sources", r.sources}};
}

// Requests per second one instance serves within the SLO: the highest Poisson rate meeting it, or
// at the highest concurrency meeting it, the run's request throughput.
double sustained(const ServeReport& r, const CapacityResult& cap) {
  if (!cap.load || !cap.at) return 0;
  return r.capacity_axis == LoadAxis::request_rate ? *cap.load : cap.at->request_throughput;
}

// "8/s", "c64", "inf": the load a run was driven at.
std::string load_label(const WorkloadSpec& w) {
  if (std::isfinite(w.request_rate))
    return fmt::format("{:g}/s", w.request_rate) + (w.max_concurrency ? fmt::format(" c{}", w.max_concurrency) : "");
  return w.max_concurrency ? fmt::format("c{}", w.max_concurrency) : "inf";
}

// Per deployment run at several loads: the first load, in the order given, at which EAGLE-3 stops
// paying: its output tok/s more than 1 % below plain decoding's (below saturation both serve what
// arrives), or its mean TPOT above plain's.
std::string speculation_limits(const std::vector<ServeReport>& reports) {
  std::string out;
  for (std::size_t i = 0; i < reports.size();) {
    std::size_t j = i;
    while (j < reports.size() && reports[j].topology == reports[i].topology && reports[j].tp == reports[i].tp &&
           reports[j].ep == reports[i].ep && reports[j].dp_attention == reports[i].dp_attention)
      ++j;
    if (j - i > 1 && reports[i].cases.size() > 1 && !reports[i].cases.front().speculative) {
      std::string where;
      for (std::size_t k = i; k < j && where.empty(); ++k) {
        const ServeMetrics& plain = reports[k].cases.front().metrics;
        const ServeMetrics& spec = reports[k].cases.back().metrics;
        if (plain.output_throughput > 0 &&
            (spec.output_throughput < 0.99 * plain.output_throughput || spec.tpot.mean_ms > plain.tpot.mean_ms))
          where = fmt::format("stops paying at {} ({:.2f}x output tok/s, mean TPOT {:.1f} against {:.1f} ms)",
                              load_label(reports[k].workload), spec.output_throughput / plain.output_throughput,
                              spec.tpot.mean_ms, plain.tpot.mean_ms);
      }
      out += fmt::format("{} {}: speculation {}\n", reports[i].topology, layout_text(reports[i]),
                         where.empty() ? "pays at every load run" : where);
    }
    i = j;
  }
  return out;
}

// Instances of the report's TP that serve its --traffic within the SLO; 0 when not asked or not
// known (nothing met the SLO).
double instances_needed(const ServeReport& r, const CapacityResult& cap) {
  const double per = sustained(r, cap);
  return r.traffic > 0 && per > 0 ? std::ceil(r.traffic / per - 1e-9) : 0.0;
}

}  // namespace

std::vector<std::pair<std::string, double>> metrics_by_key(const ServeMetrics& m) {
  std::vector<std::pair<std::string, double>> out = {
      {"completed", static_cast<double>(m.completed)},
      {"duration", m.duration_s},
      {"total_input_tokens", static_cast<double>(m.total_input_tokens)},
      {"total_output_tokens", static_cast<double>(m.total_output_tokens)},
      {"request_throughput", m.request_throughput},
      {"input_throughput", m.input_throughput},
      {"output_throughput", m.output_throughput},
      {"total_throughput", m.total_throughput},
      {"concurrency", m.concurrency},
      {"accept_length", m.accept_length},
  };
  for (const char* stat : {"mean", "median", "p99"})
    for (const char* what : {"e2e_latency", "ttft", "tpot", "itl"}) {
      const std::string key = fmt::format("{}_{}_ms", stat, what);
      out.emplace_back(key, *metric_by_key(m, key));
    }
  return out;
}

static std::string report_text(const ServeReport& r) {
  std::string s;
  s += fmt::format("serve: {} {} ({}) on {}, {} engine, allreduce {}{}\n", r.model, layout_text(r), r.weights, r.topology,
                   r.engine, r.strategy, r.dp_attention ? fmt::format(", all-to-all {}", r.a2a) : "");
  s += fmt::format("workload: {}\n", r.workload_text);
  for (const ServeCase& c : r.cases)
    s += fmt::format("  {}: {}{}\n", c.label, rules_text(c.rules),
                     c.speculative ? fmt::format(", mean accept length {:.2f}", c.accept_len) : "");
  s += fmt::format("priced {} engine steps in {:.2f} s, simulated in {:.2f} s\n", r.grid_points, r.pricing_s,
                   r.simulation_s);
  for (const std::string& n : r.notes) s += "note: " + n + "\n";

  const bool measured = r.measured.has_value();
  std::vector<std::vector<std::pair<std::string, double>>> values;
  for (const ServeCase& c : r.cases) values.push_back(metrics_by_key(c.metrics));
  s += "\n============ Serving Benchmark Result (predicted) ============\n";
  s += fmt::format("{:<34}", "");
  for (const ServeCase& c : r.cases) s += fmt::format("{:>16}", c.label);
  if (measured) s += fmt::format("{:>16}{:>9}", "measured", "error");
  s += "\n";
  for (const Line& l : kLines) {
    const bool spec_only = std::string(l.key) == "accept_length";
    s += fmt::format("{:<34}", l.label);
    for (std::size_t i = 0; i < r.cases.size(); ++i) {
      if (spec_only && !r.cases[i].speculative) s += fmt::format("{:>16}", "-");
      else s += fmt::format("{:>16.{}f}", value_of(values[i], l.key), l.digits);
    }
    if (measured) {
      bool found = false;
      const double v = value_of(r.measured->values, l.key, &found);
      if (found) {
        const double predicted = value_of(values.back(), l.key);
        s += fmt::format("{:>16.{}f}", v, l.digits);
        s += v != 0 ? fmt::format("{:>+8.1f}%", (predicted / v - 1) * 100) : fmt::format("{:>9}", "");
      }
    }
    s += "\n";
  }
  s += "==============================================================\n";
  if (r.cases.size() > 1 && r.cases.front().metrics.output_throughput > 0) {
    const ServeMetrics& plain = r.cases.front().metrics;
    for (std::size_t i = 1; i < r.cases.size(); ++i) {
      const ServeMetrics& m = r.cases[i].metrics;
      const double speedup = m.output_throughput / plain.output_throughput;
      s += fmt::format("{} vs plain: output tok/s {:.2f}x, mean TPOT {:.2f}x, mean TTFT {:.2f}x — speculation {}\n",
                       r.cases[i].label, speedup, m.tpot.mean_ms > 0 ? plain.tpot.mean_ms / m.tpot.mean_ms : 0.0,
                       m.ttft.mean_ms > 0 ? plain.ttft.mean_ms / m.ttft.mean_ms : 0.0,
                       speedup > 1.0 ? "pays at this load" : "does not pay at this load");
    }
  }
  if (measured)
    s += fmt::format("measured: {} (compared with the last column: {})\n", r.measured->file, r.cases.back().label);
  if (!r.slo.empty()) {
    const bool rate = r.capacity_axis == LoadAxis::request_rate;
    s += fmt::format("\ncapacity under {} ({} searched):\n", describe(r.slo), rate ? "Poisson request rate" : "concurrency");
    for (const ServeCase& c : r.cases) {
      if (!c.capacity) continue;
      const CapacityResult& cap = *c.capacity;
      if (!cap.load) {
        s += fmt::format("  {:<16} nothing meets it: {} at the lowest load\n", c.label, cap.limit);
        continue;
      }
      s += fmt::format("  {:<16} {} {}: {:.1f} output tok/s, {:.2f} req/s per instance ({} GPUs); above it {}\n",
                       c.label, rate ? fmt::format("{:.2f} req/s", *cap.load) : fmt::format("{:.0f}", *cap.load),
                       rate ? "max rate" : "max concurrency", cap.at->output_throughput, cap.at->request_throughput, r.tp,
                       cap.limit.empty() ? "(the largest load searched)" : cap.limit);
      if (const double instances = instances_needed(r, cap); instances > 0) {
        s += fmt::format("  {:<16} {:g} req/s needs {:.0f} instance{} = {:.0f} GPUs\n", "", r.traffic, instances,
                         instances == 1 ? "" : "s", instances * r.tp);
      }
    }
  }
  return s;
}

static json report_json(const ServeReport& r) {
  json j;
  j["deployment"] = {{"model", r.model}, {"draft_model", r.draft_model}, {"topology", r.topology}, {"gpu", r.gpu},
                     {"tp", r.tp}, {"ep", r.ep}, {"dp_attention", r.dp_attention}, {"layout", layout_text(r)},
                     {"weights", r.weights}, {"engine", r.engine}, {"strategy", r.strategy}};
  if (r.dp_attention) j["deployment"]["a2a"] = r.a2a;
  const WorkloadSpec& w = r.workload;
  j["workload"] = {{"num_prompts", w.num_prompts},
                   {"dataset", w.lengths_file.empty() ? "random" : w.lengths_file},
                   {"random_input_len", w.input_len},
                   {"random_output_len", w.output_len},
                   {"random_range_ratio", w.range_ratio},
                   {"request_rate", std::isfinite(w.request_rate) ? json(w.request_rate) : json("inf")},
                   {"burstiness", w.burstiness},
                   {"max_concurrency", w.max_concurrency > 0 ? json(w.max_concurrency) : json(nullptr)},
                   {"seed", w.seed}};
  json cases = json::array();
  for (const ServeCase& c : r.cases) {
    json cj;
    cj["label"] = c.label;
    cj["speculative"] = c.speculative;
    if (c.speculative)
      cj["spec"] = {{"num_steps", c.num_steps}, {"eagle_topk", c.eagle_topk}, {"num_draft_tokens", c.num_draft_tokens},
                    {"mean_accept_len_given", c.accept_len}};
    cj["engine_rules"] = rules_json(c.rules, c.kv);
    json m = json::object();
    for (const auto& [k, v] : metrics_by_key(c.metrics)) m[k] = round_to(v, 4);
    m["peak_running_requests"] = c.metrics.peak_running;
    m["retractions"] = c.metrics.retractions;
    m["prefill_forwards"] = c.run.prefill_forwards;
    m["decode_forwards"] = c.run.decode_forwards;
    m["mixed_forwards"] = c.run.mixed_forwards;
    cj["metrics"] = std::move(m);
    if (c.capacity) {
      json cap = {{"axis", r.capacity_axis == LoadAxis::request_rate ? "request_rate" : "max_concurrency"},
                  {"load", c.capacity->load ? json(round_to(*c.capacity->load, 4)) : json(nullptr)},
                  {"limit", c.capacity->limit},
                  {"runs", c.capacity->runs}};
      if (const double instances = instances_needed(r, *c.capacity); instances > 0) {
        cap["traffic"] = r.traffic;
        cap["instances"] = instances;
        cap["gpus"] = instances * r.tp;
      }
      if (c.capacity->at) {
        json at = json::object();
        for (const auto& [k, v] : metrics_by_key(*c.capacity->at)) at[k] = round_to(v, 4);
        cap["metrics"] = std::move(at);
      }
      cj["capacity"] = std::move(cap);
    }
    cases.push_back(std::move(cj));
  }
  j["cases"] = std::move(cases);
  if (!r.slo.empty()) {
    json slo = json::object();
    for (const SloBound& b : r.slo) slo[b.key] = b.limit;
    j["slo"] = std::move(slo);
  }
  if (r.measured) {
    json m = json::object();
    for (const auto& [k, v] : r.measured->values) m[k] = v;
    j["measured"] = {{"file", r.measured->file}, {"compared_with", r.cases.back().label}, {"values", std::move(m)}};
  }
  j["notes"] = r.notes;
  return j;
}

std::string serve_to_text(const std::vector<ServeReport>& reports, const std::vector<std::string>& skipped) {
  std::string s;
  for (const ServeReport& r : reports) s += (s.empty() ? "" : "\n\n") + report_text(r);
  if (reports.size() > 1 || !skipped.empty()) {
    const bool capacity = !reports.front().slo.empty();
    const bool rate = reports.front().capacity_axis == LoadAxis::request_rate;
    const double traffic = reports.front().traffic;
    s += "\n\nper deployment";
    s += capacity ? fmt::format(" (capacity under {})", describe(reports.front().slo)) : " (the workload above)";
    s += ":\n";
    if (capacity) {
      // Under an SLO the figures are at each configuration's highest load meeting it.
      s += fmt::format("{:<30} {:>3} {:<16} {:>12} {:>12} {:>10} {:>9}", "topology", "TP", "configuration",
                       rate ? "max req/s" : "max conc.", "out tok/s", "mean TPOT", "vs plain");
      if (traffic > 0) s += fmt::format(" {:>14}", fmt::format("GPUs@{:g}/s", traffic));
      s += "\n";
    } else {
      s += fmt::format("{:<30} {:>3} {:>9} {:<16} {:>11} {:>11} {:>11} {:>9}\n", "topology", "TP", "load", "configuration",
                       "out tok/s", "mean TPOT", "p99 TTFT", "vs plain");
    }
    for (std::size_t ri = 0; ri < reports.size(); ++ri) {
      const ServeReport& r = reports[ri];
      // The capacity does not depend on the load a run was driven at: one row per deployment.
      if (capacity && ri > 0 && reports[ri - 1].topology == r.topology && reports[ri - 1].tp == r.tp) continue;
      for (const ServeCase& c : r.cases) {
        const bool vs = c.speculative && !r.cases.front().speculative;
        if (!capacity) {
          const double plain = r.cases.front().metrics.output_throughput;
          s += fmt::format("{:<30} {:>3} {:>9} {:<16} {:>11.1f} {:>11.2f} {:>11.1f} {:>9}\n", r.topology, r.tp,
                           load_label(r.workload), c.label, c.metrics.output_throughput, c.metrics.tpot.mean_ms,
                           c.metrics.ttft.p99_ms,
                           vs && plain > 0 ? fmt::format("{:.2f}x", c.metrics.output_throughput / plain) : "");
          continue;
        }
        const auto load_of = [&](const ServeCase& x) { return x.capacity ? sustained(r, *x.capacity) : 0.0; };
        s += fmt::format("{:<30} {:>3} {:<16}", r.topology, r.tp, c.label);
        if (c.capacity && c.capacity->load)
          s += fmt::format(" {:>12} {:>12.1f} {:>10.2f} {:>9}", fmt::format(rate ? "{:.2f}" : "{:.0f}", *c.capacity->load),
                           c.capacity->at->output_throughput, c.capacity->at->tpot.mean_ms,
                           vs && load_of(r.cases.front()) > 0 ? fmt::format("{:.2f}x", load_of(c) / load_of(r.cases.front())) : "");
        else
          s += fmt::format(" {:>12} {:>12} {:>10} {:>9}", "none", "", "", "");
        if (traffic > 0) {
          const double instances = c.capacity ? instances_needed(r, *c.capacity) : 0.0;
          s += fmt::format(" {:>14}", instances > 0 ? fmt::format("{:.0f}", instances * r.tp) : "-");
        }
        s += "\n";
      }
    }
    s += speculation_limits(reports);
    for (const std::string& why : skipped) s += "cannot run: " + why + "\n";
  }
  return s;
}

std::string serve_to_json(const std::vector<ServeReport>& reports, const std::vector<std::string>& skipped) {
  json j;
  j["format"] = "eaglesim-serve";
  j["version"] = 1;
  json runs = json::array();
  for (const ServeReport& r : reports) runs.push_back(report_json(r));
  j["runs"] = std::move(runs);
  j["skipped"] = skipped;
  return j.dump(2) + "\n";
}

std::string serve_requests_csv(const std::vector<ServeReport>& reports) {
  std::string s = "topology,tp,case,request,input_len,output_len,sent_s,ttft_ms,e2e_latency_ms,tpot_ms,cycles,retractions\n";
  for (const ServeReport& r : reports)
    for (const ServeCase& c : r.cases)
      for (std::size_t i = 0; i < c.run.requests.size(); ++i) {
        const RequestRecord& q = c.run.requests[i];
        const double e2e = q.finish_s - q.sent_s, ttft = q.first_token_s - q.sent_s;
        const double tpot = q.output_len > 1 ? (e2e - ttft) / static_cast<double>(q.output_len - 1) : 0.0;
        s += fmt::format("{},{},{},{},{},{},{:.6f},{:.3f},{:.3f},{:.3f},{},{}\n", r.topology, r.tp, c.label, i, q.input_len,
                         q.output_len, q.sent_s, ttft * 1e3, e2e * 1e3, tpot * 1e3, q.cycles, q.retractions);
      }
  return s;
}

std::string serve_timeline_json(const std::vector<ServeReport>& reports) {
  json events = json::array();
  std::size_t pid = 0;
  for (const ServeReport& r : reports)
    for (const ServeCase& sc : r.cases) {
      events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid},
                        {"args", {{"name", fmt::format("{} TP{} {}", r.topology, r.tp, sc.label)}}}});
      for (const IterationRecord& it : sc.run.iterations)
        events.push_back({{"ph", "X"},
                          {"name", to_string(it.kind)},
                          {"pid", pid},
                          {"tid", 0},
                          {"ts", round_to(it.start_s * 1e6, 3)},
                          {"dur", round_to((it.end_s - it.start_s) * 1e6, 3)},
                          {"args",
                           {{"decode_requests", it.decode_requests},
                            {"prefill_requests", it.prefill_requests},
                            {"prefill_tokens", it.prefill_tokens},
                            {"mean_kv", round_to(it.mean_kv, 1)}}}});
      ++pid;
    }
  return json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}}.dump() + "\n";
}

}  // namespace eaglesim
