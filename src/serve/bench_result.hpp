#pragma once
// A measured serving-benchmark result, as SGLang's bench_serving (`--output-file`: one JSON object
// per line, a line per run) and `vllm bench serve --save-result` (one JSON object) write it: the
// summary figures under bench_serving's keys (vLLM's total_token_throughput read as
// total_throughput), and the workload the run was driven with, so that `serve --compare` can
// simulate the same one.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace eaglesim {

struct BenchResult {
  std::string file;
  int line = 0;                                        // the JSON Lines line read (the last run); 0: one object
  std::vector<std::pair<std::string, double>> values;  // figure key -> value, in the summary's order
  // The workload, where the file says it.
  std::optional<int> num_prompts;                      // completed (+ failed), or num_prompts
  std::optional<int> max_concurrency;
  std::optional<double> request_rate;                  // inf when the file says "inf" or Infinity
  std::optional<double> burstiness;
  std::optional<std::int64_t> random_input_len, random_output_len;
  std::optional<double> random_range_ratio;
  bool has_lengths = false;                            // input_lens / output_lens per request
};

// The last non-blank line of `text` and its number (1-based; 0 when there is none): the latest
// run of bench_serving's JSON Lines.
std::pair<std::string, int> last_nonblank_line(const std::string& text);

// `keys`: the summary keys to read (report/serve_output.hpp, metrics_by_key). InputError naming the
// file (and line) when it is not a result or holds none of them.
BenchResult read_bench_result(const std::string& path, const std::vector<std::string>& keys);

}  // namespace eaglesim
