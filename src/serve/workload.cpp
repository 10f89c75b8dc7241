#include "serve/workload.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "io/atomic_file.hpp"
#include "serve/bench_result.hpp"
#include "serve/serve_rng.hpp"

namespace eaglesim {

namespace {

// Benchmarks' own limits are the models' contexts; this one only keeps arithmetic sane.
constexpr std::int64_t kMaxLength = 10'000'000;
constexpr int kMaxPrompts = 10'000'000;

std::int64_t length_value(const std::string& file, const std::string& where, const nlohmann::json& v,
                          std::int64_t min) {
  if (!v.is_number_integer())
    throw InputError::at(file, where,
                         fmt::format("expected an integer, got {}",
                                     v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  const auto n = v.get<std::int64_t>();
  if (n < min || n > kMaxLength)
    throw InputError::at(file, where, fmt::format("expected an integer in [{}, {}], got {}", min, kMaxLength, n));
  return n;
}

std::vector<std::pair<std::int64_t, std::int64_t>> from_result_json(const std::string& path, const nlohmann::json& doc) {
  for (const char* key : {"input_lens", "output_lens"})
    if (!doc.contains(key) || !doc[key].is_array())
      throw InputError::at(path, key, "missing: a result file needs input_lens and output_lens arrays");
  const auto& in = doc["input_lens"];
  const auto& out = doc["output_lens"];
  if (in.size() != out.size())
    throw InputError::at(path, "output_lens",
                         fmt::format("{} entries, input_lens has {}: expected one per request", out.size(), in.size()));
  std::vector<std::pair<std::int64_t, std::int64_t>> lens;
  for (std::size_t i = 0; i < in.size(); ++i)
    lens.emplace_back(length_value(path, fmt::format("input_lens[{}]", i), in[i], 1),
                      length_value(path, fmt::format("output_lens[{}]", i), out[i], 1));
  return lens;
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream ss(line);
  for (std::string c; std::getline(ss, c, ',');) {
    c.erase(0, c.find_first_not_of(" \t\r"));
    c.erase(c.find_last_not_of(" \t\r") + 1);
    cells.push_back(c);
  }
  return cells;
}

std::vector<std::pair<std::int64_t, std::int64_t>> from_csv(const std::string& path, const std::string& text) {
  std::stringstream ss(text);
  std::string line;
  std::getline(ss, line);
  const std::vector<std::string> header = split_csv_line(line);
  const auto at = [&](const char* name) {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end())
      throw InputError::at(path, "line 1", fmt::format("a CSV of lengths needs a header naming input_len and output_len, got '{}'", line));
    return static_cast<std::size_t>(it - header.begin());
  };
  const std::size_t in = at("input_len"), out = at("output_len");
  std::vector<std::pair<std::int64_t, std::int64_t>> lens;
  for (int n = 2; std::getline(ss, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::vector<std::string> cells = split_csv_line(line);
    const auto cell = [&](std::size_t c, const char* name, std::int64_t min) {
      if (c >= cells.size())
        throw InputError::at(path, fmt::format("line {}", n), fmt::format("{} cells, no {}", cells.size(), name));
      nlohmann::json v;
      try {
        std::size_t used = 0;
        v = std::stoll(cells[c], &used);
        if (used != cells[c].size()) v = cells[c];
      } catch (const std::exception&) {
        v = cells[c];
      }
      return length_value(path, fmt::format("line {}: {}", n, name), v, min);
    };
    lens.emplace_back(cell(in, "input_len", 1), cell(out, "output_len", 1));
  }
  return lens;
}

std::vector<std::pair<std::int64_t, std::int64_t>> from_jsonl(const std::string& path, const std::string& text) {
  std::stringstream ss(text);
  std::string line;
  std::vector<std::pair<std::int64_t, std::int64_t>> lens;
  for (int n = 1; std::getline(ss, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json v;
    try {
      v = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      throw InputError::at(path, fmt::format("line {}", n), "not a JSON object: expected {\"input_len\": N, \"output_len\": M}");
    }
    if (!v.is_object() || !v.contains("input_len") || !v.contains("output_len"))
      throw InputError::at(path, fmt::format("line {}", n), "expected {\"input_len\": N, \"output_len\": M}");
    lens.emplace_back(length_value(path, fmt::format("line {}: input_len", n), v["input_len"], 1),
                      length_value(path, fmt::format("line {}: output_len", n), v["output_len"], 1));
  }
  return lens;
}

}  // namespace

std::vector<std::pair<std::int64_t, std::int64_t>> read_lengths_file(const std::string& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError::at(path, "", fmt::format("cannot read: {}", e.what()));
  }
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) throw InputError::at(path, "", "empty: expected request lengths");
  std::vector<std::pair<std::int64_t, std::int64_t>> lens;
  if (text[first] == '{') {
    // One JSON document (a benchmark's result), or JSON Lines.
    nlohmann::json doc;
    bool whole = true;
    try {
      doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception&) {
      whole = false;
    }
    if (!whole) {
      // bench_serving's --output-file: JSON Lines of runs; the last run's requests.
      try {
        const nlohmann::json run = nlohmann::json::parse(last_nonblank_line(text).first);
        if (run.is_object() && run.contains("input_lens")) doc = run, whole = true;
      } catch (const nlohmann::json::exception&) {
      }
    }
    lens = whole && doc.is_object() && doc.contains("input_lens") ? from_result_json(path, doc) : from_jsonl(path, text);
  } else if (text[first] == '[') {
    throw InputError::at(path, "", "a JSON array: expected JSON Lines, a CSV with input_len,output_len or a benchmark result");
  } else {
    lens = from_csv(path, text);
  }
  if (lens.empty()) throw InputError::at(path, "", "no requests: expected at least one input_len/output_len pair");
  return lens;
}

std::vector<ServeRequest> make_workload(const WorkloadSpec& s) {
  if (s.num_prompts < 1 || s.num_prompts > kMaxPrompts)
    throw InputError(fmt::format("--num-prompts: expected 1 to {}, got {}", kMaxPrompts, s.num_prompts));
  if (!(s.request_rate > 0))
    throw InputError(fmt::format("--request-rate: expected a rate > 0 requests/s or inf, got {}", s.request_rate));
  if (!(s.burstiness > 0) || !std::isfinite(s.burstiness))
    throw InputError(fmt::format("--burstiness: expected a finite value > 0 (1: Poisson), got {}", s.burstiness));
  if (s.max_concurrency < 0)
    throw InputError(fmt::format("--max-concurrency: expected a positive count (0: no cap), got {}", s.max_concurrency));
  ServeRng rng(s.seed);
  std::vector<ServeRequest> out;
  if (!s.lengths_file.empty()) {
    const auto lens = read_lengths_file(s.lengths_file);
    // As the benchmarks take a dataset: the first num_prompts entries, cycling if it holds fewer.
    for (int i = 0; i < s.num_prompts; ++i) {
      const auto& [in, o] = lens[static_cast<std::size_t>(i) % lens.size()];
      out.push_back({in, o, 0});
    }
  } else {
    for (const auto& [flag, len] : {std::pair{"--random-input-len", s.input_len}, std::pair{"--random-output-len", s.output_len}})
      if (len < 1 || len > kMaxLength)
        throw InputError(fmt::format("{}: expected 1 to {} tokens, got {}", flag, kMaxLength, len));
    const double r = s.range_ratio;
    if (s.range_rule == RangeRule::sglang ? !(r >= 0 && r <= 1) : !(r >= 0 && r < 1))
      throw InputError(fmt::format("--random-range-ratio: expected {}, got {}",
                                   s.range_rule == RangeRule::sglang ? "a value in [0, 1] (lengths uniform in [L*r, L])"
                                                                     : "a value in [0, 1) (lengths uniform in [L(1-r), L(1+r)])",
                                   r));
    const auto draw = [&](std::int64_t len) {
      if (s.range_rule == RangeRule::sglang)
        return rng.uniform_int(std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(len) * r)), len);
      const auto lo = std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(len) * (1 - r)));
      const auto hi = std::max<std::int64_t>(lo, static_cast<std::int64_t>(static_cast<double>(len) * (1 + r)));
      return rng.uniform_int(lo, hi);
    };
    for (int i = 0; i < s.num_prompts; ++i) {
      const std::int64_t in = draw(s.input_len);
      out.push_back({in, draw(s.output_len), 0});
    }
  }
  // Gaps between sends: gamma with shape = burstiness and mean 1 / rate (shape 1: exponential).
  double t = 0;
  for (ServeRequest& r : out) {
    r.arrival_s = t;
    if (std::isfinite(s.request_rate)) t += rng.gamma(s.burstiness, 1.0 / (s.request_rate * s.burstiness));
  }
  return out;
}

std::int64_t longest_request(const std::vector<ServeRequest>& requests) {
  std::int64_t m = 0;
  for (const ServeRequest& r : requests) m = std::max(m, r.input_len + r.output_len);
  return m;
}

}  // namespace eaglesim
