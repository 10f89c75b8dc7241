#include "serve/bench_result.hpp"

#include <cmath>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "io/atomic_file.hpp"

namespace eaglesim {

namespace {

std::optional<double> number(const nlohmann::json& doc, const char* key) {
  if (!doc.contains(key)) return std::nullopt;
  const nlohmann::json& v = doc[key];
  if (v.is_number()) return v.get<double>();
  if (v.is_string() && (v == "inf" || v == "Infinity")) return std::numeric_limits<double>::infinity();
  return std::nullopt;
}

std::optional<int> count(const nlohmann::json& doc, const char* key) {
  const auto v = number(doc, key);
  if (!v || !std::isfinite(*v) || *v < 0 || *v > 1e7 || std::floor(*v) != *v) return std::nullopt;
  return static_cast<int>(*v);
}

}  // namespace

std::pair<std::string, int> last_nonblank_line(const std::string& text) {
  std::stringstream ss(text);
  std::string line, last;
  int n = 0, last_n = 0;
  while (std::getline(ss, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line, last_n = n;
  }
  return {last, last_n};
}

BenchResult read_bench_result(const std::string& path, const std::vector<std::string>& keys) {
  const std::string text = read_file(path);
  BenchResult r;
  r.file = path;
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    // bench_serving appends one line per run: the last one is the latest.
    const auto [last, last_n] = last_nonblank_line(text);
    try {
      doc = nlohmann::json::parse(last);
      r.line = last_n;
    } catch (const nlohmann::json::exception& e) {
      throw InputError::at(path, last_n ? fmt::format("line {}", last_n) : "",
                           fmt::format("not a benchmark result (JSON, or JSON Lines of runs): {}", e.what()));
    }
  }
  const std::string where = r.line ? fmt::format("line {}", r.line) : "";
  if (!doc.is_object()) throw InputError::at(path, where, "expected a benchmark result object");
  for (const std::string& key : keys) {
    const std::string alias = key == "total_throughput" ? "total_token_throughput" : key;
    for (const std::string& k : {key, alias})
      if (doc.contains(k) && doc[k].is_number()) {
        r.values.emplace_back(key, doc[k].get<double>());
        break;
      }
  }
  if (r.values.empty())
    throw InputError::at(path, where,
                         "no benchmark figures: expected keys such as output_throughput and mean_ttft_ms "
                         "(bench_serving --output-file or vllm bench serve --save-result)");
  if (const auto c = count(doc, "completed")) r.num_prompts = *c + count(doc, "failed").value_or(0);
  else r.num_prompts = count(doc, "num_prompts");
  if (const auto c = count(doc, "max_concurrency"); c && *c > 0) r.max_concurrency = c;
  if (const auto v = number(doc, "request_rate"); v && *v > 0) r.request_rate = v;
  if (const auto v = number(doc, "burstiness"); v && *v > 0 && std::isfinite(*v)) r.burstiness = v;
  if (const auto c = count(doc, "random_input_len"); c && *c > 0) r.random_input_len = *c;
  if (const auto c = count(doc, "random_output_len"); c && *c > 0) r.random_output_len = *c;
  if (const auto v = number(doc, "random_range_ratio"); v && *v >= 0 && *v <= 1) r.random_range_ratio = v;
  r.has_lengths = doc.contains("input_lens") && doc.contains("output_lens");
  return r;
}

}  // namespace eaglesim
