#include "serve/capacity_search.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/comma_list.hpp"
#include "core/errors.hpp"

namespace eaglesim {

std::vector<SloBound> parse_slo(const std::string& text) {
  std::vector<SloBound> out;
  for (const std::string& item : split_comma_list("--slo", text)) {
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos)
      throw InputError(fmt::format("--slo: expected KEY=MS items such as tpot_ms=50,p99_ttft_ms=2000, got '{}'", item));
    std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    if (key == "ttft_ms" || key == "tpot_ms" || key == "itl_ms" || key == "e2e_latency_ms") key = "mean_" + key;
    if (!metric_by_key(ServeMetrics{}, key))
      throw InputError(fmt::format("--slo: unknown key '{}': expected mean_, median_ or p99_ followed by ttft_ms, "
                                   "tpot_ms, itl_ms or e2e_latency_ms (a bare ttft_ms is the mean)",
                                   item.substr(0, eq)));
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !(v > 0) || !std::isfinite(v))
      throw InputError(fmt::format("--slo: {}: expected a positive number of milliseconds, got '{}'", key, value));
    out.push_back({key, v});
  }
  if (out.empty()) throw InputError("--slo: expected at least one KEY=MS bound");
  // Past saturation requests queue: TTFT and end-to-end latency grow without bound while TPOT
  // stays where the engine's running-request cap holds it, so a load is only bounded by them.
  bool queueing = false;
  for (const SloBound& b : out)
    queueing = queueing || b.key.find("ttft") != std::string::npos || b.key.find("e2e") != std::string::npos;
  if (!queueing)
    throw InputError(fmt::format("--slo: {} bounds no latency that queueing shows in: add a TTFT or end-to-end bound "
                                 "(e.g. p99_ttft_ms=2000); past saturation requests wait while TPOT stays flat",
                                 text));
  return out;
}

std::string describe(const std::vector<SloBound>& slo) {
  std::string s;
  for (const SloBound& b : slo) s += fmt::format("{}{} <= {:g}", s.empty() ? "" : ", ", b.key, b.limit);
  return s;
}

std::string slo_violation(const ServeMetrics& m, const std::vector<SloBound>& slo) {
  for (const SloBound& b : slo) {
    const double v = *metric_by_key(m, b.key);
    if (v > b.limit) return fmt::format("{} {:.1f} > {:g}", b.key, v, b.limit);
  }
  return "";
}

CapacityResult find_capacity(const std::function<ServeMetrics(double)>& simulate, const std::vector<SloBound>& slo,
                             LoadAxis axis, double max_load) {
  CapacityResult r;
  const bool integral = axis == LoadAxis::concurrency;
  double good = 0, bad = 0;
  double load = integral ? 1 : 0.125;
  // Double until a bound breaks (or the largest load meaningful for the workload).
  for (;;) {
    const ServeMetrics m = simulate(load);
    ++r.runs;
    const std::string why = slo_violation(m, slo);
    if (!why.empty()) {
      bad = load;
      r.limit = why;
      break;
    }
    good = load;
    r.load = load;
    r.at = m;
    if (load >= max_load) return r;
    load = std::min(load * 2, max_load);
  }
  if (!r.load) {
    // Even the lowest load breaks it: try lower rates (a concurrency cannot go below 1).
    if (integral) return r;
    for (load = bad / 2; load > 1e-4; load /= 2) {
      const ServeMetrics m = simulate(load);
      ++r.runs;
      if (slo_violation(m, slo).empty()) {
        good = load;
        r.load = load;
        r.at = m;
        break;
      }
      bad = load;
    }
    if (!r.load) return r;
  }
  while (integral ? bad - good > 1 : (bad - good) > 0.01 * good) {
    const double mid = integral ? std::floor((good + bad) / 2) : (good + bad) / 2;
    const ServeMetrics m = simulate(mid);
    ++r.runs;
    const std::string why = slo_violation(m, slo);
    if (why.empty()) {
      good = mid;
      r.load = mid;
      r.at = m;
    } else {
      bad = mid;
      r.limit = why;
    }
  }
  return r;
}

}  // namespace eaglesim
